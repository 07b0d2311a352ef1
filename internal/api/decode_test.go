package api

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// checkDecoderAgrees compares decodeNotificationRequest (json/v2, strict)
// with encoding/json on one body: what the strict decoder accepts,
// encoding/json decodes to the same request; what it refuses as a type
// error, encoding/json refuses too. (It is stricter on keys — case, repeats,
// unknown — by design.)
func checkDecoderAgrees(t *testing.T, body string) {
	t.Helper()
	if !utf8.ValidString(body) { // encoding/json would repair it; we refuse
		return
	}
	var fast batchItem
	p := decodeNotificationRequest([]byte(body), &fast.notificationRequest, &fast.IdempotencyKey)
	var std batchItem
	err := json.Unmarshal([]byte(body), &std)
	if p == nil {
		if err != nil {
			t.Fatalf("accepted %q, encoding/json says %v", body, err)
		}
		if string(std.Data) == "null" {
			std.Data = nil
		}
		if len(fast.Data) == 0 {
			fast.Data = nil
		}
		if len(std.Data) == 0 {
			std.Data = nil
		}
		if !reflect.DeepEqual(fast, std) {
			t.Fatalf("decoded %q\n as %+v\nencoding/json %+v", body, fast, std)
		}
		return
	}
	var typ *json.UnmarshalTypeError
	if p.Code == "invalid_type" && p.Pointer == "/channels" && err == nil && std.Channels == nil {
		return // "channels": null is refused by design (the schema: an array of at least one)
	}
	if p.Code == "invalid_type" && !errors.As(err, &typ) {
		t.Fatalf("type error %s for %q, encoding/json says %v", p.Pointer, body, err)
	}
	trimmed := strings.TrimSpace(body)
	if p.Code == "invalid_json" && err == nil && strings.HasPrefix(trimmed, "{") {
		t.Fatalf("refused the object %q as invalid JSON, encoding/json decoded it", body)
	}
}

func TestDecoderAgreesWithEncodingJSON(t *testing.T) {
	bodies := []string{
		validInvoice,
		`{"idempotencyKey":"k","type":"a\"b\\c\u00e9\ud83d\ude00","recipient":{"userId":"u","email":null,"locale":"ja"},"channels":["email","sms"],"data":{"a":"b","n":{"x":[1,2]}},"sendAt":"x","expiresAt":"y","priority":"low","resourceId":"r","batchKey":"b"}`,
		`{"data":null,"recipient":null,"channels":null,"type":null}`,
		`{"data":null,"recipient":null,"type":null}`,
		` { "type" : "t" , "channels" : [ ] , "data" : [ 1 ] } `,
		`{"typ\u0065":"escaped key"}`,
		`{"type":1}`, `{"channels":"email"}`, `{"channels":[true]}`, `{"recipient":[]}`, `{"recipient":{"userId":{}}}`,
		`{"data":5}`, `{"type":"\ud800"}`, `{}`, `{"type":"a"}x`, `[]`, `1`, `{"type":"x","type":"y"}`,
	}
	for _, b := range bodies {
		checkDecoderAgrees(t, b)
	}
	var it batchItem
	if p := decodeNotificationRequest([]byte(`{"typ\u0065":"escaped key"}`), &it.notificationRequest, &it.IdempotencyKey); p != nil || it.Type != "escaped key" {
		t.Fatalf("escaped key: %v %+v", p, it)
	}
}
