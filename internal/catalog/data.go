package catalog

import (
	"fmt"
	"net/url"
	"sort"
	"unicode/utf8"
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
	names := make([]string, 0, len(t.Variables))
	for n := range t.Variables {
		names = append(names, n)
	}
	sort.Strings(names)
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
	extra := make([]string, 0)
	for n := range data {
		if _, ok := t.Variables[n]; !ok {
			extra = append(extra, n)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return &DataError{Variable: extra[0], Problem: "undeclared"}
	}
	return nil
}

func (v Variable) check(s string) string {
	max := v.MaxLength
	if max == 0 {
		max = defaultMaxLength
	}
	if s == "" {
		return "must not be empty"
	}
	if utf8.RuneCountInString(s) > max {
		return fmt.Sprintf("longer than %d characters", max)
	}
	switch v.Kind {
	case "url":
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return "must be an absolute http(s) URL"
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
