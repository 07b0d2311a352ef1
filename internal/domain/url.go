package domain

import (
	"fmt"
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

// LinkPolicy is what the stack allows of a notification's links beyond
// CheckLinkURL (the LinkHosts template parameter): https, on a listed host
// when hosts are listed; plain http only for a host listed as http://host.
// The zero value admits https links to any host.
type LinkPolicy struct {
	hosts   []linkHost
	anyHost bool   // "*" listed: https to any host
	spec    string // as given, for messages
}

type linkHost struct {
	name   string // lower case; without "*." when suffix
	suffix bool   // "*.name": the subdomains of name, not name itself
	http   bool   // written "http://…": plain http admitted too
}

func (h linkHost) matches(host string) bool {
	if h.suffix {
		return strings.HasSuffix(host, "."+h.name)
	}
	return host == h.name
}

// ParseLinkPolicy reads a comma-separated list of "host" and "*.domain"
// entries (DNS names, or 127.0.0.1; no port or path), each optionally
// written "http://host" to admit plain http for it (an intranet, a local
// app), and "*" for https to any host. Empty: "*".
func ParseLinkPolicy(spec string) (LinkPolicy, error) {
	p := LinkPolicy{spec: strings.TrimSpace(spec)}
	if p.spec == "" {
		return p, nil
	}
	for raw := range strings.SplitSeq(p.spec, ",") {
		entry := strings.ToLower(strings.TrimSpace(raw))
		if entry == "*" {
			p.anyHost = true
			continue
		}
		var h linkHost
		entry, h.http = strings.CutPrefix(entry, "http://")
		entry, h.suffix = strings.CutPrefix(entry, "*.")
		h.name = entry
		loopback := !h.suffix && h.name == "127.0.0.1"
		if !loopback && (!isDNSName(h.name) || h.suffix && !strings.Contains(h.name, ".")) {
			return LinkPolicy{}, fmt.Errorf("LinkHosts entry %q: want host, *.domain (two labels at least), http://host or *, without port or path", strings.TrimSpace(raw))
		}
		p.hosts = append(p.hosts, h)
	}
	return p, nil
}

// Any reports whether https links to every host are allowed.
func (p LinkPolicy) Any() bool { return p.anyHost || len(p.hosts) == 0 }

// Check returns what is wrong with link under the policy, or "". link must
// pass CheckLinkURL first (an unparsable one is refused).
func (p LinkPolicy) Check(link string) string {
	u, err := url.Parse(link)
	if err != nil {
		return "must be an absolute http(s) URL"
	}
	host := strings.ToLower(u.Hostname())
	https := u.Scheme == "https"
	for _, h := range p.hosts {
		if h.matches(host) && (https || h.http && u.Scheme == "http") {
			return ""
		}
	}
	switch {
	case https && p.Any():
		return ""
	case p.spec == "":
		return "must be an https link"
	case p.Any():
		return "must be an https link (plain http only to the http:// hosts of the stack's LinkHosts: " + p.spec + ")"
	}
	return "must be an https link to a host the stack's LinkHosts allows (" + p.spec + ")"
}

// isDNSName: letters, digits and '-' in dot-separated labels of 1–63
// characters, neither starting nor ending with '-'; not all digits (an IP).
func isDNSName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	digitsOnly := true
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			switch {
			case c >= 'a' && c <= 'z', c == '-':
				digitsOnly = false
			case c >= '0' && c <= '9':
			default:
				return false
			}
		}
	}
	return !digitsOnly
}
