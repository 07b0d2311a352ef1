package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/webpush"
)

func TestVAPIDKeysPrintsAValidPair(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := runVAPIDKeys(nil, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		k, v, _ := strings.Cut(line, "=")
		env[k] = v
	}
	if _, err := webpush.ParseVAPIDKeys(env["VAPID_PUBLIC_KEY"], env["VAPID_PRIVATE_KEY"]); err != nil {
		t.Fatalf("printed keys do not form a pair: %v\n%s", err, out.String())
	}
	if strings.Contains(errOut.String(), env["VAPID_PRIVATE_KEY"]) || !strings.Contains(errOut.String(), "put-parameter") {
		t.Errorf("instructions: %s", errOut.String())
	}

	out.Reset()
	if err := runVAPIDKeys([]string{"-json"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	var keys struct{ PublicKey, PrivateKey string }
	if err := json.Unmarshal(out.Bytes(), &keys); err != nil {
		t.Fatal(err)
	}
	if _, err := webpush.ParseVAPIDKeys(keys.PublicKey, keys.PrivateKey); err != nil {
		t.Fatal(err)
	}
	if keys.PublicKey == env["VAPID_PUBLIC_KEY"] {
		t.Fatal("two runs printed the same key")
	}
}
