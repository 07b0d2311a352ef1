package webpush

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// newTestSender's hosts are the allow-list, as URLs (a test server's) or entries.
func newTestSender(t *testing.T, client Doer, now time.Time, allowLoopback bool, hosts ...string) (*Sender, VAPIDKeys) {
	t.Helper()
	list, err := ParseHostList(hostEntries(hosts))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	sender, err := NewSender(SenderConfig{
		Keys:                  keys,
		Contact:               "mailto:ops@example.com",
		Client:                client,
		Now:                   fixedClock(now),
		AllowInsecureLoopback: allowLoopback,
		Hosts:                 list,
	})
	if err != nil {
		t.Fatal(err)
	}
	return sender, keys
}

func TestSendPostsEncryptedMessageWithHeaders(t *testing.T) {
	type received struct {
		header http.Header
		method string
		path   string
		body   []byte
	}
	got := make(chan received, 1)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- received{header: r.Header.Clone(), method: r.Method, path: r.URL.Path, body: body}
		w.Header().Set("Location", "https://push.example.net/m/42")
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()

	ua := newTestUserAgent(t, srv.URL+"/push/abc")
	sender, keys := newTestSender(t, srv.Client(), time.Now(), true, srv.URL)
	payload := []byte(`{"title":"Hello","body":"World"}`)
	topic := TopicFor("notif-123")

	res, err := sender.Send(context.Background(), ua.sub, Message{
		Payload: payload, TTL: 90*time.Second + 500*time.Millisecond, Urgency: UrgencyHigh, Topic: topic,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusCreated || res.MessageID != "https://push.example.net/m/42" {
		t.Fatalf("Result = %+v, want 201 with the Location as message id", res)
	}

	req := <-got
	if req.method != http.MethodPost || req.path != "/push/abc" {
		t.Fatalf("request = %s %s, want POST /push/abc", req.method, req.path)
	}
	for name, want := range map[string]string{
		"TTL":              "90",
		"Urgency":          "high",
		"Topic":            topic,
		"Content-Encoding": "aes128gcm",
		"Content-Type":     "application/octet-stream",
	} {
		if v := req.header.Get(name); v != want {
			t.Errorf("%s = %q, want %q", name, v, want)
		}
	}
	claims, pub, err := VerifyVAPID(req.header.Get("Authorization"), srv.URL, time.Now())
	if err != nil {
		t.Fatalf("VerifyVAPID: %v", err)
	}
	if point, _ := pub.Bytes(); encodeBase64URL(point) != keys.PublicKey {
		t.Error("Authorization k is not the sender's public key")
	}
	if claims.Subject != "mailto:ops@example.com" {
		t.Errorf("sub = %q", claims.Subject)
	}

	plaintext, err := Decrypt(req.body, ua.privateKey, ua.authSecret)
	if err != nil {
		t.Fatalf("push service side cannot decrypt: %v", err)
	}
	if string(plaintext) != string(payload) {
		t.Fatalf("decrypted %q, want %q", plaintext, payload)
	}
}

func TestSendOmitsOptionalHeaders(t *testing.T) {
	var header http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		header = r.Header.Clone()
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	ua := newTestUserAgent(t, srv.URL+"/p")
	sender, _ := newTestSender(t, srv.Client(), time.Now(), true, srv.URL)

	res, err := sender.Send(context.Background(), ua.sub, Message{})
	if err != nil {
		t.Fatal(err)
	}
	if res.MessageID != "" {
		t.Errorf("MessageID = %q without a Location header", res.MessageID)
	}
	if header.Get("TTL") != "0" {
		t.Errorf("TTL = %q, want 0", header.Get("TTL"))
	}
	for _, name := range []string{"Urgency", "Topic"} {
		if _, ok := header[name]; ok {
			t.Errorf("%s header sent although unset", name)
		}
	}
}

func TestSendClassifiesResponses(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name          string
		status        int
		retryAfter    string
		wantOK        bool
		wantGone      bool
		wantTransient bool
		wantRetry     time.Duration
	}{
		{name: "200", status: 200, wantOK: true},
		{name: "201", status: 201, wantOK: true},
		{name: "202", status: 202, wantOK: true},
		{name: "404 gone", status: 404, wantGone: true},
		{name: "410 gone", status: 410, wantGone: true},
		{name: "429 seconds", status: 429, retryAfter: "1", wantTransient: true, wantRetry: time.Second},
		{name: "429 http-date", status: 429, retryAfter: now.Add(90 * time.Second).Format(http.TimeFormat), wantTransient: true, wantRetry: 90 * time.Second},
		{name: "429 past http-date", status: 429, retryAfter: now.Add(-time.Minute).Format(http.TimeFormat), wantTransient: true},
		{name: "429 no header", status: 429, wantTransient: true},
		{name: "429 garbage header", status: 429, retryAfter: "soon", wantTransient: true},
		{name: "408", status: 408, wantTransient: true},
		{name: "500", status: 500, wantTransient: true},
		{name: "502", status: 502, wantTransient: true},
		{name: "503 with Retry-After", status: 503, retryAfter: "120", wantTransient: true, wantRetry: 2 * time.Minute},
		{name: "400", status: 400},
		{name: "401", status: 401},
		{name: "403", status: 403},
		{name: "413", status: 413},
		{name: "301 not followed", status: 301},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.retryAfter != "" {
					w.Header().Set("Retry-After", tc.retryAfter)
				}
				if tc.status == 301 {
					w.Header().Set("Location", "/elsewhere")
				}
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, `{"reason":"because"}`)
			}))
			defer srv.Close()
			ua := newTestUserAgent(t, srv.URL+"/p")
			sender, _ := newTestSender(t, nil, now, true, srv.URL) // default client: must not follow redirects

			res, err := sender.Send(context.Background(), ua.sub, Message{Payload: []byte("x"), TTL: time.Minute})
			if tc.wantOK {
				if err != nil || res.StatusCode != tc.status {
					t.Fatalf("Send = %+v, %v; want status %d", res, err, tc.status)
				}
				return
			}
			var perr *ProviderError
			if !errors.As(err, &perr) {
				t.Fatalf("err = %v, want *ProviderError", err)
			}
			if perr.StatusCode != tc.status || perr.Transient != tc.wantTransient || perr.RetryAfter != tc.wantRetry {
				t.Fatalf("ProviderError = {Status %d, Transient %v, RetryAfter %s}, want {%d, %v, %s}",
					perr.StatusCode, perr.Transient, perr.RetryAfter, tc.status, tc.wantTransient, tc.wantRetry)
			}
			if errors.Is(err, ErrSubscriptionGone) != tc.wantGone {
				t.Fatalf("errors.Is(err, ErrSubscriptionGone) = %v, want %v", !tc.wantGone, tc.wantGone)
			}
			if perr.Reason != `{"reason":"because"}` {
				t.Errorf("Reason = %q", perr.Reason)
			}
			if strings.Contains(err.Error(), "/p") {
				t.Errorf("error %q reveals the endpoint path", err)
			}
		})
	}
}

