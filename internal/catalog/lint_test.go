package catalog

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestShippedCatalogPassesLint(t *testing.T) {
	for _, err := range MustLoad().Lint() {
		t.Error(err)
	}
}

func TestEveryShippedTypeHasEnglishAndJapanese(t *testing.T) {
	c := MustLoad()
	for _, name := range c.Names() {
		typ, _ := c.Lookup(name)
		have := map[string]bool{}
		for _, l := range typ.Locales() {
			have[l] = true
		}
		for _, want := range []string{"en", "ja"} {
			if !have[want] {
				t.Errorf("%s has no %q templates (locales: %v)", name, want, typ.Locales())
			}
		}
	}
}

// TestShippedSMSWorstCase prints the budget use of every SMS template and
// checks the worst case really is what intake can accept.
func TestShippedSMSWorstCase(t *testing.T) {
	c := MustLoad()
	for _, name := range c.Names() {
		typ, _ := c.Lookup(name)
		if !typ.HasChannel("sms") {
			continue
		}
		worst := typ.WorstCaseData()
		if err := typ.ValidateData(worst); err != nil {
			t.Errorf("%s: worst-case data is not valid data: %v", name, err)
		}
		for _, l := range typ.Locales() {
			content, err := typ.Render(KindSMS, l, worst)
			if err != nil {
				t.Fatalf("%s %s: %v", name, l, err)
			}
			fits, enc, n := SMSFitsOneSegment(content.Text)
			t.Logf("%s %s: %d %s units (worst case)", name, l, n, enc)
			if !fits {
				t.Errorf("%s %s does not fit one segment", name, l)
			}
		}
	}
}

func TestSMSLength(t *testing.T) {
	tests := []struct {
		text  string
		enc   SMSEncoding
		units int
	}{
		{"", EncodingGSM7, 0},
		{"Your code is 123456", EncodingGSM7, 19},
		{"€5 [x]", EncodingGSM7, 9}, // €, [ and ] are extension characters
		{"https://x.example/~", EncodingGSM7, 20},
		{"Ünïcode", EncodingUCS2, 7}, // ï is not in GSM-7
		{"確認コード", EncodingUCS2, 5},
		{"hi 😀", EncodingUCS2, 5}, // a surrogate pair is two units
		{"`", EncodingUCS2, 1},    // the backtick is not in GSM-7
	}
	for _, tt := range tests {
		enc, n := SMSLength(tt.text)
		if enc != tt.enc || n != tt.units {
			t.Errorf("SMSLength(%q) = %s %d, want %s %d", tt.text, enc, n, tt.enc, tt.units)
		}
	}
	if fits, _, _ := SMSFitsOneSegment(strings.Repeat("a", 160)); !fits {
		t.Error("160 GSM-7 characters must fit")
	}
	if fits, _, _ := SMSFitsOneSegment(strings.Repeat("a", 159) + "~"); fits {
		t.Error("159 + one extension character is 161 septets")
	}
	if fits, _, _ := SMSFitsOneSegment(strings.Repeat("あ", 70)); !fits {
		t.Error("70 UCS-2 characters must fit")
	}
	if fits, _, _ := SMSFitsOneSegment(strings.Repeat("あ", 71)); fits {
		t.Error("71 UCS-2 characters must not fit")
	}
}

// lintFixture loads a one-type catalog and lints it.
func lintFixture(t *testing.T, yaml string) []error {
	t.Helper()
	c, err := LoadFS(fstest.MapFS{"types/x.y.yaml": {Data: []byte(yaml)}}, "types")
	if err != nil {
		t.Fatalf("fixture does not load: %v", err)
	}
	return c.Lint()
}

