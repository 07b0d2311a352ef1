package events_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schemas compiles the repository's detail schemas (events/schemas).
func loadSchemas(t testing.TB) map[string]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	out := map[string]*jsonschema.Schema{}
	for detailType, file := range map[string]string{
		"Delivery State Change": "delivery-state-change.json",
		"Campaign State Change": "campaign-state-change.json",
	} {
		path, err := filepath.Abs(filepath.Join("..", "..", "events", "schemas", file))
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.Compile(path)
		if err != nil {
			t.Fatalf("compile %s: %v", file, err)
		}
		out[detailType] = s
	}
	return out
}

func validate(t testing.TB, schemas map[string]*jsonschema.Schema, detailType string, detail []byte) error {
	t.Helper()
	s, ok := schemas[detailType]
	if !ok {
		t.Fatalf("no schema for detail type %q", detailType)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(detail))
	if err != nil {
		t.Fatalf("detail is not JSON: %v", err)
	}
	return s.Validate(v)
}

func TestSchemasRejectWhatTheyMust(t *testing.T) {
	schemas := loadSchemas(t)
	good := map[string]any{"eventId": "dlv_0123456789abcdef0123456789abcdef", "version": "1", "notificationId": "n1", "type": "t",
		"caller": "billing", "userId": "u1", "channel": "email", "status": "sent", "attempts": 1, "at": "2026-01-02T03:04:05Z"}
	b, _ := json.Marshal(good)
	if err := validate(t, schemas, "Delivery State Change", b); err != nil {
		t.Fatalf("valid detail refused: %v", err)
	}
	for name, mut := range map[string]func(m map[string]any){
		"address field":  func(m map[string]any) { m["email"] = "a@example.com" },
		"unknown status": func(m map[string]any) { m["status"] = "queued" },
		"no caller":      func(m map[string]any) { delete(m, "caller") },
		"bad time":       func(m map[string]any) { m["at"] = "yesterday" },
	} {
		m := map[string]any{}
		for k, v := range good {
			m[k] = v
		}
		mut(m)
		b, _ := json.Marshal(m)
		if validate(t, schemas, "Delivery State Change", b) == nil {
			t.Errorf("%s: schema accepted %s", name, b)
		}
	}
	if _, err := os.Stat(filepath.Join("..", "..", "events", "schemas", "campaign-state-change.json")); err != nil {
		t.Fatal(err)
	}
}