func TestSendNetworkFailuresAreTransient(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		endpoint := srv.URL + "/secret-path"
		srv.Close()
		ua := newTestUserAgent(t, endpoint)
		sender, _ := newTestSender(t, nil, time.Now(), true, endpoint)
		_, err := sender.Send(context.Background(), ua.sub, Message{Payload: []byte("x")})
		var perr *ProviderError
		if !errors.As(err, &perr) || !perr.Transient || perr.StatusCode != 0 {
			t.Fatalf("err = %v, want transient ProviderError without status", err)
		}
		if strings.Contains(err.Error(), "secret-path") {
			t.Fatalf("error %q reveals the endpoint path", err)
		}
	})
	t.Run("deadline exceeded", func(t *testing.T) {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}))
		defer srv.Close()
		defer close(release)
		ua := newTestUserAgent(t, srv.URL+"/p")
		sender, _ := newTestSender(t, srv.Client(), time.Now(), true, srv.URL)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := sender.Send(ctx, ua.sub, Message{Payload: []byte("x")})
		var perr *ProviderError
		if !errors.As(err, &perr) || !perr.Transient {
			t.Fatalf("err = %v, want transient ProviderError", err)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want it to match context.DeadlineExceeded", err)
		}
	})
}

func TestSendRejectsInvalidInputWithoutRequest(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	ua := newTestUserAgent(t, srv.URL+"/p")
	loopbackSender, _ := newTestSender(t, srv.Client(), time.Now(), true, srv.URL)
	strictSender, _ := newTestSender(t, srv.Client(), time.Now(), false, srv.URL)

	for _, tc := range []struct {
		name   string
		sender *Sender
		msg    Message
		sub    Subscription
		want   error
	}{
		{"topic too long", loopbackSender, Message{Topic: strings.Repeat("a", 33)}, ua.sub, ErrInvalidTopic},
		{"topic bad alphabet", loopbackSender, Message{Topic: "a+b"}, ua.sub, ErrInvalidTopic},
		{"unknown urgency", loopbackSender, Message{Urgency: "urgent"}, ua.sub, ErrInvalidUrgency},
		{"negative TTL", loopbackSender, Message{TTL: -time.Second}, ua.sub, ErrInvalidTTL},
		{"payload too large", loopbackSender, Message{Payload: make([]byte, MaxPlaintextSize+1)}, ua.sub, ErrPayloadTooLarge},
		{"http endpoint in production", strictSender, Message{}, ua.sub, ErrInvalidEndpoint},
		{"bad keys", loopbackSender, Message{}, Subscription{Endpoint: ua.sub.Endpoint, P256dh: ua.sub.P256dh}, ErrInvalidAuth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.sender.Send(context.Background(), tc.sub, tc.msg); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("push service was called %d times for invalid input", n)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for value, want := range map[string]time.Duration{
		"":                               0,
		"0":                              0,
		"-5":                             0,
		"1":                              time.Second,
		" 30 ":                           30 * time.Second,
		"3600":                           time.Hour,
		"1.5":                            0,
		"soon":                           0,
		"Fri, 01 May 2026 12:00:10 GMT":  10 * time.Second,
		"Friday, 01-May-26 12:01:00 GMT": time.Minute,     // RFC 850 form
		"Fri May  1 12:00:05 2026":       5 * time.Second, // asctime form
		"Fri, 01 May 2026 11:00:00 GMT":  0,
		"99999999999999999999":           0,
	} {
		if got := ParseRetryAfter(value, now); got != want {
			t.Errorf("ParseRetryAfter(%q) = %s, want %s", value, got, want)
		}
	}
}

func TestTopicFor(t *testing.T) {
	a := TopicFor("01J9ZK6V3YQ4M8T2R7W5X1B0CD")
	if a != TopicFor("01J9ZK6V3YQ4M8T2R7W5X1B0CD") {
		t.Fatal("TopicFor is not deterministic")
	}
	if a == TopicFor("01J9ZK6V3YQ4M8T2R7W5X1B0CE") {
		t.Fatal("different ids share a topic")
	}
	for _, id := range []string{"", "x", strings.Repeat("long id ", 100), "ünïcødé/+="} {
		topic := TopicFor(id)
		if len(topic) != MaxTopicLength || ValidateTopic(topic) != nil {
			t.Errorf("TopicFor(%q) = %q is not a valid 32-character topic", id, topic)
		}
	}
	for topic, valid := range map[string]bool{
		"":                      true,
		"abcXYZ019-_":           true,
		strings.Repeat("a", 32): true,
		strings.Repeat("a", 33): false,
		"has space":             false,
		"plus+":                 false,
		"slash/":                false,
		"pad=":                  false,
		"ünï":                   false,
	} {
		if got := ValidateTopic(topic) == nil; got != valid {
			t.Errorf("ValidateTopic(%q) valid = %v, want %v", topic, got, valid)
		}
	}
}

// hostEntries turns test server URLs into allow-list entries (host:port).
func hostEntries(hosts []string) string {
	out := make([]string, len(hosts))
	for i, h := range hosts {
		h = strings.TrimPrefix(strings.TrimPrefix(h, "https://"), "http://")
		out[i], _, _ = strings.Cut(h, "/")
	}
	return strings.Join(out, ",")
}
