package iam

import (
	"fmt"
	"strings"
)

// Request is one authorization question: may the role perform Action on
// Resource, given the request's condition keys? Resource is "*" for actions
// that name no resource (an SNS publish to a phone number).
type Request struct {
	Action   string
	Resource string
	// Context holds the request's condition keys (e.g. "ses:FromAddress");
	// a key may have several values (e.g. "ses:Recipients").
	Context map[string][]string
}

// Decision is the outcome of evaluating a request.
type Decision int

// Decisions, as AWS names them.
const (
	ImplicitDeny Decision = iota // no statement allows it
	Allowed
	ExplicitDeny // a Deny statement applies: wins over any Allow
)

func (d Decision) String() string {
	switch d {
	case Allowed:
		return "allow"
	case ExplicitDeny:
		return "explicit deny"
	default:
		return "implicit deny"
	}
}

// PolicyStatement is a statement with the name of the policy holding it.
type PolicyStatement struct {
	Policy string
	Statement
}

// Evaluate applies AWS's evaluation logic for identity-based policies of one
// account: an explicit Deny wins, else any Allow allows, else the request is
// denied by default. It returns the deciding statement (nil for an implicit
// deny).
func Evaluate(statements []PolicyStatement, req Request) (Decision, *PolicyStatement) {
	var allow *PolicyStatement
	for i := range statements {
		st := &statements[i]
		if !st.applies(req) {
			continue
		}
		if st.Effect == Deny {
			return ExplicitDeny, st
		}
		if allow == nil {
			allow = st
		}
	}
	if allow != nil {
		return Allowed, allow
	}
	return ImplicitDeny, nil
}

// applies reports whether the statement matches the request's action,
// resource and conditions.
func (s Statement) applies(req Request) bool {
	if len(s.Action) > 0 && !anyMatch(s.Action, req.Action, matchAction) {
		return false
	}
	if len(s.NotAction) > 0 && anyMatch(s.NotAction, req.Action, matchAction) {
		return false
	}
	if len(s.Resource) > 0 && !anyMatch(s.Resource, req.Resource, MatchResource) {
		return false
	}
	if len(s.NotResource) > 0 && anyMatch(s.NotResource, req.Resource, MatchResource) {
		return false
	}
	for op, keys := range s.Condition {
		for key, values := range keys {
			got, present := lookup(req.Context, key)
			if !conditionHolds(op, values, got, present) {
				return false
			}
		}
	}
	return true
}

// lookup finds a condition key's values; key names are case-insensitive.
func lookup(ctx map[string][]string, key string) ([]string, bool) {
	if v, ok := ctx[key]; ok {
		return v, true
	}
	for k, v := range ctx {
		if strings.EqualFold(k, key) {
			return v, true
		}
	}
	return nil, false
}

func anyMatch(patterns []string, value string, match func(pattern, value string) bool) bool {
	for _, p := range patterns {
		if match(p, value) {
			return true
		}
	}
	return false
}

// matchAction matches "service:Operation" patterns with * and ?, ignoring
// case as IAM does for actions.
func matchAction(pattern, action string) bool {
	return glob(strings.ToLower(pattern), strings.ToLower(action))
}

// MatchResource matches a policy's resource pattern against a request's
// resource. "*" matches everything (also the "*" of actions without a
// resource). Otherwise both are ARNs compared per component: wildcards in
// partition, service, region and account stay inside their component,
// wildcards in the resource part may span "/" and ":" (as
// "arn:aws:dynamodb:*:*:table/t/index/*" does). Case matters.
func MatchResource(pattern, resource string) bool {
	if pattern == "*" {
		return true
	}
	pp := strings.SplitN(pattern, ":", 6)
	rp := strings.SplitN(resource, ":", 6)
	if len(pp) != 6 || len(rp) != 6 {
		return false // validate rejects such patterns; "*" resources match only "*"
	}
	for i := range pp {
		if !glob(pp[i], rp[i]) {
			return false
		}
	}
	return true
}

// glob matches s against a pattern where * is any run of characters and ?
// is one character.
func glob(pattern, s string) bool {
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == s[i]):
			p++
			i++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// operator is a parsed condition operator such as
// "ForAnyValue:StringLikeIfExists".
type operator struct {
	set      string // "", "ForAnyValue", "ForAllValues"
	name     string // StringEquals, ArnLike, Bool, Null, …
	ifExists bool
}

// negated operators hold when no value matches.
var conditionOperators = map[string]struct {
	negated bool
	match   func(policy, value string) bool
}{
	"StringEquals":              {false, func(p, v string) bool { return p == v }},
	"StringNotEquals":           {true, func(p, v string) bool { return p == v }},
	"StringEqualsIgnoreCase":    {false, strings.EqualFold},
	"StringNotEqualsIgnoreCase": {true, strings.EqualFold},
	"StringLike":                {false, glob},
	"StringNotLike":             {true, glob},
	"ArnEquals":                 {false, func(p, v string) bool { return p == v }},
	"ArnNotEquals":              {true, func(p, v string) bool { return p == v }},
	"ArnLike":                   {false, MatchResource},
	"ArnNotLike":                {true, MatchResource},
	"Bool":                      {false, strings.EqualFold},
}

func parseOperator(op string) (operator, error) {
	var o operator
	if set, rest, ok := strings.Cut(op, ":"); ok {
		if set != "ForAnyValue" && set != "ForAllValues" {
			return o, fmt.Errorf("condition operator %q: unknown set qualifier %q", op, set)
		}
		o.set, op = set, rest
	}
	if name, ok := strings.CutSuffix(op, "IfExists"); ok && name != "" {
		o.ifExists, op = true, name
	}
	if _, ok := conditionOperators[op]; !ok && op != "Null" {
		return o, fmt.Errorf("condition operator %q is not supported by the local IAM evaluator", op)
	}
	o.name = op
	return o, nil
}

// conditionHolds evaluates one operator and key against the request's values.
// As AWS documents it: a key absent from the request makes a condition false,
// except for negated operators ("…Not…"), "…IfExists", ForAllValues and Null.
func conditionHolds(op string, policy, values []string, present bool) bool {
	o, err := parseOperator(op)
	if err != nil {
		return false // validate rejects unknown operators at load
	}
	if o.name == "Null" {
		want := len(policy) > 0 && strings.EqualFold(policy[0], "true")
		return want == !present
	}
	spec := conditionOperators[o.name]
	if !present || len(values) == 0 {
		switch {
		case o.ifExists, o.set == "ForAllValues":
			return true
		case o.set == "ForAnyValue":
			return false
		default:
			return spec.negated
		}
	}
	matchesAny := func(v string) bool {
		for _, p := range policy {
			if spec.match(p, v) {
				return true
			}
		}
		return false
	}
	switch o.set {
	case "ForAllValues":
		for _, v := range values {
			if matchesAny(v) == spec.negated {
				return false
			}
		}
		return true
	case "ForAnyValue":
		for _, v := range values {
			if matchesAny(v) != spec.negated {
				return true
			}
		}
		return false
	}
	// Single-valued use: the request's value must match one of the policy's
	// values (negated: none of them).
	for _, v := range values {
		if matchesAny(v) {
			return !spec.negated
		}
	}
	return spec.negated
}
