package catalog

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/heraldhq/herald/internal/domain"
)

func TestLoadShipsTheSampleTypes(t *testing.T) {
	c := MustLoad()
	want := map[string]struct {
		prio      domain.Priority
		mandatory bool
		channels  []domain.Channel
	}{
		"invoice.payment_failed": {domain.PriorityHigh, false, []domain.Channel{domain.ChannelEmail, domain.ChannelPush}},
		"comment.created":        {domain.PriorityLow, false, []domain.Channel{domain.ChannelPush}},
		"security.login_alert":   {domain.PriorityHigh, true, []domain.Channel{domain.ChannelEmail, domain.ChannelSMS}},
		"otp.code":               {domain.PriorityHigh, true, []domain.Channel{domain.ChannelSMS}},
		"reservation.approved":   {domain.PriorityNormal, false, []domain.Channel{domain.ChannelEmail, domain.ChannelPush}},
	}
	for name, w := range want {
		typ, ok := c.Lookup(name)
		if !ok {
			t.Fatalf("type %s missing", name)
		}
		if typ.Priority != w.prio || typ.Mandatory != w.mandatory || len(typ.Channels) != len(w.channels) {
			t.Errorf("%s = %v/%v/%v", name, typ.Priority, typ.Mandatory, typ.Channels)
		}
		for _, ch := range w.channels {
			if !typ.HasChannel(ch) {
				t.Errorf("%s lacks %s", name, ch)
			}
		}
		for _, l := range []string{"en", "ja"} {
			if typ.ResolveLocale(l) != l {
				t.Errorf("%s has no %s templates", name, l)
			}
		}
	}
}

func TestResolveLocaleFallback(t *testing.T) {
	typ, _ := MustLoad().Lookup("invoice.payment_failed")
	for in, want := range map[string]string{"ja-JP": "ja", "ja": "ja", "JA-jp": "ja", "fr-FR": "en", "": "en", "en-GB": "en"} {
		if got := typ.ResolveLocale(in); got != want {
			t.Errorf("ResolveLocale(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRenderEmailEscapesHTML(t *testing.T) {
	typ, _ := MustLoad().Lookup("invoice.payment_failed")
	c, err := typ.Render(KindEmail, "en-US", map[string]any{"invoiceUrl": `https://example.com/i/9?a=1&b="<x>"`})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(c.Subject, "payment failed") || !strings.Contains(c.Text, "https://example.com/i/9?a=1&b=\"<x>\"") {
		t.Errorf("unexpected text: %+v", c)
	}
	if strings.Contains(c.HTML, "<x>") || !strings.Contains(c.HTML, "&amp;") {
		t.Errorf("HTML not escaped: %s", c.HTML)
	}
	ja, err := typ.Render(KindPush, "ja-JP", map[string]any{"invoiceUrl": "https://example.com/i/9"})
	if err != nil || !strings.Contains(ja.Title, "失敗") || ja.URL != "https://example.com/i/9" {
		t.Errorf("ja push = %+v, %v", ja, err)
	}
	if _, err := typ.Render(KindSMS, "en", nil); !errors.Is(err, ErrNoTemplate) {
		t.Errorf("sms render error = %v, want ErrNoTemplate", err)
	}
}

func TestUndeclaredVariableFailsLoad(t *testing.T) {
	fsys := fstest.MapFS{"types/x.y.yaml": {Data: []byte(`
type: x.y
priority: low
channels: [push]
variables: {url: {kind: url}}
templates:
  en:
    push: {title: "Hi {{.name}}", body: "b", url: "{{.url}}"}
    inapp: {title: "t", body: "b"}
`)}}
	_, err := LoadFS(fsys, "types")
	if err == nil || !strings.Contains(err.Error(), `undeclared variable "name"`) {
		t.Fatalf("LoadFS error = %v", err)
	}
}

func TestValidateData(t *testing.T) {
	typ, _ := MustLoad().Lookup("invoice.payment_failed")
	otp, _ := MustLoad().Lookup("otp.code")
	tests := []struct {
		name    string
		typ     *Type
		data    map[string]any
		wantVar string
	}{
		{"ok", typ, map[string]any{"invoiceUrl": "https://example.com/i/9"}, ""},
		{"missing", typ, map[string]any{}, "invoiceUrl"},
		{"nil data", typ, nil, "invoiceUrl"},
		{"undeclared", typ, map[string]any{"invoiceUrl": "https://e.com", "amount": "9"}, "amount"},
		{"not a url", typ, map[string]any{"invoiceUrl": "javascript:alert(1)"}, "invoiceUrl"},
		{"not a string", typ, map[string]any{"invoiceUrl": 9.0}, "invoiceUrl"},
		{"code ok", otp, map[string]any{"code": "123456"}, ""},
		{"code with space", otp, map[string]any{"code": "12 34"}, "code"},
		{"code too long", otp, map[string]any{"code": "12345678901"}, "code"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.typ.ValidateData(tt.data)
			var de *DataError
			switch {
			case tt.wantVar == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tt.wantVar != "" && (!errors.As(err, &de) || de.Variable != tt.wantVar):
				t.Fatalf("error = %v, want one naming %s", err, tt.wantVar)
			}
		})
	}
}

func TestLoadWithoutSampleRendersParsesTheSameCatalog(t *testing.T) {
	checked, unchecked := MustLoad(), must(LoadWithoutSampleRenders())
	if !slices.Equal(checked.Names(), unchecked.Names()) || len(checked.Names()) == 0 {
		t.Fatalf("types %v, without sample renders %v", checked.Names(), unchecked.Names())
	}
}

func must(c *Catalog, err error) *Catalog {
	if err != nil {
		panic(err)
	}
	return c
}

func TestLabel(t *testing.T) {
	c := MustLoad()
	typ, _ := c.Lookup("security.login_alert")
	for locale, want := range map[string]string{"en": "Sign-in alerts", "ja": "ログイン通知", "ja-JP": "ログイン通知", "fr": "Sign-in alerts", "": "Sign-in alerts"} {
		if got := typ.Label(locale); got != want {
			t.Errorf("Label(%q) = %q, want %q", locale, got, want)
		}
	}
	for _, name := range c.Names() {
		typ, _ := c.Lookup(name)
		for _, l := range []string{"en", "ja"} {
			if typ.Label(l) == name {
				t.Errorf("%s has no %s label", name, l)
			}
		}
	}
	bare, err := parseType([]byte("type: x.y\nchannels: [push]\npriority: low\ntemplates:\n  en:\n    push: {title: t, body: b}\n    inapp: {title: t, body: b}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := bare.Label("ja"); got != "x.y" {
		t.Errorf("unlabelled type's label = %q", got)
	}
}
