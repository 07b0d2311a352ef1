package devstack

import (
	"os"
	"testing"

	"github.com/heraldhq/herald/internal/domain"
)

// LinkHosts reaches every function that takes notification data in or
// renders it (LINK_HOSTS: the API, the three channel workers), defaults to
// empty (any host, https only), and its AllowedPattern (checked as
// CloudFormation checks it, on the whole value) admits every value the
// functions accept, refusing the malformed ones at deploy time rather than
// at the functions' start.
func TestLinkHostsParameter(t *testing.T) {
	raw, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const hosts = "app.example.com, *.example.org,http://intranet.example"
	tm, err := ParseTemplate(raw, map[string]string{"LinkHosts": hosts})
	if err != nil {
		t.Fatal(err)
	}
	fns := tm.GetAllServerlessFunctionResources()
	for _, id := range []string{"ApiFunction", "EmailFunction", "SmsFunction", "PushFunction"} {
		fn := fns[id]
		if fn == nil || fn.Environment == nil || fn.Environment.Variables["LINK_HOSTS"] != hosts {
			t.Errorf("%s: LINK_HOSTS is not the LinkHosts parameter", id)
		}
	}
	decl, _ := tm.Document["Parameters"].(map[string]any)["LinkHosts"].(map[string]any)
	pattern, _ := decl["AllowedPattern"].(string)
	if def, ok := decl["Default"]; !ok || def != "" || pattern == "" {
		t.Fatalf("LinkHosts %v: want an empty default and an AllowedPattern", decl)
	}
	param := parameter{AllowedPattern: pattern}
	for _, v := range []string{"", "example.com", "example.com,*.example.com", "example.com, *.example.com", "http://intranet.example", "http://*.corp.example,a-b.example", "*,http://localhost,http://127.0.0.1"} {
		if _, err := domain.ParseLinkPolicy(v); err != nil {
			t.Fatalf("%q: the functions refuse it: %v", v, err)
		}
		if err := param.check(v); err != nil {
			t.Errorf("LinkHosts %q refused by the template: %v", v, err)
		}
	}
	for _, v := range []string{"https://example.com", "example.com/path", "example.com:8443", "exa mple.com", "example.com,", "http://*"} {
		if _, err := domain.ParseLinkPolicy(v); err == nil {
			t.Fatalf("%q: the functions accept it", v)
		}
		if err := param.check(v); err == nil {
			t.Errorf("LinkHosts %q accepted by the template's AllowedPattern", v)
		}
	}
}

// The local stack admits plain http links to the machine itself (a local
// app, the console's pages) besides https anywhere, unless LinkHosts is
// given (HERALD_LINK_HOSTS), which replaces it whole.
func TestLocalLinkHosts(t *testing.T) {
	if got := localOverrides(nil, "", "127.0.0.1:3000")["LinkHosts"]; got != LocalLinkHosts {
		t.Errorf("default %q, want %q", got, LocalLinkHosts)
	}
	if got := localOverrides(map[string]string{"LinkHosts": "app.example.com"}, "", "127.0.0.1:3000")["LinkHosts"]; got != "app.example.com" {
		t.Errorf("given: %q", got)
	}
	p, err := domain.ParseLinkPolicy(LocalLinkHosts)
	if err != nil {
		t.Fatal(err)
	}
	for link, ok := range map[string]bool{"http://127.0.0.1:3000/_dev/?user=u1": true, "http://localhost:5173/i/9": true, "https://example.com/i/9": true, "http://example.com/i/9": false} {
		if (p.Check(link) == "") != ok {
			t.Errorf("%s: allowed=%v, want %v", link, !ok, ok)
		}
	}
}
