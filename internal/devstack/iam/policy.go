// Package iam evaluates AWS IAM identity-based policies the way AWS does, so
// the local stack can refuse what a function's role would not allow in AWS.
// The policies come from the real SAM transform of template.yaml
// (scripts/iam/transform.py); this package reads them, maps SDK operations to
// IAM actions and resources (requests.go), and enforces them as an SDK
// middleware on each function's aws.Config (enforcer.go).
package iam

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Document is an IAM policy document.
type Document struct {
	Version   string     `json:"Version,omitempty"`
	Statement Statements `json:"Statement"`
}

// Statements accepts a single statement object or a list of them.
type Statements []Statement

// UnmarshalJSON implements json.Unmarshaler.
func (s *Statements) UnmarshalJSON(b []byte) error {
	var one Statement
	if len(b) > 0 && b[0] == '{' {
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		*s = Statements{one}
		return nil
	}
	var many []Statement
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*s = many
	return nil
}

// Effect is a statement's Allow or Deny.
type Effect string

// Statement effects.
const (
	Allow Effect = "Allow"
	Deny  Effect = "Deny"
)

// Statement is one policy statement. Conditions map an operator
// ("StringLike", "ForAllValues:StringEquals", "ArnLikeIfExists", …) to
// condition keys and their values.
type Statement struct {
	Sid         string                       `json:"Sid,omitempty"`
	Effect      Effect                       `json:"Effect"`
	Action      Values                       `json:"Action,omitempty"`
	NotAction   Values                       `json:"NotAction,omitempty"`
	Resource    Values                       `json:"Resource,omitempty"`
	NotResource Values                       `json:"NotResource,omitempty"`
	Condition   map[string]map[string]Values `json:"Condition,omitempty"`
	Principal   json.RawMessage              `json:"Principal,omitempty"`
}

// Values is a policy element that may be one string or a list; booleans and
// numbers (as in condition values) are kept as their text.
type Values []string

// UnmarshalJSON implements json.Unmarshaler.
func (v *Values) UnmarshalJSON(b []byte) error {
	var raw any
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	items, ok := raw.([]any)
	if !ok {
		items = []any{raw}
	}
	out := make(Values, 0, len(items))
	for _, it := range items {
		switch x := it.(type) {
		case string:
			out = append(out, x)
		case bool:
			out = append(out, strconv.FormatBool(x))
		case float64:
			out = append(out, strconv.FormatFloat(x, 'f', -1, 64))
		default:
			return fmt.Errorf("policy value %v: want a string, number or boolean", it)
		}
	}
	*v = out
	return nil
}

// validate rejects statements AWS would reject (so a typo cannot silently
// turn into "applies to nothing").
func (s Statement) validate() error {
	if s.Effect != Allow && s.Effect != Deny {
		return fmt.Errorf("statement %q: Effect %q: want Allow or Deny", s.Sid, s.Effect)
	}
	if (len(s.Action) == 0) == (len(s.NotAction) == 0) {
		return fmt.Errorf("statement %q: exactly one of Action and NotAction", s.Sid)
	}
	if (len(s.Resource) == 0) == (len(s.NotResource) == 0) {
		return fmt.Errorf("statement %q: exactly one of Resource and NotResource", s.Sid)
	}
	if len(s.Principal) > 0 {
		return fmt.Errorf("statement %q: an identity-based policy has no Principal", s.Sid)
	}
	for _, r := range append(slices.Clone(s.Resource), s.NotResource...) {
		if r != "*" && len(strings.SplitN(r, ":", 6)) != 6 {
			return fmt.Errorf("statement %q: resource %q: want an ARN (arn:partition:service:region:account:resource) or *", s.Sid, r)
		}
	}
	for op := range s.Condition {
		if _, err := parseOperator(op); err != nil {
			return fmt.Errorf("statement %q: %w", s.Sid, err)
		}
	}
	return nil
}
