package catalog

import (
	"strings"
	"testing"
	"testing/fstest"
)

func urls(n int) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = map[string]any{"actorLabel": "someone", "url": "https://example.com/c/" + string(rune('a'+i))}
	}
	return out
}

func TestRenderDigest(t *testing.T) {
	typ, _ := MustLoad().Lookup("comment.created")
	tests := []struct {
		name, locale string
		data         DigestData
		title        string
		bodyHas      []string // in this order
		bodyLacks    []string
		url          string
	}{
		{
			name: "five, newest first", locale: "en", data: DigestData{Count: 5, Items: urls(5)},
			title:     "5 new comments",
			bodyHas:   []string{"5 new comments", "https://example.com/c/a", "https://example.com/c/b", "https://example.com/c/e"},
			bodyLacks: []string{"more", "someone"},
			url:       "https://example.com/c/a",
		},
		{
			name: "more than listed", locale: "en-GB", data: DigestData{Count: 12, Items: urls(MaxDigestItems)},
			title: "12 new comments", bodyHas: []string{"https://example.com/c/j", "…and 2 more"}, url: "https://example.com/c/a",
		},
		{
			name: "Japanese", locale: "ja-JP", data: DigestData{Count: 2, Items: urls(2)},
			title: "新しいコメント 2 件", bodyHas: []string{"2 件あります", "https://example.com/c/b"}, url: "https://example.com/c/a",
		},
		{
			name: "unknown locale falls back to English", locale: "fr", data: DigestData{Count: 1, Items: urls(1)},
			title: "1 new comments", bodyHas: []string{"https://example.com/c/a"}, url: "https://example.com/c/a",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := typ.RenderDigest(KindPush, tt.locale, tt.data)
			if err != nil {
				t.Fatal(err)
			}
			if c.Title != tt.title || c.URL != tt.url {
				t.Errorf("title %q url %q, want %q %q", c.Title, c.URL, tt.title, tt.url)
			}
			rest := c.Body
			for _, s := range tt.bodyHas {
				i := strings.Index(rest, s)
				if i < 0 {
					t.Fatalf("body %q lacks %q (in order)", c.Body, s)
				}
				rest = rest[i+len(s):]
			}
			for _, s := range tt.bodyLacks {
				if strings.Contains(c.Body, s) {
					t.Errorf("body %q contains %q", c.Body, s)
				}
			}
		})
	}
	if _, err := typ.RenderDigest(KindEmail, "en", DigestData{Count: 1, Items: urls(1)}); err == nil {
		t.Error("rendered an email digest for a push-only type")
	}
	plain, _ := MustLoad().Lookup("reservation.approved")
	if _, err := plain.RenderDigest(KindEmail, "en", DigestData{Count: 1}); err == nil {
		t.Error("rendered a digest for a type that is not digestible")
	}
}

func TestDigestTemplatesAreCheckedAtLoad(t *testing.T) {
	const head = `
type: t.x
priority: low
channels: [push, email]
%s
variables:
  who: {kind: text, personal: true}
  url: {kind: url}
templates:
  en:
    push: {title: "T", body: "B", url: "{{.url}}"}
    email: {subject: "S", text: "T {{.url}}", html: "<a href=\"{{.url}}\">x</a>"}
    inapp: {title: "T", body: "B {{.who}}"}
`
	const okDigest = `    digest:
      push: {title: "{{.count}} new", body: "{{range .items}}{{.url}} {{end}}"}
      email: {subject: "{{.count}} new", text: "{{range .items}}{{.url}} {{.who}}{{end}}", html: "{{range .items}}<a href=\"{{.url}}\">{{.who}}</a>{{end}}"}
`
	tests := []struct {
		name       string
		digestible string
		digest     string
		ja         string
		wantErr    string
	}{
		{"valid", "digestible: true", okDigest, "", ""},
		{"Japanese may fall back to the default digest", "digestible: true", okDigest,
			"  ja:\n    push: {title: \"T\", body: \"B\"}\n    email: {subject: \"S\", text: \"T\", html: \"H\"}\n    inapp: {title: \"T\", body: \"B\"}\n", ""},
		{"digestible without a digest", "digestible: true", "", "", "needs digest templates"},
		{"digest on a type that is not digestible", "", okDigest, "", "not digestible"},
		{"a channel without a digest template", "digestible: true", "    digest:\n      push: {title: \"x\", body: \"y\"}\n", "", "digest.email template missing"},
		{"unknown field", "digestible: true", "    digest:\n      push: {title: \"{{.cuont}}\", body: \"y\"}\n      email: {subject: \"s\", text: \"t\", html: \"h\"}\n", "", "sample data"},
		{"unknown item field", "digestible: true", "    digest:\n      push: {title: \"x\", body: \"{{range .items}}{{.nope}}{{end}}\"}\n      email: {subject: \"s\", text: \"t\", html: \"h\"}\n", "", "sample data"},
		{"personal data in push", "digestible: true", "    digest:\n      push: {title: \"x\", body: \"{{range .items}}{{.who}}{{end}}\"}\n      email: {subject: \"s\", text: \"t\", html: \"h\"}\n", "", "personal variable"},
		{"empty template", "digestible: true", "    digest:\n      push: {title: \"\", body: \"y\"}\n      email: {subject: \"s\", text: \"t\", html: \"h\"}\n", "", "is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(head, "%s", tt.digestible, 1) + tt.digest + tt.ja
			c, err := LoadFS(fstest.MapFS{"types/t.x.yaml": {Data: []byte(src)}}, "types")
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("load: %v", err)
				}
				typ, _ := c.Lookup("t.x")
				got, err := typ.RenderDigest(KindPush, "ja", DigestData{Count: 3, Items: urls(2)})
				if err != nil || got.Title != "3 new" {
					t.Fatalf("ja digest = %+v, %v; want the default locale's", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.wantErr)
			}
			// Only the sample renders are skipped without them.
			_, err = parseFS(fstest.MapFS{"types/t.x.yaml": {Data: []byte(src)}}, "types")
			if skipped := tt.wantErr == "sample data"; skipped != (err == nil) {
				t.Fatalf("without sample renders: err = %v", err)
			}
		})
	}
}
