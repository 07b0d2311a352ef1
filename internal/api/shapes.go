package api

import "strings"

// Hand-written checks for the shapes intake sees on every request: they run
// without allocating (the regular expressions they replace are kept in
// shapes_test.go, which checks both agree).

func isAlpha(c byte) bool         { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isDigit(c byte) bool         { return c >= '0' && c <= '9' }
func isAlnum(c byte) bool         { return isAlpha(c) || isDigit(c) }
func inSet(c byte, s string) bool { return strings.IndexByte(s, c) >= 0 }

// validUserID: 1-128 of letters, digits and ._:|- — no '@': an email
// address as a user id would put personal data in every log line and metric
// that names the user (docs/decisions.md) — and not only dots: "." and ".."
// are path segments, and an id in a URL path (Location:
// /v1/users/../push-subscriptions/…) must name the user, not a directory.
func validUserID(s string) bool {
	if len(s) < 1 || len(s) > 128 {
		return false
	}
	dots := true
	for i := 0; i < len(s); i++ {
		if !isAlnum(s[i]) && !inSet(s[i], "._:|-") {
			return false
		}
		dots = dots && s[i] == '.'
	}
	return !dots
}

// validE164: "+", a non-zero digit, then 6 to 14 digits (7-15 digits in all).
func validE164(s string) bool {
	if len(s) < 8 || len(s) > 16 || s[0] != '+' || s[1] < '1' || s[1] > '9' {
		return false
	}
	for i := 2; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// validLocale: a BCP 47 shape — a 2-3 letter language, then subtags of 1-8
// letters or digits separated by "-"; at most 35 characters.
func validLocale(s string) bool {
	if len(s) > 35 {
		return false
	}
	i := 0
	for i < len(s) && isAlpha(s[i]) {
		i++
	}
	if i < 2 || i > 3 {
		return false
	}
	for i < len(s) {
		if s[i] != '-' {
			return false
		}
		i++
		start := i
		for i < len(s) && isAlnum(s[i]) {
			i++
		}
		if n := i - start; n < 1 || n > 8 {
			return false
		}
	}
	return true
}

// atext is RFC 5322's atom text besides letters and digits.
const atext = "!#$%&'*+-/=?^_`{|}~"

// validEmail accepts plain addresses: a dot-atom local part (RFC 5322, no
// quoted strings or comments) and a domain of at least two DNS labels (no IP
// literals). That is what mail providers accept as a recipient in practice.
func validEmail(s string) bool {
	if len(s) > 254 {
		return false
	}
	at := strings.LastIndexByte(s, '@')
	if at < 1 || at > 64 {
		return false
	}
	local, domain := s[:at], s[at+1:]
	prevDot := true // no leading dot
	for i := 0; i < len(local); i++ {
		c := local[i]
		switch {
		case c == '.':
			if prevDot {
				return false
			}
			prevDot = true
			continue
		case isAlnum(c) || inSet(c, atext):
		default:
			return false
		}
		prevDot = false
	}
	if prevDot {
		return false
	}
	labels, labelLen := 0, 0
	for i := 0; i <= len(domain); i++ {
		if i == len(domain) || domain[i] == '.' {
			if labelLen == 0 || labelLen > 63 || domain[i-1] == '-' {
				return false
			}
			labels, labelLen = labels+1, 0
			continue
		}
		c := domain[i]
		if !isAlnum(c) && !(c == '-' && labelLen > 0) {
			return false
		}
		labelLen++
	}
	return labels >= 2
}