func TestLintCatchesViolations(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"personal variable in SMS", `
type: x.y
priority: high
channels: [sms]
variables: {name: {personal: true, maxLength: 10}}
templates:
  en:
    sms: {text: "Hi {{.name}}"}
    inapp: {title: "t", body: "b"}
`, `en sms.text: uses personal variable "name"`},
		{"in-app text claims an SMS", `
type: x.y
priority: high
channels: [sms]
variables: {code: {kind: code, maxLength: 6}}
templates:
  en:
    sms: {text: "Code {{.code}}"}
    inapp: {title: "Code", body: "A code was sent to your phone."}
`, `en inapp.body: names a channel ("phone")`},
		{"in-app title names email, ja", `
type: x.y
priority: low
channels: [email]
variables: {}
templates:
  en:
    email: {subject: "s", text: "t", html: "<p>t</p>"}
    inapp: {title: "Your mailbox settings changed", body: "b"}
  ja:
    email: {subject: "s", text: "t", html: "<p>t</p>"}
    inapp: {title: "メールをご確認ください", body: "b"}
`, `ja inapp.title: names a channel ("メール")`},
		{"personal variable in push body", `
type: x.y
priority: low
channels: [push]
variables: {name: {personal: true, maxLength: 10}, url: {kind: url}}
templates:
  en:
    push: {title: "t", body: "From {{.name}}", url: "{{.url}}"}
    inapp: {title: "t {{.name}}", body: "b", url: "{{.url}}"}
`, `en push.body: uses personal variable "name"`},
		{"GSM-7 text over budget with an unbounded url", `
type: x.y
priority: high
channels: [sms]
variables: {url: {kind: url}}
templates:
  en:
    sms: {text: "Open {{.url}}"}
    inapp: {title: "t", body: "b"}
`, "en sms.text: 4083 GSM-7 units"},
		{"url of 90 counts double in GSM-7", `
type: x.y
priority: high
channels: [sms]
variables: {url: {kind: url, maxLength: 90}}
templates:
  en:
    sms: {text: "Open {{.url}}"}
    inapp: {title: "t", body: "b"}
`, "en sms.text: 167 GSM-7 units"},
		{"Japanese text over the UCS-2 budget", `
type: x.y
priority: high
channels: [sms]
variables: {code: {kind: code, maxLength: 10}}
templates:
  en:
    sms: {text: "Code {{.code}}"}
    inapp: {title: "t", body: "b"}
  ja:
    sms: {text: "` + strings.Repeat("確", 61) + ` {{.code}}"}
    inapp: {title: "t", body: "b"}
`, "ja sms.text: 72 UCS-2 units"},
		{"a text variable forces UCS-2", `
type: x.y
priority: high
channels: [sms]
variables: {label: {maxLength: 32}}
templates:
  en:
    sms: {text: "Update: {{.label}}"}
    inapp: {title: "t", body: "b"}
`, "en sms.text: 72 UCS-2 units"},
		{"digest SMS over budget with one item", `
type: x.y
priority: low
channels: [sms]
digestible: true
variables: {url: {kind: url, maxLength: 120}}
templates:
  en:
    sms: {text: "New comment"}
    inapp: {title: "t", body: "b"}
    digest:
      sms: {text: "{{.count}} new:{{range .items}} {{.url}}{{end}}{{if .more}} +{{.more}}{{end}}"}
`, "en digest.sms.text: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := lintFixture(t, tt.yaml)
			var all []string
			for _, e := range errs {
				all = append(all, e.Error())
			}
			if !strings.Contains(strings.Join(all, "\n"), tt.want) {
				t.Fatalf("lint = %q, want one containing %q", all, tt.want)
			}
		})
	}
	// The same shapes within budget pass.
	if errs := lintFixture(t, `
type: x.y
priority: high
channels: [sms, push]
variables: {url: {kind: url, maxLength: 60}, name: {personal: true, maxLength: 10}}
templates:
  en:
    sms: {text: "Open {{.url}}"}
    push: {title: "t", body: "b", url: "{{.url}}"}
    inapp: {title: "From {{.name}}", body: "b"}
`); len(errs) != 0 {
		t.Fatalf("lint of a good fixture = %v", errs)
	}
	// A digest SMS whose one-item form fits passes: the worker lists fewer
	// items (counting the rest) until the digest fits one segment.
	if errs := lintFixture(t, `
type: x.y
priority: low
channels: [sms]
digestible: true
variables: {url: {kind: url, maxLength: 40}}
templates:
  en:
    sms: {text: "New: {{.url}}"}
    inapp: {title: "t", body: "b"}
    digest:
      sms: {text: "{{.count}} new:{{range .items}} {{.url}}{{end}}{{if .more}} +{{.more}}{{end}}"}
`); len(errs) != 0 {
		t.Fatalf("lint of a good digest fixture = %v", errs)
	}
}

func TestURLVariablesOnlyTakeRFC3986Characters(t *testing.T) {
	typ, _ := MustLoad().Lookup("invoice.payment_failed")
	for _, u := range []string{"https://example.com/i/9?a=1&b=%22x%22", "https://localhost:8080/x~y[0]"} {
		if err := typ.ValidateData(map[string]any{"invoiceUrl": u}); err != nil {
			t.Errorf("%q rejected: %v", u, err)
		}
	}
	for _, u := range []string{"https://example.com/a\u202eb", "https://example.com/a b", `https://example.com/"<x>"`, "https://例え.jp/", "https://example.com/`", "https://example.com/\x7f"} {
		if err := typ.ValidateData(map[string]any{"invoiceUrl": u}); err == nil {
			t.Errorf("%q accepted", u)
		}
	}
}

// TestTextVariablesRefuseBidiControls: a caller's text shown to a user is
// refused when it carries bidirectional formatting characters (not stripped).
func TestTextVariablesRefuseBidiControls(t *testing.T) {
	typ, _ := MustLoad().Lookup("comment.created")
	data := func(s string) map[string]any {
		return map[string]any{"actorLabel": s, "url": "https://example.com/c/1"}
	}
	if err := typ.ValidateData(data("Ada")); err != nil {
		t.Fatalf("plain text refused: %v", err)
	}
	for _, r := range []string{"\u202e", "\u202a", "\u2066", "\u2069", "\u200f", "\u061c"} {
		if err := typ.ValidateData(data("Ada" + r + "evil")); err == nil {
			t.Errorf("%U accepted", []rune(r)[0])
		}
	}
}
