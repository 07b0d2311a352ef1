package domain

import (
	"net/url"
	"strings"
)

// urlChars are the characters RFC 3986 allows in a URI; anything else must be
// percent-encoded. Keeping URLs to them keeps `"`, `<`, `>`, spaces and
// controls out of every page, mail and payload that shows a stored URL, and
// bounds their SMS cost (all are GSM-7; '[', ']' and '~' take two septets).
const urlChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;=%"

// CheckLinkURL is the one rule for every link Herald stores (a notification's
// url variables, an announcement's url): an absolute http(s) URL with a host,
// only RFC 3986 characters and no user information
// (https://bank.example@evil.example/ reads as the bank's link). It returns
// what is wrong, or "".
func CheckLinkURL(s string) string {
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
		return "must not carry user information"
	}
	return ""
}

// HasBidiControl reports whether s holds a Unicode bidirectional formatting
// character (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069): text a
// user reads (titles, bodies, variables shown in them) refuses them, since
// they can make a message read in another order than it is written
// ("Trojan Source").
func HasBidiControl(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool {
		return r == 0x061C || r == 0x200E || r == 0x200F || (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069)
	}) >= 0
}
