package app

import (
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/catalog"
)

func TestDepsFromTheEnvironment(t *testing.T) {
	env := map[string]string{"TABLE_NAME": "herald", "RETENTION_DAYS": "0"}
	d := Deps{Getenv: func(k string) string { return env[k] }}
	tests := []struct {
		name string
		run  func() error
		want string // substring of the error; "" for none
	}{
		{"all missing names at once", func() error { _, err := d.Require("A", "TABLE_NAME", "B"); return err }, "missing environment: A, B"},
		{"present", func() error { _, err := d.Require("TABLE_NAME"); return err }, ""},
		{"retention not positive", func() error { _, err := d.Stores(); return err }, "RETENTION_DAYS"},
		{"no catalog", d.RequireCatalog, "catalog is not loaded"},
		{"catalog", Deps{Catalog: &catalog.Catalog{}}.RequireCatalog, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}
