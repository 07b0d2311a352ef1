package catalog

import (
	"bytes"
	"strings"
	"testing"
)

// hostile are values data could carry if validation ever let them through:
// markup, quotes, script URLs in every spelling html/template catches,
// characters URLs must encode, NUL, invalid UTF-8.
var hostile = []string{
	"sample",
	"<script>alert(1)</script>",
	`"'><img src=x onerror=alert(1)>`,
	"javascript:alert(1)",
	"JaVaScRiPt:alert(document.cookie)",
	" javascript:alert(1)",
	"vbscript:msgbox(1)",
	"data:text/html;base64,PHNjcmlwdD4=",
	"mailto:someone@example.com?subject=<hi>",
	"https://example.com/a b?c=\"d\"&e='f'+g<h>#(i)",
	"https://example.com/%zz%41%4",
	"/relative/path?x=1",
	"//evil.example/",
	"https://x.example/~a[b]{c}|d\\e^f`g",
	"a\x00b",
	"\xff\xfe invalid utf-8",
	"&amp; &lt; already escaped",
	"😀 日本語 +1",
	"",
}

// templatesOf lists every template of a type: per locale, each kind and the
// digest section.
func templatesOf(typ *Type) map[string]*tmpl {
	out := map[string]*tmpl{}
	add := func(prefix string, tm *tmpl) {
		if tm != nil {
			out[prefix+tm.name] = tm
		}
	}
	for locale, lt := range typ.locales {
		p := typ.Name + " " + locale + " "
		for _, e := range []*emailTemplates{lt.email, digestEmail(lt.digest)} {
			if e != nil {
				add(p, e.subject)
				add(p, e.text)
				add(p, e.html)
			}
		}
		add(p, lt.sms)
		if lt.digest != nil {
			add(p, lt.digest.sms)
		}
		for _, l := range []*linkTemplates{lt.push, lt.inapp, digestPush(lt.digest)} {
			if l != nil {
				add(p, l.title)
				add(p, l.body)
				add(p, l.url)
			}
		}
	}
	return out
}

func digestEmail(d *digestTemplates) *emailTemplates {
	if d == nil {
		return nil
	}
	return d.email
}

func digestPush(d *digestTemplates) *linkTemplates {
	if d == nil {
		return nil
	}
	return d.push
}

// What the catalog adds to the standard engines' checks at load: one tree
// (its fields all checked), no action in a script or style context, and
// html/template's context errors at load rather than at a send. What it
// accepts renders on hostile data.
func TestTemplateLoadChecks(t *testing.T) {
	accepted := []struct {
		name, src string
		html      bool
	}{
		{"text field", "Hi {{.x}}!", false},
		{"text if else", "{{if .x}}yes {{.x}}{{else}}no{{end}}", false},
		{"text range", "{{range .list}}[{{.}}]{{else}}none{{end}}", false},
		{"text index chain", "{{(index .items 0).url}} {{index .list 1}}", false},
		{"text with and pipe", `{{with .x}}{{. | printf "%s"}}{{end}}`, false},
		{"html text", "<p>{{.x}}</p>", true},
		{"html href", `<a href="{{.x}}">link</a>`, true},
		{"html URL path", `<a href="https://x.example/{{.x}}">l</a>`, true},
		{"html src and alt", `<img src="{{.x}}" alt="{{.x}}">`, true},
		{"html title element", "<title>{{.x}}</title>", true},
		{"html static script-like attribute", `<p style="color: red" onclick="f()">{{.x}}</p>`, true},
		{"html range in text", "<ul>{{range .list}}<li><a href=\"{{.}}\">{{.}}</a></li>{{end}}</ul>", true},
	}
	for _, tc := range accepted {
		t.Run(tc.name, func(t *testing.T) {
			parse := parseText
			if tc.html {
				parse = parseHTML
			}
			tm, err := parse(tc.name, tc.src)
			if err != nil {
				t.Fatalf("rejected: %v", err)
			}
			for _, h := range hostile {
				data := map[string]any{"x": h, "list": []any{h, "b"}, "items": []map[string]any{{"url": h}}}
				var b bytes.Buffer
				if err := tm.execute(&b, data); err != nil {
					t.Fatalf("%q: %v", h, err)
				}
				if tc.html && strings.Contains(b.String(), "<script") {
					t.Fatalf("%q rendered as markup: %s", h, b.String())
				}
			}
		})
	}

	rejected := []struct {
		name, src string
		html      bool
		want      string
	}{
		{"define", `{{define "a"}}x{{end}}y`, false, "define"},
		{"template call", `{{template "a"}}`, false, "define"},
		{"block", `{{block "a" .}}{{.x}}{{end}}`, false, "define"},
		{"html define", `{{define "a"}}{{.x}}{{end}}<p>{{template "a" .}}</p>`, true, "define"},
		{"html script", "<script>var x = {{.x}};</script>", true, "script or style context"},
		{"html style", "<style>p { color: {{.x}} }</style>", true, "script or style context"},
		{"html event handler", `<a onclick="{{.x}}">l</a>`, true, "script or style context"},
		{"html style attribute", `<p style="{{.x}}">l</p>`, true, "script or style context"},
		{"html script in a branch", "{{if .x}}<script>{{.x}}</script>{{end}}", true, "script or style context"},
		{"html unterminated attribute", `<p title="{{.x}}>`, true, "ends in a non-text context"},
		{"html branches end apart", `{{if .x}}<p class="{{end}}">`, true, "branches end in different contexts"},
	}
	for _, tc := range rejected {
		t.Run(tc.name, func(t *testing.T) {
			parse := parseText
			if tc.html {
				parse = parseHTML
			}
			_, err := parse(tc.name, tc.src)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

// A catalog that uses HTML outside the supported contexts fails to load.
func TestCatalogRejectsUnsupportedHTML(t *testing.T) {
	_, err := parseTypeWithEmailHTML(`<p onclick="{{.url}}">x</p>`)
	if err == nil || !strings.Contains(err.Error(), "email.html") {
		t.Fatalf("err = %v", err)
	}
}

func parseTypeWithEmailHTML(html string) (*Type, error) {
	return parseType([]byte(`type: t.x
priority: normal
channels: [email]
variables:
  url: {kind: url}
templates:
  en:
    email: {subject: "s", text: "t", html: '` + html + `'}
    inapp: {title: "t", body: "b", url: ""}
`))
}
