// Package eventpattern matches JSON events against EventBridge event
// patterns (the same language Lambda's event filtering uses), for the local
// runner's event bus and event source mapping filters.
//
// Supported, as AWS documents them: nested objects; arrays of values at the
// leaves (any may match; an event array matches when any element does);
// exact strings, numbers (compared as numbers), booleans and null; "prefix"
// and "suffix" (with an optional "equals-ignore-case" inside);
// "equals-ignore-case"; "wildcard" ("*" any run of characters, "\*" a
// literal star); "anything-but" over a value, a list of values, or a
// prefix, suffix, equals-ignore-case or wildcard; "numeric" with up to two
// comparisons (=, <, <=, >, >=); "exists" (true: the leaf is present,
// false: it is absent); "cidr"; and "$or" over sub-patterns. A pattern that
// uses anything else is refused by Compile, as PutRule refuses it.
//
// (No Go library of this language is served by the module proxy this
// project builds with; see docs/decisions.md.)
package eventpattern

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"strings"
)

// Pattern is a compiled event pattern.
type Pattern struct{ root map[string]any }

// Compile parses and validates a pattern.
func Compile(pattern string) (*Pattern, error) {
	dec := json.NewDecoder(strings.NewReader(pattern))
	dec.UseNumber()
	var root map[string]any
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("event pattern: not a JSON object: %w", err)
	}
	if err := validate(root, ""); err != nil {
		return nil, err
	}
	return &Pattern{root: root}, nil
}

// MustCompile is Compile for patterns known to be valid.
func MustCompile(pattern string) *Pattern {
	p, err := Compile(pattern)
	if err != nil {
		panic(err)
	}
	return p
}

func validate(obj map[string]any, path string) error {
	if len(obj) == 0 {
		return fmt.Errorf("event pattern: empty object at %q", path)
	}
	for k, v := range obj {
		p := path + "/" + k
		if k == "$or" {
			alts, ok := v.([]any)
			if !ok || len(alts) < 2 {
				return fmt.Errorf("event pattern: $or at %q needs an array of at least two patterns", path)
			}
			for _, a := range alts {
				m, ok := a.(map[string]any)
				if !ok {
					return fmt.Errorf("event pattern: $or at %q: each alternative is an object", path)
				}
				if err := validate(m, path); err != nil {
					return err
				}
			}
			continue
		}
		switch w := v.(type) {
		case map[string]any:
			if err := validate(w, p); err != nil {
				return err
			}
		case []any:
			if len(w) == 0 {
				return fmt.Errorf("event pattern: empty array at %q", p)
			}
			for _, rule := range w {
				if op, ok := rule.(map[string]any); ok {
					if err := validateOp(op, p); err != nil {
						return err
					}
				} else if _, ok := rule.([]any); ok {
					return fmt.Errorf("event pattern: nested array at %q", p)
				}
			}
		default:
			return fmt.Errorf("event pattern: value at %q must be an object or an array", p)
		}
	}
	return nil
}

func validateOp(op map[string]any, p string) error {
	if len(op) != 1 {
		return fmt.Errorf("event pattern: a matcher at %q has exactly one key", p)
	}
	for name, arg := range op {
		switch name {
		case "prefix", "suffix":
			if _, ok := arg.(string); ok {
				return nil
			}
			if m, ok := arg.(map[string]any); ok && len(m) == 1 {
				if _, ok := m["equals-ignore-case"].(string); ok {
					return nil
				}
			}
		case "equals-ignore-case", "wildcard":
			if _, ok := arg.(string); ok {
				return nil
			}
		case "exists":
			if _, ok := arg.(bool); ok {
				return nil
			}
		case "cidr":
			if s, ok := arg.(string); ok {
				if _, err := netip.ParsePrefix(s); err == nil {
					return nil
				}
			}
		case "numeric":
			if _, err := numericRange(arg); err == nil {
				return nil
			}
		case "anything-but":
			switch a := arg.(type) {
			case string, json.Number:
				return nil
			case []any:
				if len(a) > 0 {
					return nil
				}
			case map[string]any:
				if len(a) == 1 {
					for k, v := range a {
						switch k {
						case "prefix", "suffix":
							if _, ok := v.(string); ok {
								return nil
							}
						case "equals-ignore-case", "wildcard":
							if _, ok := v.(string); ok {
								return nil
							}
							if l, ok := v.([]any); ok && len(l) > 0 {
								return nil
							}
						}
					}
				}
			}
		}
		return fmt.Errorf("event pattern: unsupported or malformed matcher %q at %q", name, p)
	}
	return nil
}

// Match reports whether the JSON event matches.
func (p *Pattern) Match(event []byte) (bool, error) {
	dec := json.NewDecoder(bytes.NewReader(event))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return false, fmt.Errorf("event: not a JSON object: %w", err)
	}
	return matchObject(p.root, doc), nil
}

// MatchValue matches an event already decoded (numbers as float64 or
// json.Number).
func (p *Pattern) MatchValue(doc map[string]any) bool { return matchObject(p.root, doc) }

func matchObject(pattern, doc map[string]any) bool {
	for k, want := range pattern {
		if k == "$or" {
			alts := want.([]any)
			ok := false
			for _, a := range alts {
				if matchObject(a.(map[string]any), doc) {
					ok = true
					break
				}
			}
			if !ok {
				return false
			}
			continue
		}
		got, present := doc[k]
		switch w := want.(type) {
		case map[string]any:
			if !present {
				// Only exists:false rules below can match a missing object.
				if !matchObject(w, map[string]any{}) {
					return false
				}
				continue
			}
			switch g := got.(type) {
			case map[string]any:
				if !matchObject(w, g) {
					return false
				}
			case []any:
				ok := false
				for _, e := range g {
					if m, isMap := e.(map[string]any); isMap && matchObject(w, m) {
						ok = true
						break
					}
				}
				if !ok {
					return false
				}
			default:
				return false
			}
		case []any:
			if !matchLeaf(w, got, present) {
				return false
			}
		}
	}
	return true
}

