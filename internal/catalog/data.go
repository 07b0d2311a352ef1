package catalog

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"unicode/utf8"

	"github.com/heraldhq/herald/internal/domain"
)

// DataError names the variable that makes a notification's data unacceptable.
type DataError struct {
	Variable string
	Problem  string // "missing", "undeclared" or a description of the invalid value
	// Cause classifies some problems (ErrLinkNotAllowed); nil otherwise.
	Cause error
}

func (e *DataError) Error() string {
	return fmt.Sprintf("variable %q: %s", e.Variable, e.Problem)
}

func (e *DataError) Unwrap() error { return e.Cause }

// ErrLinkNotAllowed matches a link variable that the stack's link policy
// (domain.LinkPolicy, the LinkHosts parameter) refuses: not https, or not
// on an allowed host.
var ErrLinkNotAllowed = errors.New("link not allowed")

const defaultMaxLength = 2048

// ValidateData checks data against the type's declared variables: every declared
// variable present as a string of its kind, nothing undeclared. Errors come in a
// stable order (missing before undeclared, then by name).
func (t *Type) ValidateData(data map[string]any) error {
	names := t.variableNames
	if names == nil { // a Type built by hand rather than loaded
		names = slices.Sorted(maps.Keys(t.Variables))
	}
	for _, n := range names {
		v, ok := data[n]
		if !ok {
			return &DataError{Variable: n, Problem: "missing"}
		}
		s, ok := v.(string)
		if !ok {
			return &DataError{Variable: n, Problem: "must be a string"}
		}
		decl := t.Variables[n]
		if err := decl.check(s); err != "" {
			return &DataError{Variable: n, Problem: err}
		}
		if decl.Kind == "url" {
			if err := t.links.Check(s); err != "" {
				return &DataError{Variable: n, Problem: err, Cause: ErrLinkNotAllowed}
			}
		}
	}
	if len(data) == len(names) {
		return nil // every key is a declared variable
	}
	var extra []string
	for n := range data {
		if _, ok := t.Variables[n]; !ok {
			extra = append(extra, n)
		}
	}
	sort.Strings(extra)
	return &DataError{Variable: extra[0], Problem: "undeclared"}
}

func (v Variable) maxLength() int {
	if v.MaxLength > 0 {
		return v.MaxLength
	}
	return defaultMaxLength
}

func (v Variable) check(s string) string {
	max := v.maxLength()
	if s == "" {
		return "must not be empty"
	}
	if utf8.RuneCountInString(s) > max {
		return fmt.Sprintf("longer than %d characters", max)
	}
	if domain.HasBidiControl(s) {
		// Refused, not stripped: a caller's text is stored as sent or not
		// at all (docs/decisions.md).
		return "must not contain bidirectional formatting characters (U+202A–U+202E, U+2066–U+2069, …)"
	}
	switch v.Kind {
	case "url":
		if msg := domain.CheckLinkURL(s); msg != "" {
			return msg
		}
	case "code":
		for _, r := range s {
			if !(r >= '0' && r <= '9' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r == '-') {
				return "must be letters, digits or '-'"
			}
		}
	}
	return ""
}

// WithLinkPolicy returns the catalog with every type checking its link
// variables against p at intake (ValidateData: ErrLinkNotAllowed) and
// leaving out, when rendering, any link p refuses (data accepted before the
// policy changed). c itself is unchanged.
func (c *Catalog) WithLinkPolicy(p domain.LinkPolicy) *Catalog {
	out := &Catalog{types: make(map[string]*Type, len(c.types))}
	for name, t := range c.types {
		cp := *t
		cp.links = p
		out.types[name] = &cp
	}
	if c.budgetDigest != nil {
		cp := *c.budgetDigest
		cp.links = p
		out.budgetDigest = &cp
	}
	return out
}

// allowedLinks is data with every link variable the type's policy refuses
// emptied; data itself when there is none, so the common case copies
// nothing. (CheckLinkURL held at intake, and the templates escape what they
// show: a link is only left out for the policy.)
func (t *Type) allowedLinks(data map[string]any) map[string]any {
	var out map[string]any
	for name, v := range t.Variables {
		if v.Kind != "url" {
			continue
		}
		s, ok := data[name].(string)
		if !ok || t.links.Check(s) == "" {
			continue
		}
		if out == nil {
			out = maps.Clone(data)
		}
		out[name] = ""
	}
	if out == nil {
		return data
	}
	return out
}
