package catalog

import (
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
}

func (e *DataError) Error() string {
	return fmt.Sprintf("variable %q: %s", e.Variable, e.Problem)
}

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
		if err := t.Variables[n].check(s); err != "" {
			return &DataError{Variable: n, Problem: err}
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