// matchLeaf: any rule against the value, or any of its elements when it is
// an array.
func matchLeaf(rules []any, got any, present bool) bool {
	if present {
		if _, isObj := got.(map[string]any); isObj {
			// exists matches leaves only; other rules never match an object.
			return false
		}
	}
	values := []any{got}
	if arr, ok := got.([]any); ok && present {
		values = arr
		if len(arr) == 0 {
			present = false
		}
	}
	for _, rule := range rules {
		if op, ok := rule.(map[string]any); ok {
			if e, ok := op["exists"]; ok {
				if e.(bool) == present {
					return true
				}
				continue
			}
		}
		if !present {
			continue
		}
		for _, v := range values {
			if matchRule(rule, v) {
				return true
			}
		}
	}
	return false
}

func matchRule(rule, v any) bool {
	op, isOp := rule.(map[string]any)
	if !isOp {
		return equal(rule, v)
	}
	for name, arg := range op {
		s, isString := v.(string)
		switch name {
		case "prefix":
			return isString && affix(arg, s, strings.HasPrefix)
		case "suffix":
			return isString && affix(arg, s, strings.HasSuffix)
		case "equals-ignore-case":
			return isString && strings.EqualFold(arg.(string), s)
		case "wildcard":
			return isString && wildcard(arg.(string), s)
		case "cidr":
			if !isString {
				return false
			}
			pre, _ := netip.ParsePrefix(arg.(string))
			addr, err := netip.ParseAddr(s)
			return err == nil && pre.Contains(addr)
		case "numeric":
			f, ok := number(v)
			if !ok {
				return false
			}
			r, _ := numericRange(arg)
			return r(f)
		case "anything-but":
			return anythingBut(arg, v)
		}
	}
	return false
}

func affix(arg any, s string, has func(string, string) bool) bool {
	if want, ok := arg.(string); ok {
		return has(s, want)
	}
	want := arg.(map[string]any)["equals-ignore-case"].(string)
	return has(strings.ToLower(s), strings.ToLower(want))
}

func anythingBut(arg, v any) bool {
	switch a := arg.(type) {
	case []any:
		for _, x := range a {
			if equal(x, v) {
				return false
			}
		}
		return true
	case map[string]any:
		s, isString := v.(string)
		if !isString {
			return false
		}
		for k, x := range a {
			list, isList := x.([]any)
			if !isList {
				list = []any{x}
			}
			for _, y := range list {
				w := y.(string)
				switch k {
				case "prefix":
					if strings.HasPrefix(s, w) {
						return false
					}
				case "suffix":
					if strings.HasSuffix(s, w) {
						return false
					}
				case "equals-ignore-case":
					if strings.EqualFold(s, w) {
						return false
					}
				case "wildcard":
					if wildcard(w, s) {
						return false
					}
				}
			}
		}
		return true
	default:
		return !equal(a, v)
	}
}

// equal compares a pattern value with an event value: numbers as numbers.
func equal(want, got any) bool {
	if want == nil || got == nil {
		return want == nil && got == nil
	}
	if wf, ok := number(want); ok {
		gf, ok := number(got)
		return ok && wf == gf
	}
	switch w := want.(type) {
	case string:
		g, ok := got.(string)
		return ok && g == w
	case bool:
		g, ok := got.(bool)
		return ok && g == w
	}
	return false
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	case int:
		return float64(n), true
	}
	return 0, false
}

// numericRange compiles ["<", 0, ">=", -5] style comparisons (at most two).
func numericRange(arg any) (func(float64) bool, error) {
	list, ok := arg.([]any)
	if !ok || len(list) == 0 || len(list)%2 != 0 || len(list) > 4 {
		return nil, fmt.Errorf("numeric: want one or two (operator, number) pairs")
	}
	var checks []func(float64) bool
	for i := 0; i < len(list); i += 2 {
		opName, ok := list[i].(string)
		n, isNum := number(list[i+1])
		if !ok || !isNum || math.IsNaN(n) {
			return nil, fmt.Errorf("numeric: malformed comparison")
		}
		var c func(float64) bool
		switch opName {
		case "=":
			c = func(f float64) bool { return f == n }
		case "<":
			c = func(f float64) bool { return f < n }
		case "<=":
			c = func(f float64) bool { return f <= n }
		case ">":
			c = func(f float64) bool { return f > n }
		case ">=":
			c = func(f float64) bool { return f >= n }
		default:
			return nil, fmt.Errorf("numeric: operator %q", opName)
		}
		checks = append(checks, c)
	}
	return func(f float64) bool {
		for _, c := range checks {
			if !c(f) {
				return false
			}
		}
		return true
	}, nil
}

// wildcard matches s against a pattern where * is any run of characters and
// \* a literal star.
func wildcard(pattern, s string) bool {
	var parts []string
	var cur strings.Builder
	for i := 0; i < len(pattern); i++ {
		switch {
		case pattern[i] == '\\' && i+1 < len(pattern) && pattern[i+1] == '*':
			cur.WriteByte('*')
			i++
		case pattern[i] == '*':
			parts = append(parts, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(pattern[i])
		}
	}
	parts = append(parts, cur.String())
	if len(parts) == 1 {
		return s == parts[0]
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return strings.HasSuffix(s, last)
}
