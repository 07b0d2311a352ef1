package devstack

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/awslabs/goformation/v7/intrinsics"
)

// noValue stands for AWS::NoValue while the template is resolved; dropNoValue
// then removes the property (or list item) holding it, as CloudFormation
// does. A nil would be ambiguous: a YAML key without a value is null too.
const noValue = "\x00AWS::NoValue"

// conditions are the template's Conditions, evaluated as CloudFormation
// evaluates them at deploy time: Fn::Equals compares the two values as
// strings (a Ref to a Number parameter is a string there), Fn::Not, Fn::And,
// Fn::Or and Condition combine them.
type conditions struct {
	defs  map[string]any
	value func(name string) any // a Ref's value: parameters, pseudo parameters
	done  map[string]bool
	busy  map[string]bool
}

// evaluateConditions evaluates every condition of the template (plain JSON,
// intrinsics unresolved) with ref giving a parameter's or pseudo
// parameter's value.
func evaluateConditions(plain []byte, ref func(name string) any) (map[string]bool, error) {
	var head struct {
		Conditions map[string]any `json:"Conditions"`
	}
	if err := json.Unmarshal(plain, &head); err != nil {
		return nil, fmt.Errorf("parse template conditions: %w", err)
	}
	c := &conditions{defs: head.Conditions, value: ref, done: map[string]bool{}, busy: map[string]bool{}}
	for name := range head.Conditions {
		if _, err := c.condition(name); err != nil {
			return nil, err
		}
	}
	return c.done, nil
}

func (c *conditions) condition(name string) (bool, error) {
	if v, ok := c.done[name]; ok {
		return v, nil
	}
	def, ok := c.defs[name]
	if !ok {
		return false, fmt.Errorf("condition %s is not defined in Conditions", name)
	}
	if c.busy[name] {
		return false, fmt.Errorf("condition %s refers to itself", name)
	}
	c.busy[name] = true
	v, err := c.eval(def)
	if err != nil {
		return false, fmt.Errorf("condition %s: %w", name, err)
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("condition %s is %v, not a condition function", name, v)
	}
	c.done[name] = b
	return b, nil
}

func (c *conditions) eval(expr any) (any, error) {
	m, ok := expr.(map[string]any)
	if !ok || len(m) != 1 {
		return expr, nil // a literal
	}
	for fn, arg := range m {
		args, _ := arg.([]any)
		switch fn {
		case "Condition":
			name, _ := arg.(string)
			return c.condition(name)
		case "Ref":
			name, _ := arg.(string)
			return c.value(name), nil
		case "Fn::Equals":
			if len(args) != 2 {
				return nil, errors.New("Fn::Equals takes two values")
			}
			a, err := c.eval(args[0])
			if err != nil {
				return nil, err
			}
			b, err := c.eval(args[1])
			if err != nil {
				return nil, err
			}
			return cfnString(a) == cfnString(b), nil
		case "Fn::Not", "Fn::And", "Fn::Or":
			var bs []bool
			for _, a := range args {
				if name, ok := a.(string); ok {
					// goformation reads the YAML tag !Condition X as "X".
					a = map[string]any{"Condition": name}
				}
				v, err := c.eval(a)
				if err != nil {
					return nil, err
				}
				b, ok := v.(bool)
				if !ok {
					return nil, fmt.Errorf("%s of %v, not a condition", fn, v)
				}
				bs = append(bs, b)
			}
			switch {
			case fn == "Fn::Not" && len(bs) == 1:
				return !bs[0], nil
			case fn == "Fn::And" && len(bs) >= 2:
				return !contains(bs, false), nil
			case fn == "Fn::Or" && len(bs) >= 2:
				return contains(bs, true), nil
			}
			return nil, fmt.Errorf("%s with %d conditions", fn, len(bs))
		}
		return nil, fmt.Errorf("%s in a condition is not evaluated by the local resolution (internal/devstack/conditions.go)", fn)
	}
	return nil, nil
}

func contains(bs []bool, want bool) bool {
	for _, b := range bs {
		if b == want {
			return true
		}
	}
	return false
}

// cfnString is a value as Fn::Equals compares it: numbers and booleans by
// their text, lists joined by commas.
func cfnString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case []any:
		parts := make([]string, len(x))
		for i, p := range x {
			parts[i] = cfnString(p)
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(v)
}

// fnIf resolves Fn::If with the evaluated conditions; an unknown condition
// is reported through *failed (a handler cannot return an error).
func fnIf(conds map[string]bool, failed *error) intrinsics.IntrinsicHandler {
	return func(_ string, input any, _ any) any {
		args, _ := input.([]any)
		if len(args) != 3 {
			*failed = fmt.Errorf("Fn::If takes a condition and two values, got %v", input)
			return nil
		}
		name, _ := args[0].(string)
		v, ok := conds[name]
		if !ok {
			*failed = fmt.Errorf("Fn::If names condition %q, which Conditions does not define", name)
			return nil
		}
		if v {
			return args[1]
		}
		return args[2]
	}
}

// dropNoValue removes every property and list item whose value is
// AWS::NoValue, and every resource whose Condition is false, as
// CloudFormation does.
func dropNoValue(doc map[string]any, conds map[string]bool) {
	if resources, ok := doc["Resources"].(map[string]any); ok {
		for id, r := range resources {
			res, _ := r.(map[string]any)
			if name, ok := res["Condition"].(string); ok && !conds[name] {
				delete(resources, id)
			}
		}
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if e == noValue {
					delete(x, k)
					continue
				}
				x[k] = walk(e)
			}
		case []any:
			out := x[:0]
			for _, e := range x {
				if e != noValue {
					out = append(out, walk(e))
				}
			}
			return out
		}
		return v
	}
	walk(doc)
}
