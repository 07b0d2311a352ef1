package devstack

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/heraldhq/herald/internal/devstack/iam"
)

// eventsPrincipal is the service principal EventBridge sends to an SQS
// target as.
const eventsPrincipal = "events.amazonaws.com"

// ruleTarget is one SQS target of a rule: delivered only when the queue's
// policy lets EventBridge send from the rule (allowed); otherwise every
// matching event is a failed invocation, as on AWS.
type ruleTarget struct {
	id, url string
	allowed bool
	why     string // why not allowed
}

// ruleARN is the ARN a rule of the template has locally:
// arn:aws:events:<region>:<account>:rule/[<bus>/]<name>.
func ruleARN(bus, name string) string {
	if i := strings.LastIndex(bus, ":event-bus/"); i >= 0 {
		bus = bus[i+len(":event-bus/"):]
	}
	path := name
	if bus != "" && bus != "default" {
		path = bus + "/" + name
	}
	return "arn:aws:events:" + LocalRegion + ":" + LocalAccountID + ":rule/" + path
}

// queuePolicyAllows evaluates the template's AWS::SQS::QueuePolicy
// resources on q as SQS evaluates a queue's resource-based policy for
// EventBridge delivering a rule's event: the request is sqs:SendMessage on
// the queue's ARN by the service principal events.amazonaws.com, with
// aws:SourceArn the rule's ARN and aws:SourceAccount the account. An
// explicit Deny wins, else an Allow allows, else (no policy, no statement
// for the principal) it is denied. why says what refused it.
func queuePolicyAllows(t *Template, r *Resources, q QueueInfo, rule string) (bool, string, error) {
	var statements []iam.PolicyStatement
	for _, id := range slices.Sorted(func(yield func(string) bool) {
		for id := range t.GetAllSQSQueuePolicyResources() {
			if !yield(id) {
				return
			}
		}
	}) {
		p := t.GetAllSQSQueuePolicyResources()[id]
		applies := false
		for _, ref := range p.Queues {
			url, err := r.Resolve(ref)
			if err != nil {
				return false, "", fmt.Errorf("queue policy %s: %w", id, err)
			}
			applies = applies || url == q.URL
		}
		if !applies {
			continue
		}
		raw, err := json.Marshal(p.PolicyDocument)
		if err != nil {
			return false, "", fmt.Errorf("queue policy %s: %w", id, err)
		}
		resolved, err := r.Resolve(string(raw))
		if err != nil {
			return false, "", fmt.Errorf("queue policy %s: %w", id, err)
		}
		var doc iam.Document
		if err := json.Unmarshal([]byte(resolved), &doc); err != nil {
			return false, "", fmt.Errorf("queue policy %s: %w", id, err)
		}
		for _, st := range doc.Statement {
			if principalIncludes(st.Principal, eventsPrincipal) {
				statements = append(statements, iam.PolicyStatement{Policy: id, Statement: st})
			}
		}
	}
	if len(statements) == 0 {
		return false, "no AWS::SQS::QueuePolicy of the queue has a statement for " + eventsPrincipal, nil
	}
	d, st := iam.Evaluate(statements, iam.Request{Action: "sqs:SendMessage", Resource: q.ARN,
		Context: map[string][]string{"aws:SourceArn": {rule}, "aws:SourceAccount": {LocalAccountID}}})
	switch d {
	case iam.Allowed:
		return true, "", nil
	case iam.ExplicitDeny:
		return false, "denied by " + st.Policy + " for sqs:SendMessage from " + rule, nil
	}
	return false, "no statement of the queue's policy allows " + eventsPrincipal + " sqs:SendMessage from " + rule, nil
}

// principalIncludes reports whether a statement's Principal names the
// service (or everyone: "*", {"AWS": "*"}).
func principalIncludes(raw json.RawMessage, service string) bool {
	if len(raw) == 0 {
		return false
	}
	var star string
	if json.Unmarshal(raw, &star) == nil {
		return star == "*"
	}
	var m map[string]iam.Values
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	return slices.Contains(m["Service"], service) || slices.Contains(m["AWS"], "*")
}
