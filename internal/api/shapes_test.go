package api

import (
	"math/rand/v2"
	"net/mail"
	"regexp"
	"strings"
	"testing"
)

// The hand-written checks must accept exactly what these expressions accept.
var (
	userIDRegexp = regexp.MustCompile(`^[A-Za-z0-9._:|-]{1,128}$`)
	// onlyDotsRegexp: the OpenAPI pattern's negative lookahead (?!\.+$),
	// which RE2 lacks.
	onlyDotsRegexp = regexp.MustCompile(`^\.+$`)
	e164Regexp     = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)
	localeRegexp   = regexp.MustCompile(`^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$`)
)

func TestUserIDRefusesOnlyDots(t *testing.T) {
	for _, s := range []string{".", "..", "..."} {
		if validUserID(s) {
			t.Errorf("validUserID(%q) = true", s)
		}
	}
	for _, s := range []string{".a", "a..", "..-", "u.1"} {
		if !validUserID(s) {
			t.Errorf("validUserID(%q) = false", s)
		}
	}
}

func TestShapesAgreeWithTheirExpressions(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := "aZ09+-_.:@|/ éx"
	gen := func(max int) string {
		n := r.IntN(max + 1)
		var b strings.Builder
		for range n {
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	fixed := []string{"", "u1", "+15551234567", "+0555123456", "ja", "ja-JP", "zh-Hant-TW", "en-", "-en", "eng-123456789",
		"+1234567", "+123456", "+123456789012345", "+1234567890123456", strings.Repeat("u", 128), strings.Repeat("u", 129)}
	for i := 0; i < 200000; i++ {
		var s string
		if i < len(fixed) {
			s = fixed[i]
		} else {
			s = gen(20)
			if i%3 == 0 { // bias towards the interesting shapes
				s = "+1" + strings.Map(func(r rune) rune {
					if r >= '0' && r <= '9' {
						return r
					}
					return '5'
				}, s)
			}
		}
		if validUserID(s) != (userIDRegexp.MatchString(s) && !onlyDotsRegexp.MatchString(s)) {
			t.Fatalf("validUserID(%q) = %v", s, validUserID(s))
		}
		if validE164(s) != e164Regexp.MatchString(s) {
			t.Fatalf("validE164(%q) = %v", s, validE164(s))
		}
		if validLocale(s) != (len(s) <= 35 && localeRegexp.MatchString(s)) {
			t.Fatalf("validLocale(%q) = %v", s, validLocale(s))
		}
	}
}

func TestValidEmail(t *testing.T) {
	good := []string{"a@example.com", "ann.lee+tag@mail.example.co.jp", "x_y-z@a-b.example", "o'brien@example.ie", "1@2.io", "{x}@example.com"}
	bad := []string{"", "a", "@example.com", "a@", "a@example", "a@.example.com", "a@example..com", "a@-example.com", "a@example-.com",
		".a@example.com", "a.@example.com", "a..b@example.com", "a b@example.com", `"a b"@example.com`, "Ann <a@example.com>",
		"a@[127.0.0.1]", "a@exa_mple.com", "a@example.com\n", "ü@example.com", "a@exämple.com", strings.Repeat("a", 65) + "@example.com",
		"a@" + strings.Repeat("b", 64) + ".com", "a@b@example.com"}
	for _, s := range good {
		if !validEmail(s) {
			t.Errorf("%q rejected", s)
		}
		// Everything accepted is also a plain address to net/mail.
		if a, err := mail.ParseAddress(s); err != nil || a.Address != s {
			t.Errorf("%q accepted but net/mail says %v", s, err)
		}
	}
	for _, s := range bad {
		if validEmail(s) {
			t.Errorf("%q accepted", s)
		}
	}
}
