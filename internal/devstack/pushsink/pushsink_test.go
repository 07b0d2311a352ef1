package pushsink_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack/pushsink"
	"github.com/heraldhq/herald/internal/webpush"
)

// startSink serves a sink on a loopback port. The listener exists before the
// handler so the sink can be told its own base URL.
func startSink(t *testing.T, now func() time.Time) (*pushsink.Sink, *httptest.Server) {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	sink, err := pushsink.New("http://"+srv.Listener.Addr().String(), now)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = sink
	srv.Start()
	t.Cleanup(srv.Close)
	return sink, srv
}

type testApp struct {
	keys   webpush.VAPIDKeys
	sender *webpush.Sender
	vapid  *webpush.VAPIDSigner
}

func newTestApp(t *testing.T, srv *httptest.Server, now func() time.Time) testApp {
	t.Helper()
	keys, err := webpush.GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	sender, err := webpush.NewSender(webpush.SenderConfig{
		Keys: keys, Contact: "ops@example.com", Client: srv.Client(), Now: now, AllowInsecureLoopback: true, Hosts: sinkHosts(t, srv),
	})
	if err != nil {
		t.Fatal(err)
	}
	vapid, err := webpush.NewVAPIDSigner(webpush.VAPIDConfig{Keys: keys, Contact: "ops@example.com", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return testApp{keys: keys, sender: sender, vapid: vapid}
}

func createSubscription(t *testing.T, srv *httptest.Server, body string) (string, webpush.Subscription, *http.Response) {
	t.Helper()
	resp, err := srv.Client().Post(srv.URL+"/_dev/push-subscriptions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		return "", webpush.Subscription{}, resp
	}
	sub, err := webpush.ParseSubscription(raw, webpush.ValidationOptions{AllowInsecureLoopback: true, Hosts: sinkHosts(t, srv)})
	if err != nil {
		t.Fatalf("sink issued an invalid subscription %s: %v", raw, err)
	}
	var withID struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &withID); err != nil || withID.ID == "" {
		t.Fatalf("no id in %s", raw)
	}
	return withID.ID, sub, resp
}

func TestSubscriptionIsBrowserShaped(t *testing.T) {
	_, srv := startSink(t, nil)
	id, sub, resp := createSubscription(t, srv, "")
	if want := srv.URL + "/_dev/push/endpoints/" + id; sub.Endpoint != want {
		t.Fatalf("endpoint = %q, want %q", sub.Endpoint, want)
	}
	if loc := resp.Header.Get("Location"); loc != srv.URL+"/_dev/push-subscriptions/"+id {
		t.Fatalf("Location = %q", loc)
	}
	_, second, _ := createSubscription(t, srv, "")
	if second.Endpoint == sub.Endpoint || second.Auth == sub.Auth || second.P256dh == sub.P256dh {
		t.Fatal("two subscriptions share an endpoint or keys")
	}
}

func TestSenderToSinkEndToEnd(t *testing.T) {
	sink, srv := startSink(t, nil)
	app := newTestApp(t, srv, nil)
	id, sub, _ := createSubscription(t, srv, "")

	payload := `{"title":"Order shipped","body":"Arrives Thursday"}`
	res, err := app.sender.Send(context.Background(), sub, webpush.Message{
		Payload: []byte(payload), TTL: time.Hour, Urgency: webpush.UrgencyHigh, Topic: webpush.TopicFor("n1"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusCreated || !strings.HasPrefix(res.MessageID, srv.URL+"/_dev/push/messages/") {
		t.Fatalf("Result = %+v", res)
	}
	if _, err := app.sender.Send(context.Background(), sub, webpush.Message{Payload: []byte("plain text"), TTL: 0}); err != nil {
		t.Fatal(err)
	}

	msgs := sink.MessagesFor(id)
	if len(msgs) != 2 {
		t.Fatalf("got %d messages, want 2", len(msgs))
	}
	newest, first := msgs[0], msgs[1]
	if string(newest.Body) != "plain text" || newest.Payload != "plain text" || newest.TTL != 0 || newest.Urgency != "" {
		t.Errorf("newest = %+v", newest)
	}
	if string(first.Body) != payload || first.TTL != 3600 || first.Urgency != "high" ||
		first.Topic != webpush.TopicFor("n1") || first.VAPIDSub != "mailto:ops@example.com" ||
		first.SubscriptionID != id || first.Endpoint != sub.Endpoint || first.ReceivedAt.IsZero() {
		t.Errorf("first = %+v", first)
	}

	// The HTTP listing shows the same, with JSON payloads decoded.
	resp, err := srv.Client().Get(srv.URL + "/_dev/push")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var listed []map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&listed); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 2 || listed[0]["payload"] != "plain text" {
		t.Fatalf("listing = %v", listed)
	}
	decoded, ok := listed[1]["payload"].(map[string]any)
	if !ok || decoded["title"] != "Order shipped" {
		t.Fatalf("JSON payload listed as %#v, want a decoded object", listed[1]["payload"])
	}
	for _, key := range []string{"subscriptionId", "endpoint", "ttl", "urgency", "topic", "vapidSub", "receivedAt"} {
		if _, ok := listed[1][key]; !ok {
			t.Errorf("listing lacks %q", key)
		}
	}

	// The Location of a push resolves to the message.
	got, err := srv.Client().Get(res.MessageID)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Body.Close()
	var one pushsink.Message
	if err := json.NewDecoder(got.Body).Decode(&one); err != nil || got.StatusCode != 200 || one.Topic != webpush.TopicFor("n1") {
		t.Fatalf("GET Location = %d %+v %v", got.StatusCode, one, err)
	}
}

func TestSameTopicReplacesListedMessageButCounts(t *testing.T) {
	sink, srv := startSink(t, nil)
	app := newTestApp(t, srv, nil)
	idA, subA, _ := createSubscription(t, srv, "")
	idB, subB, _ := createSubscription(t, srv, "")
	send := func(sub webpush.Subscription, topic, payload string) {
		t.Helper()
		if _, err := app.sender.Send(context.Background(), sub, webpush.Message{Payload: []byte(payload), TTL: time.Minute, Topic: topic}); err != nil {
			t.Fatal(err)
		}
	}
	send(subA, "t1", "first")
	send(subA, "t1", "second")
	send(subA, "t2", "other topic")
	send(subA, "", "no topic")
	send(subA, "", "no topic")
	send(subB, "t1", "other subscription")

	var bodies []string
	for _, m := range sink.MessagesFor(idA) {
		bodies = append(bodies, string(m.Body))
	}
	if want := []string{"no topic", "no topic", "other topic", "second"}; fmt.Sprint(bodies) != fmt.Sprint(want) {
		t.Fatalf("listed %q, want %q", bodies, want)
	}
	if n := sink.ReceivedCount(idA); n != 5 {
		t.Fatalf("ReceivedCount(A) = %d, want 5 (collapsed pushes still count)", n)
	}
	if n := len(sink.MessagesFor(idB)); n != 1 || sink.ReceivedCount(idB) != 1 {
		t.Fatalf("subscription B has %d listed, %d received; want 1, 1", n, sink.ReceivedCount(idB))
	}
	if n := len(sink.Messages()); n != 5 {
		t.Fatalf("Messages() has %d, want 5", n)
	}

	sink.Reset()
	if len(sink.Messages()) != 0 || sink.ReceivedCount(idA) != 0 {
		t.Fatal("Reset kept messages or counts")
	}
	send(subA, "t1", "after reset")
	if len(sink.Messages()) != 1 {
		t.Fatal("subscription unusable after Reset")
	}
}

func TestExpiredSubscriptionIsGone(t *testing.T) {
	sink, srv := startSink(t, nil)
	app := newTestApp(t, srv, nil)
	idGo, subGo, _ := createSubscription(t, srv, "")
	idHTTP, subHTTP, _ := createSubscription(t, srv, "")

	if err := sink.Expire(idGo); err != nil {
		t.Fatal(err)
	}
	if err := sink.Expire("nope"); !errors.Is(err, pushsink.ErrUnknownSubscription) {
		t.Fatalf("Expire(unknown) = %v", err)
	}
	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/_dev/push-subscriptions/"+idHTTP, nil)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE = %d, want 204", resp.StatusCode)
	}
	req, _ = http.NewRequest(http.MethodDelete, srv.URL+"/_dev/push-subscriptions/nope", nil)
	if resp, err = srv.Client().Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("DELETE unknown = %d, want 404", resp.StatusCode)
	}

	for _, sub := range []webpush.Subscription{subGo, subHTTP} {
		_, err := app.sender.Send(context.Background(), sub, webpush.Message{Payload: []byte("x"), TTL: 60})
		var perr *webpush.ProviderError
		if !errors.Is(err, webpush.ErrSubscriptionGone) || !errors.As(err, &perr) || perr.StatusCode != http.StatusGone {
			t.Fatalf("Send to expired = %v, want 410 ErrSubscriptionGone", err)
		}
	}
	unknown := subGo
	unknown.Endpoint = srv.URL + "/_dev/push/endpoints/never-issued"
	_, err = app.sender.Send(context.Background(), unknown, webpush.Message{Payload: []byte("x")})
	var perr *webpush.ProviderError
	if !errors.As(err, &perr) || perr.StatusCode != http.StatusNotFound || !errors.Is(err, webpush.ErrSubscriptionGone) {
		t.Fatalf("Send to unknown = %v, want 404 ErrSubscriptionGone", err)
	}
	if len(sink.Messages()) != 0 {
		t.Fatal("expired subscriptions received messages")
	}
}

