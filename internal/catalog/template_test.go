package catalog

import (
	"bytes"
	htmltemplate "html/template"
	"maps"
	"slices"
	"strings"
	"testing"
	"text/template"
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

// oldExecute renders a template's source with the engine the catalog used
// before: text/template, or html/template for HTML, with missingkey=error.
func oldExecute(t *testing.T, tm *tmpl, data any) (string, error) {
	t.Helper()
	var b bytes.Buffer
	if tm.html {
		old, err := htmltemplate.New(tm.name).Option("missingkey=error").Parse(tm.src)
		if err != nil {
			t.Fatalf("%s: html/template rejects what we accepted: %v", tm.name, err)
		}
		err = old.Execute(&b, data)
		return b.String(), err
	}
	old, err := template.New(tm.name).Option("missingkey=error").Parse(tm.src)
	if err != nil {
		t.Fatalf("%s: text/template rejects what we accepted: %v", tm.name, err)
	}
	err = old.Execute(&b, data)
	return b.String(), err
}

func newExecute(tm *tmpl, data any) (string, error) {
	var b bytes.Buffer
	err := tm.execute(&b, data)
	return b.String(), err
}

// sameOutput requires both engines to succeed with the same output, or both
// to fail.
func sameOutput(t *testing.T, label string, tm *tmpl, data any) {
	t.Helper()
	want, wantErr := oldExecute(t, tm, data)
	got, err := newExecute(tm, data)
	switch {
	case (err != nil) != (wantErr != nil):
		t.Errorf("%s: error %v, the old engine's %v", label, err, wantErr)
	case err == nil && got != want:
		t.Errorf("%s:\n got %q\nwant %q", label, got, want)
	}
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

// Every template of the shipped catalog renders exactly as text/template and
// html/template render it, for every type, locale and kind, on sample,
// worst-case and hostile data (each variable set to each hostile value), and
// digests on hostile items and every count.
func TestCatalogRendersAsTheStandardEngines(t *testing.T) {
	c := MustLoad()
	checked := 0
	for _, name := range c.Names() {
		typ, _ := c.Lookup(name)
		datasets := []map[string]any{typ.sampleData(), typ.WorstCaseData()}
		for _, h := range hostile {
			d := map[string]any{}
			for v := range typ.Variables {
				d[v] = h
			}
			datasets = append(datasets, d)
		}
		tms := templatesOf(typ)
		for _, label := range slices.Sorted(maps.Keys(tms)) {
			tm := tms[label]
			if strings.Contains(tm.name, "digest.") {
				for i, d := range datasets {
					for _, n := range []int{0, 1, 2} {
						items := slices.Repeat([]map[string]any{d}, n)
						for _, count := range []int{n, n + 3} {
							sameOutput(t, label+" digest", tm, DigestData{Count: count, Items: items}.templateData())
							checked++
						}
					}
					_ = i
				}
				continue
			}
			for _, d := range datasets {
				sameOutput(t, label, tm, d)
				checked++
			}
		}
	}
	if checked < 500 {
		t.Fatalf("only %d renders compared", checked)
	}
	t.Logf("%d renders identical to text/template and html/template", checked)
}

// A corpus of small templates: what we accept renders exactly as the
// standard engine does on hostile data; what we reject is named.
func TestTemplateSubset(t *testing.T) {
	accepted := []struct {
		name, src string
		html      bool
	}{
		{"text field", "Hi {{.x}}!", false},
		{"text if else", "{{if .x}}yes {{.x}}{{else}}no{{end}}", false},
		{"text range", "{{range .list}}[{{.}}]{{else}}none{{end}}", false},
		{"text index chain", "{{(index .items 0).url}} {{index .list 1}}", false},
		{"text index missing map key", `{{index .m "nope"}}|{{index .m "k"}}`, false},
		{"text nested field", "{{.m.k}}", false},
		{"text trim markers", "a  {{- .x -}}  b", false},
		{"text comment", "a{{/* note */}}b", false},
		{"html text", "<p>{{.x}}</p>", true},
		{"html href", `<a href="{{.x}}">link</a>`, true},
		{"html href single quotes", `<a href='{{.x}}'>link</a>`, true},
		{"html href upper case", `<A HREF = "{{.x}}" >link</A>`, true},
		{"html href then fragment", `<a href="{{.x}}#top">link</a>`, true},
		{"html src and alt", `<img src="{{.x}}" alt="{{.x}}">`, true},
		{"html plain attributes", `<p title="{{.x}}" class="c {{.x}} d" id='{{.x}}'>{{.x}}</p>`, true},
		{"html static script-like attribute", `<p style="color: red" onclick="f()">{{.x}}</p>`, true},
		{"html if in text", "<p>{{if .x}}<b>{{.x}}</b>{{else}}none{{end}}</p>", true},
		{"html range in text", "<ul>{{range .list}}<li><a href=\"{{.}}\">{{.}}</a></li>{{end}}</ul>", true},
		{"html missing map key", `<p>{{index .m "nope"}}</p>`, true},
		{"html number", "<p>{{.n}} items</p>", true},
		{"html self-closing", `<br/><img src="{{.x}}"/>`, true},
	}
	for _, tc := range accepted {
		t.Run(tc.name, func(t *testing.T) {
			tm, err := parseTemplate(tc.name, tc.src, tc.html)
			if err != nil {
				t.Fatalf("rejected: %v", err)
			}
			for _, h := range hostile {
				data := map[string]any{"x": h, "n": 3, "list": []any{h, "b"}, "m": map[string]any{"k": h},
					"items": []map[string]any{{"url": h}}}
				sameOutput(t, h, tm, data)
			}
			sameOutput(t, "empty list and zero", tm, map[string]any{"x": "", "n": 0, "list": []any{}, "m": map[string]any{"k": ""},
				"items": []map[string]any{{"url": ""}}})
			sameOutput(t, "missing key", tm, map[string]any{})
		})
	}

	rejected := []struct {
		name, src string
		html      bool
		want      string
	}{
		{"pipe", `{{"k" | index .m}}`, false, "pipes"},
		{"other function", `{{printf "%s" .x}}`, false, "not defined"},
		{"variable", "{{$y := .x}}{{$y}}", false, "variables"},
		{"with", "{{with .x}}{{.}}{{end}}", false, "not supported"},
		{"define", `{{define "a"}}x{{end}}y`, false, "define"},
		{"template call", `{{template "a"}}`, false, "not supported"},
		{"method call with arguments", "{{.x 1}}", false, "method calls"},
		{"range with variables", "{{range $i, $e := .list}}{{end}}", false, "variables"},
		{"html in a URL path", `<a href="https://x.example/{{.x}}">l</a>`, true, "whole start"},
		{"html two actions in a URL", `<a href="{{.x}}{{.x}}">l</a>`, true, "whole start"},
		{"html event handler", `<a onclick="{{.x}}">l</a>`, true, "href, src and plain"},
		{"html style attribute", `<p style="{{.x}}">l</p>`, true, "href, src and plain"},
		{"html data attribute", `<p data-url="{{.x}}">l</p>`, true, "href, src and plain"},
		{"html unquoted", `<a href={{.x}}>l</a>`, true, "quoted attribute values only"},
		{"html in a tag", `<a {{.x}}>l</a>`, true, "quoted attribute values only"},
		{"html attribute name", `<a x{{.x}}="1">l</a>`, true, "quoted attribute values only"},
		{"html script", "<script>var x = {{.x}};</script>", true, "<script>"},
		{"html style", "<style>p { color: {{.x}} }</style>", true, "<style>"},
		{"html title", "<title>{{.x}}</title>", true, "<title>"},
		{"html textarea", "<textarea>{{.x}}</textarea>", true, "<textarea>"},
		{"html meta", `<meta http-equiv="refresh" content="0;url={{.x}}">`, true, "<meta>"},
		{"html comment", "<!-- {{.x}} -->", true, "comments"},
		{"html lone angle", "a < b {{.x}}", true, "opens no tag"},
		{"html angle before action", "<{{.x}}>", true, "opens no tag"},
		{"html angle before space", "</ p>{{.x}}", true, "opens no tag"},
		{"html doctype", "<!doctype html><p>{{.x}}</p>", true, "comments"},
		{"html unterminated attribute", `<p title="{{.x}}>`, true, "ends inside"},
		{"html if inside a tag", `<p {{if .x}}class="a"{{end}}>`, true, "HTML text"},
		{"html branch ends in a tag", `{{if .x}}<p class="{{end}}">`, true, "end in HTML text"},
	}
	for _, tc := range rejected {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseTemplate(tc.name, tc.src, tc.html)
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

// Escaping matches html/template on many generated values: every context we
// accept, with strings built from the characters its escapers treat apart
// (percent escapes valid or cut short, scheme separators, quotes, NUL,
// invalid UTF-8).
func TestHTMLEscapingMatchesOnGeneratedValues(t *testing.T) {
	tm, err := parseHTML("gen", `<a href="{{.x}}" title="{{.x}}">{{.x}}</a><img src='{{.x}}'>`)
	if err != nil {
		t.Fatal(err)
	}
	pieces := []string{"%", "4", "1", "a", "F", "g", ":", "/", "?", "#", "&", "=", "+", "<", ">", `"`, "'", "(", ")", " ",
		"\x00", "\xff", "é", "😀", "javascript", "JAVA", "script", "http", "https", "mailto", "data", "~", "[", "]", "\\", "`"}
	seed := uint64(11)
	next := func(n int) int { // xorshift: reproducible without math/rand
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		return int(seed % uint64(n))
	}
	for range 3000 {
		var b strings.Builder
		for range 1 + next(8) {
			b.WriteString(pieces[next(len(pieces))])
		}
		sameOutput(t, b.String(), tm, map[string]any{"x": b.String()})
	}
}
