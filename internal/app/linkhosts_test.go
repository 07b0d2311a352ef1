package app

import (
	"errors"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/catalog"
)

// LinkedCatalog puts the catalog under LINK_HOSTS: a link elsewhere is
// refused; an unreadable LINK_HOSTS fails the function's start.
func TestLinkedCatalog(t *testing.T) {
	deps := func(hosts string) Deps {
		return Deps{Getenv: func(k string) string { return map[string]string{"LINK_HOSTS": hosts}[k] }, Catalog: catalog.MustLoad()}
	}
	cat, err := deps("example.com").LinkedCatalog()
	if err != nil {
		t.Fatal(err)
	}
	typ, _ := cat.Lookup("invoice.payment_failed")
	if err := typ.ValidateData(map[string]any{"invoiceUrl": "https://evil.example.net/x"}); !errors.Is(err, catalog.ErrLinkNotAllowed) {
		t.Errorf("another host: %v, want ErrLinkNotAllowed", err)
	}
	if err := typ.ValidateData(map[string]any{"invoiceUrl": "https://example.com/x"}); err != nil {
		t.Errorf("the allowed host: %v", err)
	}
	if _, err := deps("example.com/path").LinkedCatalog(); err == nil || !strings.Contains(err.Error(), "LINK_HOSTS") {
		t.Errorf("a bad LINK_HOSTS: %v, want refused naming it", err)
	}
	if _, err := (Deps{Getenv: func(string) string { return "" }}).LinkedCatalog(); err == nil {
		t.Error("no catalog: want an error")
	}
}
