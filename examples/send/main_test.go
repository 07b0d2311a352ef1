package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/heraldhq/herald/client"
)

// The README's Go block is this program, verbatim.
func TestReadmeShowsThisProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```\n").FindAllStringSubmatch(string(readme), -1)
	if len(blocks) != 1 {
		t.Fatalf("README has %d Go blocks, want 1 (this program)", len(blocks))
	}
	if blocks[0][1] != string(prog) {
		t.Fatal("README's Go block differs from examples/send/main.go: copy the file into the README")
	}
}

// The program sends what make dev accepts: a dev caller (without one the
// local API answers 403, and the client, without an AWS region, would not
// start), the JSON body of a notification, and prints the id.
func TestProgramSends(t *testing.T) {
	var got struct {
		caller, key, path string
		body              map[string]any
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.caller, got.key, got.path = r.Header.Get(client.DevCallerHeader), r.Header.Get("Idempotency-Key"), r.URL.Path
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &got.body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, `{"id":"n1","status":"accepted","createdAt":"2026-01-02T03:04:05Z"}`)
	}))
	defer srv.Close()
	t.Setenv("API", srv.URL)
	// No AWS configuration at all, as on a fresh laptop.
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	main()
	os.Stdout = stdout
	w.Close()
	out, _ := io.ReadAll(r)

	if strings.TrimSpace(string(out)) != "n1 accepted" {
		t.Errorf("printed %q, want %q", out, "n1 accepted")
	}
	if got.path != "/v1/notifications" || got.caller == "" || got.key != "invoice-9-failed" {
		t.Errorf("request: path %q caller %q key %q", got.path, got.caller, got.key)
	}
	if got.body["type"] != "invoice.payment_failed" {
		t.Errorf("body %v", got.body)
	}
}