func TestInjectedFaults(t *testing.T) {
	sink, srv := startSink(t, nil)
	app := newTestApp(t, srv, nil)
	_, sub, _ := createSubscription(t, srv, "")
	send := func() error {
		_, err := app.sender.Send(context.Background(), sub, webpush.Message{Payload: []byte("x"), TTL: 60})
		return err
	}

	sink.FailNext(2, http.StatusTooManyRequests, time.Second)
	sink.FailNext(1, http.StatusInternalServerError, 0)
	// The same over HTTP, queued after the Go-injected ones.
	resp, err := srv.Client().Post(srv.URL+"/_dev/push/faults", "application/json", strings.NewReader(`{"count":1,"status":400}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("POST faults = %d", resp.StatusCode)
	}

	for i, want := range []struct {
		status     int
		transient  bool
		retryAfter time.Duration
	}{
		{429, true, time.Second},
		{429, true, time.Second},
		{500, true, 0},
		{400, false, 0},
	} {
		var perr *webpush.ProviderError
		if err := send(); !errors.As(err, &perr) || perr.StatusCode != want.status || perr.Transient != want.transient || perr.RetryAfter != want.retryAfter {
			t.Fatalf("push %d: err = %v, want status %d transient %v retry %s", i, err, want.status, want.transient, want.retryAfter)
		}
	}
	if err := send(); err != nil {
		t.Fatalf("after the faults: %v", err)
	}
	if n := len(sink.Messages()); n != 1 {
		t.Fatalf("%d messages recorded, want only the one after the faults", n)
	}

	for _, body := range []string{`{"count":0,"status":500}`, `{"count":1,"status":42}`, `nope`} {
		resp, err := srv.Client().Post(srv.URL+"/_dev/push/faults", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("POST faults %s = %d, want 400", body, resp.StatusCode)
		}
	}
}

func TestRestrictedSubscriptionRequiresItsKey(t *testing.T) {
	sink, srv := startSink(t, nil)
	owner := newTestApp(t, srv, nil)
	stranger := newTestApp(t, srv, nil)
	_, sub, _ := createSubscription(t, srv, `{"applicationServerKey":"`+owner.keys.PublicKey+`"}`)

	_, err := stranger.sender.Send(context.Background(), sub, webpush.Message{Payload: []byte("x")})
	var perr *webpush.ProviderError
	if !errors.As(err, &perr) || perr.StatusCode != http.StatusForbidden || perr.Transient {
		t.Fatalf("Send with another key = %v, want permanent 403", err)
	}
	if _, err := owner.sender.Send(context.Background(), sub, webpush.Message{Payload: []byte("x")}); err != nil {
		t.Fatalf("Send with the subscription's key: %v", err)
	}
	if len(sink.Messages()) != 1 {
		t.Fatal("want exactly the owner's message")
	}

	if _, _, resp := createSubscription(t, srv, `{"applicationServerKey":"AAAA"}`); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad applicationServerKey = %d, want 400", resp.StatusCode)
	}
}

func TestPushRejectsBadRequests(t *testing.T) {
	now := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	sink, srv := startSink(t, func() time.Time { return now })
	app := newTestApp(t, srv, func() time.Time { return now })
	id, sub, _ := createSubscription(t, srv, "")

	auth, err := app.vapid.Authorization(sub.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	staleSigner, err := webpush.NewVAPIDSigner(webpush.VAPIDConfig{
		Keys: app.keys, Contact: "ops@example.com", TTL: time.Hour, Now: func() time.Time { return now.Add(-2 * time.Hour) },
	})
	if err != nil {
		t.Fatal(err)
	}
	staleAuth, _ := staleSigner.Authorization(sub.Endpoint)
	wrongAudAuth, _ := app.vapid.Authorization("http://127.0.0.2:1/x")
	body, err := webpush.Encrypt(sub, []byte(`{"ok":true}`), webpush.EncryptOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, otherSub, _ := createSubscription(t, srv, "")
	otherBody, _ := webpush.Encrypt(otherSub, []byte("for someone else"), webpush.EncryptOptions{})

	good := map[string]string{"Authorization": auth, "TTL": "60", "Content-Encoding": "aes128gcm"}
	with := func(name, value string) map[string]string {
		h := map[string]string{}
		for k, v := range good {
			h[k] = v
		}
		if value == "" {
			delete(h, name)
		} else {
			h[name] = value
		}
		return h
	}
	for _, tc := range []struct {
		name    string
		headers map[string]string
		body    []byte
		want    int
	}{
		{"valid", good, body, 201},
		{"no Authorization", with("Authorization", ""), body, 401},
		{"legacy WebPush scheme", with("Authorization", strings.Replace(auth, "vapid", "WebPush", 1)), body, 401},
		{"expired token", with("Authorization", staleAuth), body, 401},
		{"wrong audience", with("Authorization", wrongAudAuth), body, 401},
		{"tampered token", with("Authorization", strings.Replace(auth, "vapid t=ey", "vapid t=eY", 1)), body, 401},
		{"no TTL", with("TTL", ""), body, 400},
		{"negative TTL", with("TTL", "-1"), body, 400},
		{"non-numeric TTL", with("TTL", "soon"), body, 400},
		{"no Content-Encoding", with("Content-Encoding", ""), body, 400},
		{"legacy aesgcm", with("Content-Encoding", "aesgcm"), body, 400},
		{"bad Urgency", with("Urgency", "urgent"), body, 400},
		{"bad Topic", with("Topic", "not valid!"), body, 400},
		{"garbage body", good, []byte("not encrypted at all"), 400},
		{"encrypted to another subscription", good, otherBody, 400},
		{"body over 4096 bytes", good, bytes.Repeat([]byte{1}, webpush.MaxBodySize+1), 413},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, sub.Endpoint, bytes.NewReader(tc.body))
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tc.want {
				reason, _ := io.ReadAll(resp.Body)
				t.Fatalf("status = %d (%s), want %d", resp.StatusCode, reason, tc.want)
			}
		})
	}
	if n := sink.ReceivedCount(id); n != 1 {
		t.Fatalf("ReceivedCount = %d, want only the valid push", n)
	}
}

func TestConcurrentPushes(t *testing.T) {
	sink, srv := startSink(t, nil)
	app := newTestApp(t, srv, nil)
	const subscriptions, perSubscription = 4, 10
	ids := make([]string, subscriptions)
	subs := make([]webpush.Subscription, subscriptions)
	for i := range subscriptions {
		ids[i], subs[i], _ = createSubscription(t, srv, "")
	}
	var wg sync.WaitGroup
	errs := make(chan error, subscriptions*perSubscription)
	for i := range subscriptions {
		for j := range perSubscription {
			wg.Go(func() {
				payload := fmt.Sprintf(`{"sub":%d,"n":%d}`, i, j)
				if _, err := app.sender.Send(context.Background(), subs[i], webpush.Message{Payload: []byte(payload), TTL: 60}); err != nil {
					errs <- err
				}
				_ = sink.Messages() // readers race with writers
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i, id := range ids {
		if n := sink.ReceivedCount(id); n != perSubscription {
			t.Errorf("subscription %d received %d, want %d", i, n, perSubscription)
		}
		if n := len(sink.MessagesFor(id)); n != perSubscription {
			t.Errorf("subscription %d lists %d, want %d", i, n, perSubscription)
		}
	}
}

func TestMountedUnderPathPrefix(t *testing.T) {
	srv := httptest.NewUnstartedServer(nil)
	sink, err := pushsink.New("http://"+srv.Listener.Addr().String()+"/sinks/", nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = sink
	srv.Start()
	defer srv.Close()

	resp, err := srv.Client().Post(srv.URL+"/sinks/_dev/push-subscriptions", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sub webpush.Subscription
	if err := json.NewDecoder(resp.Body).Decode(&sub); err != nil || resp.StatusCode != 201 {
		t.Fatalf("create = %d, %v", resp.StatusCode, err)
	}
	if !strings.HasPrefix(sub.Endpoint, srv.URL+"/sinks/_dev/push/endpoints/") {
		t.Fatalf("endpoint %q is not under the base path", sub.Endpoint)
	}
	app := newTestApp(t, srv, nil)
	if _, err := app.sender.Send(context.Background(), sub, webpush.Message{Payload: []byte("hi")}); err != nil {
		t.Fatal(err)
	}
	if len(sink.Messages()) != 1 {
		t.Fatal("message not recorded")
	}
}

func TestNewRejectsBadBaseURL(t *testing.T) {
	for _, base := range []string{"", "127.0.0.1:3000", "ftp://127.0.0.1", "http://127.0.0.1:3000/?x=1"} {
		if _, err := pushsink.New(base, nil); err == nil {
			t.Errorf("New(%q) accepted", base)
		}
	}
}

// sinkHosts is the push endpoint allow-list naming the sink's test server.
func sinkHosts(t *testing.T, srv *httptest.Server) webpush.HostList {
	t.Helper()
	hosts, err := webpush.ParseHostList(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	return hosts
}

// TestSlowPushes: a slow push is delivered after its delay; one whose sender
// gives up first is not delivered (the sink sees the request cancelled).
func TestSlowPushes(t *testing.T) {
	sink, srv := startSink(t, nil)
	app := newTestApp(t, srv, nil)
	_, sub, _ := createSubscription(t, srv, "")
	const delay = 300 * time.Millisecond
	sink.SlowNext(2, delay)
	start := time.Now()
	if _, err := app.sender.Send(context.Background(), sub, webpush.Message{Payload: []byte("x"), TTL: 60}); err != nil || time.Since(start) < delay {
		t.Fatalf("slow push: %v after %v, want delivered after %v", err, time.Since(start), delay)
	}
	ctx, cancel := context.WithTimeout(context.Background(), delay/4)
	defer cancel()
	if _, err := app.sender.Send(ctx, sub, webpush.Message{Payload: []byte("y"), TTL: 60}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("abandoned push: %v, want the deadline's error", err)
	}
	eventually(t, func() bool { return len(sink.SlowCalls()) == 2 })
	if calls := sink.SlowCalls(); calls[0].Abandoned || !calls[1].Abandoned || calls[1].Waited >= delay {
		t.Fatalf("slow calls %+v, want one answered, one abandoned before its delay", calls)
	}
	if n := len(sink.Messages()); n != 1 {
		t.Fatalf("%d messages delivered, want only the one answered in time", n)
	}
}

// eventually polls cond for up to 5 s (the sink notices a closed
// connection asynchronously).
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met in 5 s")
}
