package api

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
)

// badRequest is one entry of the validation corpus: a request that must be
// refused with a 4xx, a stable code and the offending field, and store nothing.
type badRequest struct {
	name    string
	route   string // default POST /v1/notifications
	params  map[string]string
	body    string
	headers map[string]string
	base64  bool
	status  int
	code    string
	pointer string
	header  string // expected Problem.Header
	param   string // expected Problem.Parameter
}

// notif builds a notification body from a valid invoice request with the
// given top-level fields replaced (raw JSON values; "" removes the field).
func notif(fields ...string) string {
	base := [][2]string{
		{"type", `"invoice.payment_failed"`},
		{"recipient", `{"userId":"u1"}`},
		{"data", `{"invoiceUrl":"https://example.com/i/9"}`},
	}
	for i := 0; i+1 < len(fields); i += 2 {
		replaced := false
		for j := range base {
			if base[j][0] == fields[i] {
				base[j][1], replaced = fields[i+1], true
			}
		}
		if !replaced {
			base = append(base, [2]string{fields[i], fields[i+1]})
		}
	}
	var parts []string
	for _, kv := range base {
		if kv[1] != "" {
			parts = append(parts, fmt.Sprintf("%q:%s", kv[0], kv[1]))
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func q(s string) string { return fmt.Sprintf("%q", s) }

func p256dhKey(t testing.TB) string {
	k, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(k.PublicKey().Bytes())
}

func badRequests(t testing.TB) []badRequest {
	p256 := p256dhKey(t)
	auth := base64.RawURLEncoding.EncodeToString(make([]byte, 16))
	sub := func(endpoint, p256dh, auth string) string {
		return fmt.Sprintf(`{"endpoint":%q,"keys":{"p256dh":%q,"auth":%q}}`, endpoint, p256dh, auth)
	}
	user := map[string]string{"userId": "u1"}
	const users, subs, prefs, batch = "PUT /v1/users/{userId}", "POST /v1/users/{userId}/push-subscriptions", "PUT /v1/users/{userId}/preferences", "POST /v1/notifications/batch"
	batchOf := func(n int) string {
		items := make([]string, n)
		for i := range items {
			items[i] = fmt.Sprintf(`{"idempotencyKey":"k%d","type":"otp.code","recipient":{"userId":"u1"},"data":{"code":"1"}}`, i)
		}
		return `{"notifications":[` + strings.Join(items, ",") + `]}`
	}
	return []badRequest{
		// Body syntax and limits.
		{name: "empty body", body: "", status: 400, code: "invalid_json"},
		{name: "only whitespace", body: " \n\t", status: 400, code: "invalid_json"},
		{name: "truncated JSON", body: `{"type":`, status: 400, code: "invalid_json"},
		{name: "array body", body: `[]`, status: 400, code: "invalid_json"},
		{name: "string body", body: `"hello"`, status: 400, code: "invalid_json"},
		{name: "null body", body: `null`, status: 400, code: "invalid_json"},
		{name: "two objects", body: `{}{}`, status: 400, code: "invalid_json"},
		{name: "trailing garbage", body: notif() + " x", status: 400, code: "invalid_json"},
		{name: "invalid UTF-8", body: notif("batchKey", "\"\xff\xfe\""), status: 400, code: "invalid_json"},
		{name: "body over 64 KiB", body: notif("batchKey", q(strings.Repeat("a", 65<<10))), status: 413, code: "body_too_large"},
		{name: "invalid base64 body", body: "%%%", base64: true, status: 400, code: "invalid_body"},
		// Media type: JSON only, never encoded.
		{name: "text/plain body", body: notif(), headers: map[string]string{"Content-Type": "text/plain"}, status: 415, code: "unsupported_media_type", header: "Content-Type"},
		{name: "form body", body: notif(), headers: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, status: 415, code: "unsupported_media_type", header: "Content-Type"},
		{name: "no Content-Type", body: notif(), headers: map[string]string{"Content-Type": ""}, status: 415, code: "unsupported_media_type", header: "Content-Type"},
		{name: "JSON look-alike media type", body: notif(), headers: map[string]string{"Content-Type": "application/jsonp"}, status: 415, code: "unsupported_media_type", header: "Content-Type"},
		{name: "JSON in latin-1", body: notif(), headers: map[string]string{"Content-Type": "application/json; charset=iso-8859-1"}, status: 415, code: "unsupported_media_type", header: "Content-Type"},
		{name: "JSON with another parameter", body: notif(), headers: map[string]string{"Content-Type": "application/json; boundary=x"}, status: 415, code: "unsupported_media_type", header: "Content-Type"},
		{name: "gzip-encoded body", body: notif(), headers: map[string]string{"Content-Encoding": "gzip"}, status: 415, code: "unsupported_media_type", header: "Content-Encoding"},
		{name: "identity Content-Encoding", body: notif(), headers: map[string]string{"Content-Encoding": "identity"}, status: 415, code: "unsupported_media_type", header: "Content-Encoding"},
		{name: "user body as text", route: "PUT /v1/users/{userId}", params: map[string]string{"userId": "u1"}, body: `{"email":"a@example.com"}`, headers: map[string]string{"Content-Type": "text/plain"}, status: 415, code: "unsupported_media_type", header: "Content-Type"},
		// Keys.
		{name: "unknown field", body: notif("foo", "1"), status: 400, code: "unknown_field", pointer: "/foo"},
		{name: "unknown nested field", body: notif("recipient", `{"userId":"u1","name":"Ann"}`), status: 400, code: "unknown_field", pointer: "/recipient/name"},
		{name: "field in another case", body: `{"Type":"otp.code"}`, status: 400, code: "unknown_field", pointer: "/Type"},
		{name: "unknown field with a slash", body: `{"a/b~c":1}`, status: 400, code: "unknown_field", pointer: "/a~1b~0c"},
		{name: "repeated field", body: `{"type":"otp.code","type":"invoice.payment_failed"}`, status: 400, code: "duplicate_field", pointer: "/type"},
		{name: "repeated field spelled with an escape", body: `{"type":"otp.code","typ\u0065":"x"}`, status: 400, code: "duplicate_field", pointer: "/type"},
		{name: "repeated data variable", body: notif("data", `{"invoiceUrl":"https://a.example/","invoiceUrl":"https://b.example/"}`), status: 400, code: "duplicate_field", pointer: "/data/invoiceUrl"},
		// Types.
		{name: "type is a number", body: notif("type", "5"), status: 400, code: "invalid_type", pointer: "/type"},
		{name: "recipient is a string", body: notif("recipient", `"u1"`), status: 400, code: "invalid_type", pointer: "/recipient"},
		{name: "userId is a number", body: notif("recipient", `{"userId":1}`), status: 400, code: "invalid_type", pointer: "/recipient/userId"},
		{name: "channels is null", body: notif("channels", `null`), status: 400, code: "invalid_type", pointer: "/channels"},
		{name: "channels is a string", body: notif("channels", `"email"`), status: 400, code: "invalid_type", pointer: "/channels"},
		{name: "channel is a number", body: notif("channels", `["email",1]`), status: 400, code: "invalid_type", pointer: "/channels/1"},
		{name: "priority is a boolean", body: notif("priority", `true`), status: 400, code: "invalid_type", pointer: "/priority"},
		{name: "data is an array", body: notif("data", `["https://example.com"]`), status: 400, code: "invalid_type", pointer: "/data"},
		{name: "data is a string", body: notif("data", `"x"`), status: 400, code: "invalid_type", pointer: "/data"},
		{name: "sendAt is a number", body: notif("sendAt", `1767225600`), status: 400, code: "invalid_type", pointer: "/sendAt"},
		// Required fields and the catalog.
		{name: "missing type", body: notif("type", ""), status: 400, code: "missing_field", pointer: "/type"},
		{name: "empty type", body: notif("type", `""`), status: 400, code: "missing_field", pointer: "/type"},
		{name: "unknown type", body: notif("type", `"nope.nope"`), status: 422, code: "unknown_type", pointer: "/type"},
		{name: "missing recipient", body: notif("recipient", ""), status: 400, code: "missing_field", pointer: "/recipient/userId"},
		{name: "empty userId", body: notif("recipient", `{"userId":""}`), status: 400, code: "missing_field", pointer: "/recipient/userId"},
		// An email address as a user id would reach logs and metrics (issue 13).
		{name: "userId shaped like an email address", body: notif("recipient", `{"userId":"carol@corp.example"}`), status: 400, code: "invalid_user_id", pointer: "/recipient/userId"},
		{name: "path userId shaped like an email address", route: "PUT /v1/users/{userId}", params: map[string]string{"userId": "carol@corp.example"}, body: `{}`, status: 400, code: "invalid_user_id", param: "userId"},
		{name: "userId with a space", body: notif("recipient", `{"userId":"a b"}`), status: 400, code: "invalid_user_id", pointer: "/recipient/userId"},
		{name: "userId too long", body: notif("recipient", `{"userId":"`+strings.Repeat("u", 129)+`"}`), status: 400, code: "invalid_user_id", pointer: "/recipient/userId"},
		{name: "userId with a control character", body: notif("recipient", `{"userId":"u\u00071"}`), status: 400, code: "invalid_user_id", pointer: "/recipient/userId"},
		// Contacts.
		{name: "email without @", body: notif("recipient", `{"userId":"u1","email":"not-an-email"}`), status: 400, code: "invalid_email", pointer: "/recipient/email"},
		{name: "email with a display name", body: notif("recipient", `{"userId":"u1","email":"Ann <ann@example.com>"}`), status: 400, code: "invalid_email", pointer: "/recipient/email"},
		{name: "email without a domain dot", body: notif("recipient", `{"userId":"u1","email":"ann@localhost"}`), status: 400, code: "invalid_email", pointer: "/recipient/email"},
		{name: "email with a newline", body: notif("recipient", `{"userId":"u1","email":"ann@example.com\nBcc: x@example.com"}`), status: 400, code: "invalid_email", pointer: "/recipient/email"},
		{name: "phone with dashes", body: notif("recipient", `{"userId":"u1","phone":"555-123-4567"}`), status: 400, code: "invalid_phone", pointer: "/recipient/phone"},
		{name: "phone without plus", body: notif("recipient", `{"userId":"u1","phone":"15551234567"}`), status: 400, code: "invalid_phone", pointer: "/recipient/phone"},
		{name: "phone too long", body: notif("recipient", `{"userId":"u1","phone":"+1555123456789012"}`), status: 400, code: "invalid_phone", pointer: "/recipient/phone"},
		{name: "locale is a word", body: notif("recipient", `{"userId":"u1","locale":"english"}`), status: 400, code: "invalid_locale", pointer: "/recipient/locale"},
		{name: "locale with underscore", body: notif("recipient", `{"userId":"u1","locale":"ja_JP"}`), status: 400, code: "invalid_locale", pointer: "/recipient/locale"},
		// Priority and channels.
		{name: "unknown priority", body: notif("priority", `"urgent"`), status: 400, code: "invalid_priority", pointer: "/priority"},
		{name: "priority in capitals", body: notif("priority", `"HIGH"`), status: 400, code: "invalid_priority", pointer: "/priority"},
		{name: "unknown channel", body: notif("channels", `["fax"]`), status: 400, code: "invalid_channel", pointer: "/channels/0"},
		{name: "inapp is not a channel", body: notif("channels", `["email","inapp"]`), status: 400, code: "invalid_channel", pointer: "/channels/1"},
		{name: "empty channel list", body: notif("channels", `[]`), status: 400, code: "invalid_channel", pointer: "/channels"},
		{name: "channel twice", body: notif("channels", `["email","email"]`), status: 400, code: "duplicate_channel", pointer: "/channels/1"},
		{name: "channel the type lacks", body: notif("channels", `["sms"]`), status: 422, code: "unsupported_channel", pointer: "/channels/0"},
		// Keys and strings.
		{name: "resourceId too long", body: notif("resourceId", q(strings.Repeat("r", 256))), status: 400, code: "invalid_string", pointer: "/resourceId"},
		{name: "resourceId with a control character", body: notif("resourceId", `"r\u0000"`), status: 400, code: "invalid_string", pointer: "/resourceId"},
		{name: "batchKey with a C1 control", body: notif("batchKey", `"b\u0085"`), status: 400, code: "invalid_string", pointer: "/batchKey"},
		{name: "resourceId with a right-to-left override", body: notif("resourceId", `"inv-\u202egpj.exe"`), status: 400, code: "invalid_string", pointer: "/resourceId"},
		{name: "batchKey with a bidi isolate", body: notif("batchKey", `"b\u2067x\u2069"`), status: 400, code: "invalid_string", pointer: "/batchKey"},
		// Data.
		{name: "data over 16 KiB", body: notif("data", `{"invoiceUrl":"https://example.com/`+strings.Repeat("a", 16<<10)+`"}`), status: 413, code: "data_too_large", pointer: "/data"},
		{name: "missing variable", body: notif("data", `{}`), status: 422, code: "missing_variable", pointer: "/data/invoiceUrl"},
		{name: "no data at all", body: notif("data", ""), status: 422, code: "missing_variable", pointer: "/data/invoiceUrl"},
		{name: "undeclared variable", body: notif("data", `{"invoiceUrl":"https://example.com/i/9","amount":"12"}`), status: 422, code: "undeclared_variable", pointer: "/data/amount"},
		{name: "variable is a number", body: notif("data", `{"invoiceUrl":9}`), status: 422, code: "invalid_variable", pointer: "/data/invoiceUrl"},
		{name: "url variable with javascript:", body: notif("data", `{"invoiceUrl":"javascript:alert(1)"}`), status: 422, code: "invalid_variable", pointer: "/data/invoiceUrl"},
		{name: "url variable with user info", body: notif("data", `{"invoiceUrl":"https://evil.com@example.com/"}`), status: 422, code: "invalid_variable", pointer: "/data/invoiceUrl"},
		{name: "url variable with user and password", body: notif("data", `{"invoiceUrl":"https://a:b@example.com/"}`), status: 422, code: "invalid_variable", pointer: "/data/invoiceUrl"},
		{name: "url variable with a space", body: notif("data", `{"invoiceUrl":"https://example.com/a b"}`), status: 422, code: "invalid_variable", pointer: "/data/invoiceUrl"},
		{name: "url variable over plain http", body: notif("data", `{"invoiceUrl":"http://example.com/i/9"}`), status: 422, code: "link_not_allowed", pointer: "/data/invoiceUrl"},
		{name: "code variable too long", body: `{"type":"otp.code","recipient":{"userId":"u1"},"data":{"code":"12345678901"}}`, status: 422, code: "invalid_variable", pointer: "/data/code"},
		{name: "variable longer than its SMS budget", body: `{"type":"security.login_alert","recipient":{"userId":"u1"},"data":{"url":"https://example.com/` + strings.Repeat("s", 30) + `"}}`, status: 422, code: "invalid_variable", pointer: "/data/url"},
		{name: "variable with a control character", body: notif("data", `{"invoiceUrl":"https://example.com/\u001b[2J"}`), status: 400, code: "invalid_string", pointer: "/data/invoiceUrl"},
		{name: "data key with a control character", body: notif("data", `{"invoiceUrl":"https://example.com/","a\tb":"x"}`), status: 400, code: "invalid_string", pointer: "/data/a\tb"},
		{name: "data key with a bidi mark", body: notif("data", `{"invoiceUrl":"https://example.com/","a\u200fb":"x"}`), status: 400, code: "invalid_string", pointer: "/data/a\u200fb"},
		// Times.
		{name: "sendAt in words", body: notif("sendAt", `"tomorrow"`), status: 400, code: "invalid_time", pointer: "/sendAt"},
		{name: "sendAt without offset", body: notif("sendAt", `"2026-03-02T10:00:00"`), status: 400, code: "invalid_time", pointer: "/sendAt"},
		{name: "sendAt two minutes ago", body: notif("sendAt", `"2026-03-01T11:58:00Z"`), status: 400, code: "send_at_out_of_range", pointer: "/sendAt"},
		{name: "sendAt two years ahead", body: notif("sendAt", `"2028-03-01T12:00:00Z"`), status: 400, code: "send_at_out_of_range", pointer: "/sendAt"},
		{name: "expiresAt malformed", body: notif("expiresAt", `"2026-13-01T00:00:00Z"`), status: 400, code: "invalid_time", pointer: "/expiresAt"},
		{name: "expiresAt before sendAt", body: notif("sendAt", `"2026-03-02T10:00:00Z"`, "expiresAt", `"2026-03-02T09:00:00Z"`), status: 400, code: "expires_before_send_at", pointer: "/expiresAt"},
		{name: "expiresAt equal to sendAt", body: notif("sendAt", `"2026-03-02T10:00:00Z"`, "expiresAt", `"2026-03-02T19:00:00+09:00"`), status: 400, code: "expires_before_send_at", pointer: "/expiresAt"},
		{name: "expiresAt in the past", body: notif("expiresAt", `"2026-03-01T11:00:00Z"`), status: 400, code: "expires_in_past", pointer: "/expiresAt"},
		// Idempotency-Key header.
		{name: "empty idempotency key", body: notif(), headers: map[string]string{"Idempotency-Key": ""}, status: 400, code: "invalid_idempotency_key", header: "Idempotency-Key"},
		{name: "idempotency key too long", body: notif(), headers: map[string]string{"Idempotency-Key": strings.Repeat("k", 256)}, status: 400, code: "invalid_idempotency_key", header: "Idempotency-Key"},
		{name: "non-ASCII idempotency key", body: notif(), headers: map[string]string{"Idempotency-Key": "ключ"}, status: 400, code: "invalid_idempotency_key", header: "Idempotency-Key"},
		{name: "idempotency key with a tab", body: notif(), headers: map[string]string{"Idempotency-Key": "a\tb"}, status: 400, code: "invalid_idempotency_key", header: "Idempotency-Key"},
		// Batch envelope.
		{name: "batch: empty body", route: batch, body: "", status: 400, code: "invalid_json"},
		{name: "batch: no notifications", route: batch, body: `{}`, status: 400, code: "missing_field", pointer: "/notifications"},
		{name: "batch: empty list", route: batch, body: `{"notifications":[]}`, status: 400, code: "missing_field", pointer: "/notifications"},
		{name: "batch: 101 items", route: batch, body: batchOf(101), status: 400, code: "batch_too_large", pointer: "/notifications"},
		{name: "batch: unknown field", route: batch, body: `{"notifications":[],"dryRun":true}`, status: 400, code: "unknown_field", pointer: "/dryRun"},
		{name: "batch: notifications is an object", route: batch, body: `{"notifications":{}}`, status: 400, code: "invalid_type", pointer: "/notifications"},
		{name: "batch: over 1 MiB", route: batch, body: `{"notifications":[` + q(strings.Repeat("a", 1<<20)) + `]}`, status: 413, code: "body_too_large"},
		// Users.
		{name: "user: bad userId parameter", route: users, params: map[string]string{"userId": "a b"}, body: `{}`, status: 400, code: "invalid_user_id", param: "userId"},
		{name: "user: unknown timezone", route: users, params: user, body: `{"timezone":"Mars/Olympus_Mons"}`, status: 400, code: "invalid_timezone", pointer: "/timezone"},
		{name: "user: Local is not a timezone", route: users, params: user, body: `{"timezone":"Local"}`, status: 400, code: "invalid_timezone", pointer: "/timezone"},
		{name: "user: timezone path traversal", route: users, params: user, body: `{"timezone":"../../etc/passwd"}`, status: 400, code: "invalid_timezone", pointer: "/timezone"},
		{name: "user: quiet hours start 25:00", route: users, params: user, body: `{"quietHours":{"start":"25:00","end":"08:00"}}`, status: 400, code: "invalid_quiet_hours", pointer: "/quietHours/start"},
		{name: "user: quiet hours end without leading zero", route: users, params: user, body: `{"quietHours":{"start":"22:00","end":"8:00"}}`, status: 400, code: "invalid_quiet_hours", pointer: "/quietHours/end"},
		{name: "user: quiet hours without end", route: users, params: user, body: `{"quietHours":{"start":"22:00"}}`, status: 400, code: "invalid_quiet_hours", pointer: "/quietHours/end"},
		{name: "user: empty quiet hours window", route: users, params: user, body: `{"quietHours":{"start":"22:00","end":"22:00"}}`, status: 400, code: "invalid_quiet_hours", pointer: "/quietHours"},
		{name: "user: quiet hours unknown field", route: users, params: user, body: `{"quietHours":{"start":"22:00","end":"08:00","tz":"UTC"}}`, status: 400, code: "unknown_field", pointer: "/quietHours/tz"},
		{name: "user: negative digest", route: users, params: user, body: `{"digestMinutes":-1}`, status: 400, code: "invalid_digest_minutes", pointer: "/digestMinutes"},
		{name: "user: digest over a day", route: users, params: user, body: `{"digestMinutes":1441}`, status: 400, code: "invalid_digest_minutes", pointer: "/digestMinutes"},
		{name: "user: fractional digest", route: users, params: user, body: `{"digestMinutes":1.5}`, status: 400, code: "invalid_type", pointer: "/digestMinutes"},
		{name: "user: bad email", route: users, params: user, body: `{"email":"nope"}`, status: 400, code: "invalid_email", pointer: "/email"},
		{name: "user: bad phone", route: users, params: user, body: `{"phone":"+0123"}`, status: 400, code: "invalid_phone", pointer: "/phone"},
		{name: "user: unknown field", route: users, params: user, body: `{"name":"Ann"}`, status: 400, code: "unknown_field", pointer: "/name"},
		// Push subscriptions.
		{name: "subscription: http endpoint", route: subs, params: user, body: sub("http://fcm.googleapis.com/x", p256, auth), status: 400, code: "invalid_endpoint", pointer: "/endpoint"},
		{name: "subscription: loopback http without the dev flag", route: subs, params: user, body: sub("http://127.0.0.1:3000/_dev/push/x", p256, auth), status: 422, code: "endpoint_not_allowed", pointer: "/endpoint"},
		// Server-side request forgery: only the push services of the allow-list.
		{name: "subscription: metadata service", route: subs, params: user, body: sub("https://169.254.169.254/latest/meta-data/", p256, auth), status: 422, code: "endpoint_not_allowed", pointer: "/endpoint"},
		{name: "subscription: private address", route: subs, params: user, body: sub("https://10.0.0.1/", p256, auth), status: 422, code: "endpoint_not_allowed", pointer: "/endpoint"},
		{name: "subscription: IPv6 loopback", route: subs, params: user, body: sub("https://[::1]/", p256, auth), status: 422, code: "endpoint_not_allowed", pointer: "/endpoint"},
		{name: "subscription: decimal IPv4", route: subs, params: user, body: sub("https://2852039166/", p256, auth), status: 422, code: "endpoint_not_allowed", pointer: "/endpoint"},
		{name: "subscription: hex IPv4", route: subs, params: user, body: sub("https://0xA9FEA9FE/", p256, auth), status: 422, code: "endpoint_not_allowed", pointer: "/endpoint"},
		{name: "subscription: octal IPv4", route: subs, params: user, body: sub("https://0177.0.0.1/", p256, auth), status: 422, code: "endpoint_not_allowed", pointer: "/endpoint"},
		{name: "subscription: short IPv4", route: subs, params: user, body: sub("https://127.1/", p256, auth), status: 422, code: "endpoint_not_allowed", pointer: "/endpoint"},
		{name: "subscription: IPv4-mapped IPv6", route: subs, params: user, body: sub("https://[::ffff:169.254.169.254]/", p256, auth), status: 422, code: "endpoint_not_allowed", pointer: "/endpoint"},
		{name: "subscription: loopback ssh", route: subs, params: user, body: sub("https://127.0.0.1:22/", p256, auth), status: 422, code: "endpoint_not_allowed", pointer: "/endpoint"},
		{name: "subscription: localhost", route: subs, params: user, body: sub("https://localhost:3400/x", p256, auth), status: 422, code: "endpoint_not_allowed", pointer: "/endpoint"},
		{name: "subscription: not a push service", route: subs, params: user, body: sub("https://evil.example/x", p256, auth), status: 422, code: "endpoint_not_allowed", pointer: "/endpoint"},
		{name: "subscription: push service on another port", route: subs, params: user, body: sub("https://fcm.googleapis.com:8443/x", p256, auth), status: 422, code: "endpoint_not_allowed", pointer: "/endpoint"},
		{name: "subscription: user info", route: subs, params: user, body: sub("https://fcm.googleapis.com@10.0.0.1/x", p256, auth), status: 400, code: "invalid_endpoint", pointer: "/endpoint"},
		{name: "subscription: no endpoint", route: subs, params: user, body: sub("", p256, auth), status: 400, code: "invalid_endpoint", pointer: "/endpoint"},
		{name: "subscription: endpoint too long", route: subs, params: user, body: sub("https://fcm.googleapis.com/"+strings.Repeat("x", 2048), p256, auth), status: 400, code: "invalid_endpoint", pointer: "/endpoint"},
		{name: "subscription: p256dh not base64", route: subs, params: user, body: sub("https://fcm.googleapis.com/fcm/send/x", "***", auth), status: 400, code: "invalid_p256dh", pointer: "/keys/p256dh"},
		{name: "subscription: p256dh off the curve", route: subs, params: user, body: sub("https://fcm.googleapis.com/fcm/send/x", base64.RawURLEncoding.EncodeToString(append([]byte{4}, make([]byte, 64)...)), auth), status: 400, code: "invalid_p256dh", pointer: "/keys/p256dh"},
		{name: "subscription: 15-byte auth", route: subs, params: user, body: sub("https://fcm.googleapis.com/fcm/send/x", p256, base64.RawURLEncoding.EncodeToString(make([]byte, 15))), status: 400, code: "invalid_auth", pointer: "/keys/auth"},
		{name: "subscription: unknown key field", route: subs, params: user, body: `{"endpoint":"https://fcm.googleapis.com/fcm/send/x","keys":{"p256dh":"a","auth":"b","x":1}}`, status: 400, code: "unknown_field", pointer: "/keys/x"},
		{name: "subscription: delete with a bad id", route: "DELETE /v1/users/{userId}/push-subscriptions/{subscriptionId}", params: map[string]string{"userId": "u1", "subscriptionId": "../x"}, status: 404, code: "subscription_not_found", param: "subscriptionId"},
		// Preferences.
		{name: "preferences: missing", route: prefs, params: user, body: `{}`, status: 400, code: "missing_field", pointer: "/preferences"},
		{name: "preferences: unknown type", route: prefs, params: user, body: `{"preferences":{"nope.nope":{"push":false}}}`, status: 422, code: "unknown_type", pointer: "/preferences/nope.nope"},
		{name: "preferences: unknown channel", route: prefs, params: user, body: `{"preferences":{"comment.created":{"fax":false}}}`, status: 400, code: "invalid_channel", pointer: "/preferences/comment.created/fax"},
		{name: "preferences: channel the type lacks", route: prefs, params: user, body: `{"preferences":{"comment.created":{"email":false}}}`, status: 422, code: "unsupported_channel", pointer: "/preferences/comment.created/email"},
		{name: "preferences: value is a string", route: prefs, params: user, body: `{"preferences":{"comment.created":{"push":"off"}}}`, status: 400, code: "invalid_type", pointer: "/preferences/comment.created/push"},
		{name: "preferences: type maps to a boolean", route: prefs, params: user, body: `{"preferences":{"comment.created":false}}`, status: 400, code: "invalid_type", pointer: "/preferences/comment.created"},
		// Reading.
		{name: "get: malformed id", route: "GET /v1/notifications/{id}", params: map[string]string{"id": "x"}, status: 404, code: "notification_not_found", param: "id"},
		{name: "get: unknown id", route: "GET /v1/notifications/{id}", params: map[string]string{"id": NewRandomID(make([]byte, 16))}, status: 404, code: "notification_not_found", param: "id"},
		{name: "cancel: unknown id", route: "DELETE /v1/notifications/{id}", params: map[string]string{"id": NewRandomID(make([]byte, 16))}, status: 404, code: "notification_not_found", param: "id"},
		{name: "user: unknown user", route: "GET /v1/users/{userId}", params: map[string]string{"userId": "nobody"}, status: 404, code: "user_not_found", param: "userId"},
	}
}

// TestValidationCorpus sends every bad request through the handler and checks
// the status, the stable code and the pointer — and that nothing was written.
func TestValidationCorpus(t *testing.T) {
	corpus := badRequests(t)
	if len(corpus) < 60 {
		t.Fatalf("corpus has %d requests, want at least 60", len(corpus))
	}
	for _, tt := range corpus {
		t.Run(tt.name, func(t *testing.T) {
			ta := newTestAPI(t)
			route := tt.route
			if route == "" {
				route = "POST /v1/notifications"
			}
			resp := ta.doRaw(t, apiCall{route: route, params: tt.params, body: tt.body, headers: tt.headers, caller: "svc"}, tt.base64)
			if resp.StatusCode != tt.status {
				t.Fatalf("status = %d, want %d: %s", resp.StatusCode, tt.status, resp.Body)
			}
			p := decodeProblem(t, resp)
			if p.Code != tt.code || p.Pointer != tt.pointer || p.Header != tt.header || p.Parameter != tt.param {
				t.Fatalf("problem = %s, want code %q pointer %q header %q parameter %q", resp.Body, tt.code, tt.pointer, tt.header, tt.param)
			}
			if w := ta.store.writeCount(); w != 0 {
				t.Fatalf("%d writes for a bad request", w)
			}
		})
	}
}
