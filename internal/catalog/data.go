package catalog

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strings"
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

// urlChars are the characters RFC 3986 allows in a URI; anything else must be
// percent-encoded. Keeping URLs to them also bounds their SMS cost (all are
// GSM-7; '[', ']' and '~' take two septets).
const urlChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;=%"

func (v Variable) check(s string) string {
	max := v.maxLength()
	if s == "" {
		return "must not be empty"
	}
	if utf8.RuneCountInString(s) > max {
		return fmt.Sprintf("longer than %d characters", max)
	}
	switch v.Kind {
	case "url":
		for i := 0; i < len(s); i++ {
			if strings.IndexByte(urlChars, s[i]) < 0 {
				return "must be an absolute http(s) URL with only RFC 3986 characters (percent-encode the rest)"
			}
		}
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return "must be an absolute http(s) URL"
		}
		if u.User != nil {
			// https://bank.example@evil.example/ reads as the bank's link.
			return "must not carry user information"
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
