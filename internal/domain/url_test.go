package domain

import (
	"strings"
	"testing"
)

// The link policy (the LinkHosts parameter): https only by default, any
// host; with hosts listed, only those ("*.domain": its subdomains, not the
// domain itself); an entry written http:// also admits plain http for it.
func TestLinkPolicy(t *testing.T) {
	for _, tc := range []struct {
		spec  string
		link  string
		allow bool
	}{
		{"", "https://example.com/i/9", true},
		{"", "https://10.0.0.1/x", true},
		{"", "http://example.com/i/9", false}, // https only by default
		{"example.com", "https://example.com/i/9", true},
		{"example.com", "https://EXAMPLE.com:8443/i/9", true},
		{"example.com", "https://evil.example.net/", false},
		{"example.com", "https://www.example.com/", false},
		{"example.com", "https://example.com.evil.net/", false},
		{"example.com", "http://example.com/", false},
		{"*.example.com", "https://app.example.com/x", true},
		{"*.example.com", "https://a.b.example.com/x", true},
		{"*.example.com", "https://example.com/x", false},
		{"*.example.com", "https://badexample.com/x", false},
		{"example.com, *.example.com", "https://example.com/x", true},
		{"http://intranet.example", "http://intranet.example/x", true},
		{"http://intranet.example", "https://intranet.example/x", true},
		{"http://intranet.example,example.com", "http://example.com/x", false},
		{"example.com", "https://10.0.0.1/x", false},
		// "*": https anywhere, with http for the listed hosts (make dev's
		// default: a local app on http://localhost).
		{"*,http://localhost,http://127.0.0.1", "https://anything.example/x", true},
		{"*,http://localhost,http://127.0.0.1", "http://localhost:5173/x", true},
		{"*,http://localhost,http://127.0.0.1", "http://127.0.0.1:3000/_dev/", true},
		{"*,http://localhost,http://127.0.0.1", "http://evil.example/x", false},
		{"127.0.0.1", "http://127.0.0.1/x", false},
	} {
		p, err := ParseLinkPolicy(tc.spec)
		if err != nil {
			t.Fatalf("%q: %v", tc.spec, err)
		}
		if got := p.Check(tc.link) == ""; got != tc.allow {
			t.Errorf("LinkHosts %q, %s: allowed=%v, want %v (%s)", tc.spec, tc.link, got, tc.allow, p.Check(tc.link))
		}
	}
	for _, bad := range []string{"example.com/path", "https://example.com", "*.com", "http://*", "10.0.0.1", "exa mple.com", "example.com:443", "ftp://x.example", ",", "*.127.0.0.1"} {
		if _, err := ParseLinkPolicy(bad); err == nil {
			t.Errorf("LinkHosts %q accepted", bad)
		}
	}
	p, _ := ParseLinkPolicy("example.com")
	if msg := p.Check("https://evil.example.net/"); !strings.Contains(msg, "LinkHosts") {
		t.Errorf("refusal %q does not name the parameter", msg)
	}
	star, _ := ParseLinkPolicy("*,http://localhost")
	if p.Any() || !(LinkPolicy{}).Any() || !star.Any() {
		t.Error("Any: true only without hosts or with *")
	}
}
