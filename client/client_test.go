package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// recorded is one request the fake server received.
type recorded struct {
	method, path, query string
	header              http.Header
	body                []byte
}

// fakeHerald answers each request with the next scripted answer (the last
// one repeats) and records what it received.
type fakeHerald struct {
	mu       sync.Mutex
	answers  []func(w http.ResponseWriter, r *http.Request)
	requests []recorded
}

func (f *fakeHerald) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.requests = append(f.requests, recorded{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone(), body})
	i := min(len(f.requests), len(f.answers)) - 1
	answer := f.answers[i]
	f.mu.Unlock()
	answer(w, r)
}

func (f *fakeHerald) received() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.requests...)
}

func status(code int, contentType, body string, headers ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

// dropConnection closes the connection without an answer: a network error.
func dropConnection(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

const acceptedJSON = `{"id":"n0000000000000000000000000a","status":"accepted","createdAt":"2026-01-02T03:04:05Z"}`

var fastRetry = WithRetryPolicy(RetryPolicy{MaxAttempts: 4, Base: time.Millisecond, Max: 5 * time.Millisecond})

func newTestClient(t *testing.T, f *fakeHerald, opts ...Option) *Client {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, append([]Option{WithDevCaller("billing"), fastRetry}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSendRetriesWithTheSameIdempotencyKey(t *testing.T) {
	problem500 := `{"type":"https://herald.dev/problems/internal","title":"Internal error","status":500,"code":"internal"}`
	tests := []struct {
		name     string
		answers  []func(http.ResponseWriter, *http.Request)
		key      string
		attempts int
	}{
		{"5xx then 429 then accepted", []func(http.ResponseWriter, *http.Request){
			status(500, "application/problem+json", problem500),
			status(429, "application/json", `{"message":"Too Many Requests"}`, "Retry-After", "0"),
			status(202, "application/json", acceptedJSON),
		}, "", 3},
		{"network error then accepted", []func(http.ResponseWriter, *http.Request){
			dropConnection,
			status(202, "application/json", acceptedJSON),
		}, "", 2},
		{"caller's key kept", []func(http.ResponseWriter, *http.Request){
			status(503, "application/json", `{"message":"Service Unavailable"}`),
			status(202, "application/json", acceptedJSON, "Idempotent-Replayed", "true"),
		}, "order-42", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeHerald{answers: tt.answers}
			c := newTestClient(t, f)
			a, err := c.Send(context.Background(), Notification{Type: "otp.code", Recipient: Recipient{UserID: "u1"}, IdempotencyKey: tt.key})
			if err != nil {
				t.Fatal(err)
			}
			reqs := f.received()
			if len(reqs) != tt.attempts {
				t.Fatalf("%d requests, want %d", len(reqs), tt.attempts)
			}
			key := reqs[0].header.Get("Idempotency-Key")
			if key == "" || (tt.key != "" && key != tt.key) {
				t.Fatalf("Idempotency-Key = %q, want %q (or generated when empty)", key, tt.key)
			}
			for i, r := range reqs {
				if got := r.header.Get("Idempotency-Key"); got != key {
					t.Errorf("attempt %d sent key %q, the first sent %q", i+1, got, key)
				}
				if string(r.body) != string(reqs[0].body) {
					t.Errorf("attempt %d body %s differs from the first %s", i+1, r.body, reqs[0].body)
				}
			}
			if a.IdempotencyKey != key || a.ID != "n0000000000000000000000000a" || a.CreatedAt.IsZero() {
				t.Errorf("accepted = %+v (key sent %q)", a, key)
			}
			if a.Replayed != (tt.key != "") {
				t.Errorf("Replayed = %v", a.Replayed)
			}
		})
	}
}

func TestSendKeysAreUniquePerCallAndOmittedWithResourceID(t *testing.T) {
	f := &fakeHerald{answers: []func(http.ResponseWriter, *http.Request){status(202, "application/json", acceptedJSON)}}
	c := newTestClient(t, f)
	ctx := context.Background()
	for range 2 {
		if _, err := c.Send(ctx, Notification{Type: "otp.code", Recipient: Recipient{UserID: "u1"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Send(ctx, Notification{Type: "otp.code", Recipient: Recipient{UserID: "u1"}, ResourceID: "r1"}); err != nil {
		t.Fatal(err)
	}
	reqs := f.received()
	if k0, k1 := reqs[0].header.Get("Idempotency-Key"), reqs[1].header.Get("Idempotency-Key"); k0 == k1 {
		t.Errorf("two sends share the generated key %q", k0)
	}
	if k := reqs[2].header.Get("Idempotency-Key"); k != "" {
		t.Errorf("with a resourceId the client sent key %q; the server deduplicates on the resourceId", k)
	}
	if got := reqs[0].header.Get(DevCallerHeader); got != "billing" {
		t.Errorf("%s = %q", DevCallerHeader, got)
	}
	if got := reqs[0].header.Get("Authorization"); got != "" {
		t.Errorf("dev caller requests are not signed; Authorization = %q", got)
	}
}

func TestErrorsAreTyped(t *testing.T) {
	tests := []struct {
		name        string
		answer      func(http.ResponseWriter, *http.Request)
		status      int
		code        string
		pointer     string
		attempts    int
		is          error
		messagePart string
	}{
		{"problem with pointer", status(422, "application/problem+json",
			`{"type":"https://herald.dev/problems/missing_variable","title":"Unprocessable Entity","status":422,"code":"missing_variable","pointer":"/data/invoiceUrl","detail":"variable \"invoiceUrl\": missing"}`),
			422, "missing_variable", "/data/invoiceUrl", 1, nil, "missing_variable"},
		{"not found", status(404, "application/problem+json", `{"type":"x","title":"Not Found","status":404,"code":"notification_not_found"}`),
			404, "notification_not_found", "", 1, ErrNotFound, "Not Found"},
		{"gateway forbidden", status(403, "application/json", `{"message":"Forbidden"}`), 403, "", "", 1, ErrUnauthorized, "Forbidden"},
		{"5xx exhausts the attempts", status(502, "text/plain", "bad gateway"), 502, "", "", 4, nil, "bad gateway"},
		{"429 exhausts the attempts", status(429, "application/json", `{"message":"Too Many Requests"}`), 429, "", "", 4, ErrThrottled, "Too Many"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeHerald{answers: []func(http.ResponseWriter, *http.Request){tt.answer}}
			c := newTestClient(t, f)
			_, err := c.GetNotification(context.Background(), "n1")
			var herr *Error
			if !errors.As(err, &herr) {
				t.Fatalf("err = %v (%T), want *Error", err, err)
			}
			if herr.Status != tt.status || herr.Code != tt.code || herr.Pointer != tt.pointer || herr.Attempts != tt.attempts {
				t.Errorf("error = %+v, want status %d code %q pointer %q after %d attempts", herr, tt.status, tt.code, tt.pointer, tt.attempts)
			}
			if n := len(f.received()); n != tt.attempts {
				t.Errorf("%d requests, want %d", n, tt.attempts)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.messagePart) {
				t.Errorf("message %q lacks %q", err.Error(), tt.messagePart)
			}
		})
	}
}

func TestSendBatchKeysSurviveRetries(t *testing.T) {
	results := `{"results":[{"index":0,"status":202,"idempotencyKey":"k","id":"n1","createdAt":"2026-01-02T03:04:05Z"},` +
		`{"index":1,"status":422,"problem":{"type":"x","title":"Unprocessable Entity","status":422,"code":"unknown_type","pointer":"/notifications/1/type"}}]}`
	f := &fakeHerald{answers: []func(http.ResponseWriter, *http.Request){
		status(500, "application/problem+json", `{"status":500,"code":"internal"}`),
		status(207, "application/json", results),
	}}
	c := newTestClient(t, f)
	res, err := c.SendBatch(context.Background(), []Notification{
		{Type: "otp.code", Recipient: Recipient{UserID: "u1"}, IdempotencyKey: "mine"},
		{Type: "nope", Recipient: Recipient{UserID: "u2"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.received()
	if len(reqs) != 2 || string(reqs[0].body) != string(reqs[1].body) {
		t.Fatalf("the retry must resend the same items with the same keys:\n%s\n%s", reqs[0].body, reqs[len(reqs)-1].body)
	}
	var sent struct {
		Notifications []map[string]any `json:"notifications"`
	}
	if err := json.Unmarshal(reqs[0].body, &sent); err != nil {
		t.Fatal(err)
	}
	if k := sent.Notifications[0]["idempotencyKey"]; k != "mine" {
		t.Errorf("item 0 key = %v", k)
	}
	if k, _ := sent.Notifications[1]["idempotencyKey"].(string); k == "" {
		t.Errorf("item 1 got no generated key")
	}
	if res[0].Err() != nil || res[0].ID != "n1" {
		t.Errorf("item 0 = %+v", res[0])
	}
	var herr *Error
	if err := res[1].Err(); !errors.As(err, &herr) || herr.Code != "unknown_type" || herr.Pointer != "/notifications/1/type" || herr.Status != 422 {
		t.Errorf("item 1 error = %v", err)
	}
	if _, err := c.SendBatch(context.Background(), nil); err == nil {
		t.Error("an empty batch must be refused before sending")
	}
}

func TestContextCancelStopsRetrying(t *testing.T) {
	f := &fakeHerald{answers: []func(http.ResponseWriter, *http.Request){status(503, "", "")}}
	c := newTestClient(t, f, WithRetryPolicy(RetryPolicy{MaxAttempts: 10, Base: time.Hour, Max: time.Hour}))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.GetUser(ctx, "u1")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the context's deadline", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s: the backoff did not watch the context", d)
	}
	if n := len(f.received()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestDeleteSubscription404AfterRetryIsSuccess(t *testing.T) {
	notFound := status(404, "application/problem+json", `{"status":404,"code":"subscription_not_found"}`)
	tests := []struct {
		name    string
		answers []func(http.ResponseWriter, *http.Request)
		wantErr bool
	}{
		{"first answer lost", []func(http.ResponseWriter, *http.Request){dropConnection, notFound}, false},
		{"unknown subscription", []func(http.ResponseWriter, *http.Request){notFound}, true},
		{"deleted", []func(http.ResponseWriter, *http.Request){status(204, "", "")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestClient(t, &fakeHerald{answers: tt.answers})
			err := c.DeletePushSubscription(context.Background(), "u1", "s1")
			if (err != nil) != tt.wantErr {
				t.Errorf("err = %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

func TestRoutesAndBodies(t *testing.T) {
	ok := func(code int, body string) []func(http.ResponseWriter, *http.Request) {
		return []func(http.ResponseWriter, *http.Request){status(code, "application/json", body)}
	}
	expires := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	digest := 10
	tests := []struct {
		name     string
		answer   []func(http.ResponseWriter, *http.Request)
		call     func(*Client) error
		method   string
		path     string
		query    string
		bodyPart string
	}{
		{"cancel", ok(200, `{"id":"n1","status":"cancelled","deliveries":{"email":{"status":"dropped","reason":"cancelled","attempts":0,"updatedAt":"2026-01-01T00:00:00Z","dueAt":null}}}`),
			func(c *Client) error {
				st, err := c.CancelNotification(context.Background(), "n1")
				if err == nil && st.Deliveries["email"].Reason != "cancelled" {
					t.Errorf("deliveries = %+v", st.Deliveries)
				}
				return err
			}, "DELETE", "/v1/notifications/n1", "", ""},
		{"put user", ok(200, `{"userId":"u@1","email":"a@example.com","digestMinutes":10,"emailSuppressed":false,"updatedAt":"2026-01-01T00:00:00Z"}`),
			func(c *Client) error {
				_, err := c.PutUser(context.Background(), "u@1", User{Email: "a@example.com", DigestMinutes: &digest, UserID: "ignored"})
				return err
			}, "PUT", "/v1/users/u@1", "", `{"email":"a@example.com","digestMinutes":10}`},
		{"subscribe", ok(201, `{"id":"s1","createdAt":"2026-01-01T00:00:00Z"}`),
			func(c *Client) error {
				var s PushSubscription
				s.Endpoint, s.Keys.P256dh, s.Keys.Auth = "https://push.example/x", "p", "a"
				ref, err := c.CreatePushSubscription(context.Background(), "u1", s)
				if err == nil && (!ref.Created || ref.ID != "s1") {
					t.Errorf("ref = %+v", ref)
				}
				return err
			}, "POST", "/v1/users/u1/push-subscriptions", "", `"keys":{"p256dh":"p","auth":"a"}`},
		{"register device", ok(200, `{"deviceId":"d1"}`),
			func(c *Client) error {
				ref, err := c.RegisterDevice(context.Background(), "u1", Device{Platform: PlatformAPNs, Token: "ab", App: "ios", DeviceID: "ignored"})
				if err == nil && (ref.Created || ref.DeviceID != "d1") {
					t.Errorf("ref = %+v (200: the same device, not created)", ref)
				}
				return err
			}, "POST", "/v1/users/u1/devices", "", `{"platform":"apns","token":"ab","app":"ios"}`},
		{"delete device", ok(204, ``),
			func(c *Client) error { return c.DeleteDevice(context.Background(), "u1", "d1") },
			"DELETE", "/v1/users/u1/devices/d1", "", ""},
		{"get user with devices", ok(200, `{"userId":"u1","digestMinutes":0,"emailSuppressed":false,"updatedAt":"2026-01-01T00:00:00Z","devices":[{"deviceId":"d1","platform":"fcm","token":"abcd…wxyz","createdAt":"2026-01-01T00:00:00Z"}]}`),
			func(c *Client) error {
				u, err := c.GetUser(context.Background(), "u1")
				if err == nil && (len(u.Devices) != 1 || u.Devices[0].DeviceID != "d1" || u.Devices[0].Platform != PlatformFCM) {
					t.Errorf("devices = %+v", u.Devices)
				}
				return err
			}, "GET", "/v1/users/u1", "", ""},
		{"preferences", ok(200, `{"userId":"u1","preferences":{"comment.created":{"push":{"enabled":false,"source":"user"}}}}`),
			func(c *Client) error {
				p, err := c.UpdatePreferences(context.Background(), "u1", map[string]map[string]*bool{"comment.created": {"push": Disable, "email": Inherit}})
				if err == nil && p.Preferences["comment.created"]["push"].Source != "user" {
					t.Errorf("preferences = %+v", p)
				}
				return err
			}, "PUT", "/v1/users/u1/preferences", "", `{"preferences":{"comment.created":{"email":null,"push":false}}}`},
		{"get preferences", ok(200, `{"userId":"u1","preferences":{}}`),
			func(c *Client) error { _, err := c.GetPreferences(context.Background(), "u1"); return err },
			"GET", "/v1/users/u1/preferences", "", ""},
		{"announce", ok(201, `{"id":"a1","title":"T","body":"B","url":null,"status":"active"}`),
			func(c *Client) error {
				_, err := c.CreateAnnouncement(context.Background(), Announcement{Title: "T", Body: "B", ExpiresAt: expires})
				return err
			}, "POST", "/v1/announcements", "", `"expiresAt":"2026-02-01T00:00:00Z"`},
		{"list announcements", ok(200, `{"items":[{"id":"a1"}],"nextCursor":"c2"}`),
			func(c *Client) error {
				p, err := c.ListAnnouncements(context.Background(), Page{Limit: 5, Cursor: "c1"})
				if err == nil && (p.NextCursor != "c2" || len(p.Items) != 1) {
					t.Errorf("page = %+v", p)
				}
				return err
			}, "GET", "/v1/announcements", "cursor=c1&limit=5", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeHerald{answers: tt.answer}
			if err := tt.call(newTestClient(t, f)); err != nil {
				t.Fatal(err)
			}
			r := f.received()[0]
			if r.method != tt.method || r.path != tt.path || r.query != tt.query || !strings.Contains(string(r.body), tt.bodyPart) {
				t.Errorf("sent %s %s ?%s %s; want %s %s ?%s with %s", r.method, r.path, r.query, r.body, tt.method, tt.path, tt.query, tt.bodyPart)
			}
		})
	}
}

// TestSigV4 checks the signature two ways: the server re-signs what it
// received with the SDK's signer (same credentials and time, the SHA-256 of
// the body it received), and the Authorization of a fixed request is the
// recorded one.
func TestSigV4(t *testing.T) {
	creds := credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token")
	signedAt := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var mu sync.Mutex
	var verified []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got := r.Header.Get("Authorization")
		check := r.Clone(context.Background())
		check.Header.Del("Authorization")
		check.Header.Del("X-Amz-Date")
		check.Header.Del("X-Amz-Security-Token")
		check.Header.Del("Accept-Encoding") // added by the transport after signing
		sum := sha256.Sum256(body)
		at, _ := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
		c, _ := creds.Retrieve(context.Background())
		if err := v4.NewSigner().SignHTTP(context.Background(), c, check, hex.EncodeToString(sum[:]), "execute-api", "eu-west-1", at); err != nil {
			t.Error(err)
		}
		mu.Lock()
		verified = append(verified, got)
		mu.Unlock()
		if want := check.Header.Get("Authorization"); got != want {
			t.Errorf("Authorization = %q\nre-signed by the server: %q", got, want)
			w.WriteHeader(http.StatusForbidden)
			return
		}
		if r.Header.Get("X-Amz-Security-Token") != "session-token" {
			t.Errorf("session token not sent")
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, acceptedJSON)
	}))
	defer srv.Close()

	c, err := New(srv.URL, WithCredentials(creds), WithRegion("eu-west-1"), fastRetry)
	if err != nil {
		t.Fatal(err)
	}
	c.now = func() time.Time { return signedAt }
	c.newKey = func() string { return "fixed-key" }
	if _, err := c.Send(context.Background(), Notification{Type: "otp.code", Recipient: Recipient{UserID: "u1"}, Data: map[string]string{"code": "123456"}}); err != nil {
		t.Fatal(err)
	}
	// The recorded signature of this request (host 127.0.0.1:<port> varies,
	// so it is recorded against a fixed host below).
	req, _ := http.NewRequest(http.MethodPost, "https://abc123.execute-api.eu-west-1.amazonaws.com/v1/notifications", strings.NewReader(`{"type":"otp.code"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "fixed-key")
	c2, _ := New("https://abc123.execute-api.eu-west-1.amazonaws.com", WithCredentials(creds))
	c2.now = func() time.Time { return signedAt }
	if c2.region != "eu-west-1" {
		t.Errorf("region from the host = %q", c2.region)
	}
	if err := c2.authorize(context.Background(), req, []byte(`{"type":"otp.code"}`)); err != nil {
		t.Fatal(err)
	}
	const recordedAuthorization = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260102/eu-west-1/execute-api/aws4_request, " +
		"SignedHeaders=content-length;content-type;host;idempotency-key;x-amz-date;x-amz-security-token, " +
		"Signature=cb05b3b7fb0c61282bc359e5050d72120379c4ee497f06dfdb3f97b1c74fcb7e"
	if got := req.Header.Get("Authorization"); got != recordedAuthorization {
		t.Errorf("Authorization = %q\nrecorded       %q", got, recordedAuthorization)
	}
	if len(verified) != 1 {
		t.Errorf("server saw %d requests", len(verified))
	}
}

func TestNewNeedsARegionAndCredentials(t *testing.T) {
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_PROFILE", "")
	tests := []struct {
		endpoint string
		opts     []Option
		wantErr  string
	}{
		{"ftp://x", nil, "absolute http(s) URL"},
		{"http://127.0.0.1:3000", []Option{WithCredentials(aws.AnonymousCredentials{})}, "no AWS region"},
		{"https://abc.execute-api.ap-northeast-1.amazonaws.com", []Option{WithCredentials(aws.AnonymousCredentials{})}, ""},
		{"http://127.0.0.1:3000", []Option{WithDevCaller("")}, ""},
	}
	for _, tt := range tests {
		_, err := New(tt.endpoint, tt.opts...)
		if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("New(%q) error = %v, want %q", tt.endpoint, err, tt.wantErr)
		}
	}
}

func TestBackoffGrowsWithJitterAndHonoursRetryAfter(t *testing.T) {
	c := &Client{retry: RetryPolicy{MaxAttempts: 5, Base: 100 * time.Millisecond, Max: time.Second}}
	for attempt, ceiling := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 400 * time.Millisecond, 6: time.Second} {
		for range 50 {
			d := c.backoff(attempt, 0)
			if d < ceiling/2 || d > ceiling {
				t.Fatalf("attempt %d waited %s, want within [%s, %s]", attempt, d, ceiling/2, ceiling)
			}
		}
	}
	if d := c.backoff(1, 700*time.Millisecond); d != 700*time.Millisecond {
		t.Errorf("Retry-After 700ms gave %s", d)
	}
	if d := c.backoff(1, time.Minute); d != time.Second {
		t.Errorf("Retry-After beyond Max gave %s, want Max", d)
	}
}

// TestSendBatchRetriesRetryableItemsWithTheirKeys: items a batch answers 503
// (timeout) or 500 are sent again on their own, with the keys of the first
// request; 4xx items are not; results keep the caller's indexes.
func TestSendBatchRetriesRetryableItemsWithTheirKeys(t *testing.T) {
	timeout := `{"status":503,"problem":{"type":"x","title":"Timed out","status":503,"code":"timeout"}}`
	item := func(index int, rest string) string { return `{"index":` + strconv.Itoa(index) + `,` + rest[1:] }
	accepted := func(index int, id string) string {
		return `{"index":` + strconv.Itoa(index) + `,"status":202,"id":"` + id + `","createdAt":"2026-01-02T03:04:05Z"}`
	}
	results := func(items ...string) func(http.ResponseWriter, *http.Request) {
		return status(207, "application/json", `{"results":[`+strings.Join(items, ",")+`]}`)
	}
	tests := []struct {
		name string
		// answers are the server's, request by request.
		answers []func(http.ResponseWriter, *http.Request)
		// resent lists, per request after the first, the caller's indexes it must carry.
		resent     [][]int
		wantStatus []int
		wantPtr    string // item 3's problem pointer at the end
	}{
		{"timeout item accepted on retry", []func(http.ResponseWriter, *http.Request){
			results(accepted(0, "n0"), item(1, timeout), item(2, `{"status":422,"problem":{"status":422,"code":"unknown_type","pointer":"/notifications/2/type"}}`), item(3, timeout)),
			results(accepted(0, "n1"), item(1, `{"status":422,"problem":{"status":422,"code":"missing_variable","pointer":"/notifications/1/data/code"}}`)),
		}, [][]int{{1, 3}}, []int{202, 202, 422, 422}, "/notifications/3/data/code"},
		{"500 then timeout then accepted", []func(http.ResponseWriter, *http.Request){
			results(accepted(0, "n0"), accepted(1, "n1"), accepted(2, "n2"), item(3, `{"status":500,"problem":{"status":500,"code":"internal"}}`)),
			results(item(0, timeout)),
			results(accepted(0, "n3")),
		}, [][]int{{3}, {3}}, []int{202, 202, 202, 202}, ""},
		{"still timing out when the attempts run out", []func(http.ResponseWriter, *http.Request){
			results(accepted(0, "n0"), accepted(1, "n1"), accepted(2, "n2"), item(3, timeout)),
			results(item(0, timeout)),
		}, [][]int{{3}, {3}, {3}}, []int{202, 202, 202, 503}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeHerald{answers: tt.answers}
			c := newTestClient(t, f)
			ns := []Notification{
				{Type: "otp.code", Recipient: Recipient{UserID: "u0"}, IdempotencyKey: "mine"},
				{Type: "otp.code", Recipient: Recipient{UserID: "u1"}},
				{Type: "nope", Recipient: Recipient{UserID: "u2"}},
				{Type: "otp.code", Recipient: Recipient{UserID: "u3"}},
			}
			res, err := c.SendBatch(context.Background(), ns)
			if err != nil {
				t.Fatal(err)
			}
			for i, n := range ns {
				if n.IdempotencyKey == "" {
					t.Errorf("item %d: no key written back into the caller's slice", i)
				}
			}
			reqs := f.received()
			if len(reqs) != 1+len(tt.resent) {
				t.Fatalf("%d requests, want %d", len(reqs), 1+len(tt.resent))
			}
			for k, want := range tt.resent {
				var sent struct {
					Notifications []struct {
						IdempotencyKey string    `json:"idempotencyKey"`
						Recipient      Recipient `json:"recipient"`
					} `json:"notifications"`
				}
				if err := json.Unmarshal(reqs[k+1].body, &sent); err != nil {
					t.Fatal(err)
				}
				if len(sent.Notifications) != len(want) {
					t.Fatalf("request %d resent %d items, want %v", k+2, len(sent.Notifications), want)
				}
				for j, i := range want {
					got := sent.Notifications[j]
					if got.IdempotencyKey != ns[i].IdempotencyKey || got.Recipient.UserID != ns[i].Recipient.UserID {
						t.Errorf("request %d item %d = %+v, want item %d with key %q", k+2, j, got, i, ns[i].IdempotencyKey)
					}
				}
			}
			if len(res) != len(ns) {
				t.Fatalf("%d results", len(res))
			}
			for i, r := range res {
				if r.Index != i || r.Status != tt.wantStatus[i] {
					t.Errorf("result %d = index %d status %d, want status %d", i, r.Index, r.Status, tt.wantStatus[i])
				}
			}
			if last := res[3]; last.Retryable() != (tt.wantStatus[3] == 503) {
				t.Errorf("Retryable() = %v for status %d", last.Retryable(), last.Status)
			}
			if tt.wantPtr != "" {
				var herr *Error
				if !errors.As(res[3].Err(), &herr) || herr.Pointer != tt.wantPtr {
					t.Errorf("item 3 error = %v, want pointer %s", res[3].Err(), tt.wantPtr)
				}
			}
			// Sending the same slice again carries the same keys: a
			// caller's own retry replays. (The stand-in's scripted answer
			// does not fit this request; only what is sent matters.)
			before := reqs[0].body
			_, _ = c.SendBatch(context.Background(), ns)
			if again := f.received()[len(reqs)].body; string(again) != string(before) {
				t.Errorf("resending ns changed the request:\n%s\n%s", before, again)
			}
		})
	}
}

// TestCreatesRetryWithTheSameKey: every create that takes an Idempotency-Key
// sends one (generated when the caller gives none) and keeps it on retries.
func TestCreatesRetryWithTheSameKey(t *testing.T) {
	unavailable := status(503, "application/problem+json", `{"status":503,"code":"timeout"}`)
	tests := []struct {
		name    string
		created func(http.ResponseWriter, *http.Request)
		call    func(*Client, string) error
	}{
		{"campaign", status(201, "application/json", `{"id":"c1","status":"draft"}`), func(c *Client, key string) error {
			_, err := c.CreateCampaign(context.Background(), Campaign{Type: "reservation.approved", IdempotencyKey: key})
			return err
		}},
		{"announcement", status(201, "application/json", `{"id":"a1","status":"active"}`), func(c *Client, key string) error {
			_, err := c.CreateAnnouncement(context.Background(), Announcement{Title: "T", Body: "B", ExpiresAt: time.Now().Add(time.Hour), IdempotencyKey: key})
			return err
		}},
		{"notification", status(202, "application/json", acceptedJSON), func(c *Client, key string) error {
			_, err := c.Send(context.Background(), Notification{Type: "otp.code", Recipient: Recipient{UserID: "u1"}, IdempotencyKey: key})
			return err
		}},
	}
	for _, tt := range tests {
		for _, key := range []string{"", "callers-key"} {
			t.Run(tt.name+"/key="+key, func(t *testing.T) {
				f := &fakeHerald{answers: []func(http.ResponseWriter, *http.Request){unavailable, dropConnection, tt.created}}
				if err := tt.call(newTestClient(t, f), key); err != nil {
					t.Fatal(err)
				}
				reqs := f.received()
				if len(reqs) != 3 {
					t.Fatalf("%d requests, want 3", len(reqs))
				}
				first := reqs[0].header.Get("Idempotency-Key")
				if first == "" || (key != "" && first != key) {
					t.Fatalf("Idempotency-Key = %q, want %q or a generated one", first, key)
				}
				for i, r := range reqs[1:] {
					if got := r.header.Get("Idempotency-Key"); got != first {
						t.Errorf("retry %d sent key %q, the first %q", i+1, got, first)
					}
				}
			})
		}
	}
}

// TestStartCampaignAfterALostAnswer: a retried start whose first attempt got
// through answers campaign_not_draft; the client reads the campaign and
// answers it when it runs. Without a retry, the conflict stays an error.
func TestStartCampaignAfterALostAnswer(t *testing.T) {
	notDraft := status(409, "application/problem+json", `{"status":409,"code":"campaign_not_draft","parameter":"id"}`)
	view := func(st string) func(http.ResponseWriter, *http.Request) {
		return status(200, "application/json", `{"id":"c1","status":"`+st+`","recipients":3}`)
	}
	tests := []struct {
		name     string
		answers  []func(http.ResponseWriter, *http.Request)
		wantErr  bool
		requests []string
	}{
		{"lost answer, now running", []func(http.ResponseWriter, *http.Request){dropConnection, notDraft, view("running")}, false,
			[]string{"POST /v1/campaigns/c1/start", "POST /v1/campaigns/c1/start", "GET /v1/campaigns/c1"}},
		{"lost answer, but cancelled", []func(http.ResponseWriter, *http.Request){dropConnection, notDraft, view("cancelled")}, true,
			[]string{"POST /v1/campaigns/c1/start", "POST /v1/campaigns/c1/start", "GET /v1/campaigns/c1"}},
		{"started before, no retry", []func(http.ResponseWriter, *http.Request){notDraft}, true,
			[]string{"POST /v1/campaigns/c1/start"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeHerald{answers: tt.answers}
			st, err := newTestClient(t, f).StartCampaign(context.Background(), "c1")
			var herr *Error
			if tt.wantErr != (err != nil) || (err != nil && (!errors.As(err, &herr) || herr.Code != "campaign_not_draft")) {
				t.Fatalf("StartCampaign = %+v, %v", st, err)
			}
			if err == nil && st.Status != "running" {
				t.Errorf("status = %+v", st)
			}
			var got []string
			for _, r := range f.received() {
				got = append(got, r.method+" "+r.path)
			}
			if strings.Join(got, ",") != strings.Join(tt.requests, ",") {
				t.Errorf("requests %v, want %v", got, tt.requests)
			}
		})
	}
}

// TestGetNotificationReadsEachDeliverysProvider: the provider the API
// shows on a delivery (a failover's second region, End User Messaging SMS)
// reaches the client's Delivery.
func TestGetNotificationReadsEachDeliverysProvider(t *testing.T) {
	f := &fakeHerald{answers: []func(http.ResponseWriter, *http.Request){status(200, "application/json",
		`{"id":"n1","status":"accepted","deliveries":{"email":{"status":"sent","attempts":1,"provider":"ses:eu-west-1"},"sms":{"status":"sent","attempts":1,"provider":"sms-voice"}}}`)}}
	n, err := newTestClient(t, f).GetNotification(context.Background(), "n1")
	if err != nil {
		t.Fatal(err)
	}
	if e, s := n.Deliveries["email"].Provider, n.Deliveries["sms"].Provider; e != "ses:eu-west-1" || s != "sms-voice" {
		t.Errorf("providers email %q, sms %q; want ses:eu-west-1, sms-voice", e, s)
	}
}
