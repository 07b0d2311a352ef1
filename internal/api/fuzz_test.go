package api

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzDecodeNotification feeds arbitrary bodies and idempotency keys through
// the whole intake path (decode, key check, validation, hashing, store, encode)
// with an in-memory store. Whatever the input: no panic, no 5xx, a JSON
// response, a problem document for every refusal, and the strict decoder
// agreeing with encoding/json. `go test` runs the seed
// corpus (every body of the validation corpus plus good requests); run
// `go test -fuzz FuzzDecodeNotification ./internal/api` to explore.
func FuzzDecodeNotification(f *testing.F) {
	for _, br := range badRequests(f) {
		if br.route == "" && !br.base64 {
			f.Add(br.body, br.headers["Idempotency-Key"])
		}
	}
	for _, good := range []string{
		validInvoice,
		`{"type":"otp.code","recipient":{"userId":"u1","phone":"+15551234567","locale":"ja-JP"},"data":{"code":"123456"},"priority":"normal","channels":["sms"],"sendAt":"2026-03-01T12:30:00Z","expiresAt":"2026-03-01T13:00:00+01:00"}`,
		`{"type":"comment.created","recipient":{"userId":"u1"},"resourceId":"c1","batchKey":"thread-9","data":{"actorLabel":"Ann","url":"https://example.com/c/1"}}`,
		`{"type":"invoice.payment_failed","recipient":{"userId":"u1"},"data":{"invoiceUrl":"https://example.com/i/9","x":{"y":[1,{"z":null}]}}}`,
	} {
		f.Add(good, "key-1")
		f.Add(good, "")
	}
	ta := newTestAPI(f)
	f.Fuzz(func(t *testing.T, body, key string) {
		checkDecoderAgrees(t, body)
		c := apiCall{route: "POST /v1/notifications", body: body, caller: "svc", headers: map[string]string{}}
		if key != "" {
			c.headers["Idempotency-Key"] = key
		}
		resp := ta.do(t, c)
		if resp.StatusCode >= 500 || resp.StatusCode < 200 {
			t.Fatalf("status %d for %q: %s", resp.StatusCode, body, resp.Body)
		}
		if !json.Valid([]byte(resp.Body)) {
			t.Fatalf("response is not JSON: %q", resp.Body)
		}
		if resp.StatusCode >= 400 {
			p := decodeProblem(t, resp)
			if p.Pointer != "" && !strings.HasPrefix(p.Pointer, "/") {
				t.Fatalf("pointer %q is not a JSON pointer", p.Pointer)
			}
		} else if resp.StatusCode != 202 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
}
