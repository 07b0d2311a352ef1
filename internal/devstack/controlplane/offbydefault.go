package controlplane

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/heraldhq/herald/internal/devstack/cfnyaml"
)

// Release notes of settings the released template had on and the next one
// makes a parameter, off by default: an update with the defaults turns them
// off on the deployed stack.
const (
	RuleProtectionNowParameter  = "dynamodb-deletion-protection-off-by-default"
	RuleReservationNowParameter = "lambda-reserved-concurrency-off-by-default"
)

// nowOptional names, per resource type, the property a parameter now turns
// on, and what the note tells the operator.
var nowOptional = []struct {
	typ, prop, rule, advice string
}{
	{"AWS::DynamoDB::Table", "DeletionProtectionEnabled", RuleProtectionNowParameter,
		"deletion protection is the TableDeletionProtection parameter (false by default, so that a failed first create rolls back): an update with the defaults turns it off on the deployed table; pass TableDeletionProtection=true (docs/deploy.md)"},
	{"AWS::Serverless::Function", "ReservedConcurrentExecutions", RuleReservationNowParameter,
		"reserved concurrency is off by default (ChannelReservedConcurrency, RelayHighReservedConcurrency -1, so that a new account's quota takes the stack): an update with the defaults removes the deployed reservation; pass the values `herald capacity` prints to keep it (docs/deploy.md)"},
}

func rawProps(raw []byte) (map[string]struct {
	Type       string
	Properties map[string]any
}, error) {
	var d struct {
		Resources map[string]struct {
			Type       string
			Properties map[string]any
		}
	}
	err := decodePlain(raw, &d)
	return d.Resources, err
}

// decodePlain decodes template YAML into v with its intrinsic functions as
// written (short tags in their long form).
func decodePlain(raw []byte, v any) error {
	plain, err := cfnyaml.ToJSON(raw)
	if err == nil {
		err = json.Unmarshal(plain, v)
	}
	if err != nil {
		return fmt.Errorf("parse template: %w", err)
	}
	return nil
}

// offByDefaultNotes: a property the released template set unconditionally
// (true, or any value) that the next one sets through Fn::If.
func offByDefaultNotes(released, next []byte) ([]Note, error) {
	before, err := rawProps(released)
	if err != nil {
		return nil, fmt.Errorf("released template: %w", err)
	}
	after, err := rawProps(next)
	if err != nil {
		return nil, err
	}
	var notes []Note
	for _, id := range slices.Sorted(maps.Keys(after)) {
		old, ok := before[id]
		if !ok {
			continue
		}
		for _, o := range nowOptional {
			if after[id].Type != o.typ || old.Type != o.typ {
				continue
			}
			was, had := old.Properties[o.prop]
			if !had || was == false || conditional(was) || !conditional(after[id].Properties[o.prop]) {
				continue
			}
			notes = append(notes, Note{Rule: o.rule, Resource: id, Message: o.advice})
		}
	}
	return notes, nil
}

func conditional(v any) bool {
	m, _ := v.(map[string]any)
	_, ok := m["Fn::If"]
	return ok
}
