package catalog

import (
	"errors"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/domain"
)

// Link variables are https only by default and, with the stack's LinkHosts,
// on a listed host: refused at intake with ErrLinkNotAllowed naming the
// variable.
func TestLinkVariablesFollowTheLinkPolicy(t *testing.T) {
	cat := MustLoad()
	typ, _ := cat.Lookup("invoice.payment_failed")
	var de *DataError
	if err := typ.ValidateData(map[string]any{"invoiceUrl": "http://example.com/i/9"}); !errors.Is(err, ErrLinkNotAllowed) || !errors.As(err, &de) || de.Variable != "invoiceUrl" {
		t.Errorf("an http link by default: %v, want ErrLinkNotAllowed for invoiceUrl", err)
	}
	if err := typ.ValidateData(map[string]any{"invoiceUrl": "https://anything.example/i/9"}); err != nil {
		t.Errorf("an https link without LinkHosts: %v", err)
	}
	policy, err := domain.ParseLinkPolicy("billing.example.com,*.example.org")
	if err != nil {
		t.Fatal(err)
	}
	limited, _ := cat.WithLinkPolicy(policy).Lookup("invoice.payment_failed")
	for link, ok := range map[string]bool{
		"https://billing.example.com/i/9": true,
		"https://app.example.org/i/9":     true,
		"https://evil.example.net/i/9":    false,
		"http://billing.example.com/i/9":  false,
	} {
		err := limited.ValidateData(map[string]any{"invoiceUrl": link})
		if (err == nil) != ok || !ok && !errors.Is(err, ErrLinkNotAllowed) {
			t.Errorf("%s: %v, want allowed=%v", link, err, ok)
		}
	}
	// The catalog it came from keeps its own policy.
	if err := typ.ValidateData(map[string]any{"invoiceUrl": "https://evil.example.net/i/9"}); err != nil {
		t.Errorf("WithLinkPolicy changed the original catalog: %v", err)
	}
}

// A notification accepted before LinkHosts was set (a deferred one, a
// retry) is rendered with its disallowed links removed, never shown.
func TestRenderDropsDisallowedLinks(t *testing.T) {
	policy, _ := domain.ParseLinkPolicy("example.com")
	cat := MustLoad().WithLinkPolicy(policy)
	typ, _ := cat.Lookup("invoice.payment_failed")
	evil := map[string]any{"invoiceUrl": "https://evil.example.net/phish"}
	for _, kind := range []Kind{KindEmail, KindPush, KindInApp} {
		c, err := typ.Render(kind, "en", evil)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if all := c.Subject + c.Text + c.HTML + c.Title + c.Body + c.URL; strings.Contains(all, "evil.example.net") {
			t.Errorf("%s shows the disallowed link: %+v", kind, c)
		}
	}
	if c, _ := typ.Render(KindPush, "en", map[string]any{"invoiceUrl": "https://example.com/i/9"}); c.URL != "https://example.com/i/9" {
		t.Errorf("an allowed link: %q", c.URL)
	}
	if evil["invoiceUrl"] != "https://evil.example.net/phish" {
		t.Error("rendering changed the caller's data")
	}
	digestible, _ := cat.Lookup("comment.created")
	c, err := digestible.RenderDigest(KindPush, "en", DigestData{Count: 2, Items: []map[string]any{
		{"actorLabel": "A", "url": "https://evil.example.net/c/1"}, {"actorLabel": "B", "url": "https://example.com/c/2"}}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(c.Body+c.URL, "evil.example.net") || !strings.Contains(c.Body, "https://example.com/c/2") {
		t.Errorf("digest %+v: want the allowed link only", c)
	}
}
