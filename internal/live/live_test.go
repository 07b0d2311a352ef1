package live

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type fakeConns struct {
	mu      sync.Mutex
	conns   map[string][]Connection
	removed []string
	readErr error
}

func (f *fakeConns) Connections(_ context.Context, users []string) (map[string][]Connection, error) {
	if f.readErr != nil {
		return nil, f.readErr
	}
	out := map[string][]Connection{}
	for _, u := range users {
		if cs, ok := f.conns[u]; ok {
			out[u] = cs
		}
	}
	return out, nil
}

func (f *fakeConns) RemoveConnection(_ context.Context, user, id string) ([]Connection, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removed = append(f.removed, user+"/"+id)
	return nil, nil
}

type fakeBadge struct{ n map[string]int }

func (b fakeBadge) Badge(_ context.Context, user string) (Unread, error) {
	return Unread{Count: b.n[user], Display: "x"}, nil
}

type fakeSender struct {
	mu    sync.Mutex
	posts map[string][]Message
	fail  map[string]error
}

func (s *fakeSender) PostToConnection(_ context.Context, id string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fail[id]; err != nil {
		return err
	}
	var m Message
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	s.posts[id] = append(s.posts[id], m)
	return nil
}

func sqsEvent(bodies ...string) events.SQSEvent {
	var ev events.SQSEvent
	for i, b := range bodies {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: string(rune('a' + i)), Body: b})
	}
	return ev
}

func batch(evs ...Event) string {
	b, _ := json.Marshal(Batch{Events: evs})
	return string(b)
}

// The poster posts only to open connections of the event's own user; a gone
// connection is forgotten, a failing post dropped, a malformed message
// reported for the DLQ, and nothing else fails.
func TestPoster(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	open := func(id string) Connection {
		return Connection{ID: id, ConnectedAt: now.Add(-time.Hour)}
	}
	conns := &fakeConns{conns: map[string][]Connection{
		"a": {open("a1"), open("a2"), open("a-gone"), open("a-fail"),
			{ID: "a-old", ConnectedAt: now.Add(-2*time.Hour - time.Second)}},
		"b": {open("b1")},
	}}
	sender := &fakeSender{posts: map[string][]Message{}, fail: map[string]error{"a-gone": ErrGone, "a-fail": errors.New("boom")}}
	p := &Poster{Connections: conns, Badge: fakeBadge{n: map[string]int{"a": 3}}, Sender: sender, Now: func() time.Time { return now }, Log: quiet}
	resp, err := p.Handle(context.Background(), sqsEvent(
		batch(Event{UserID: "a", Kind: KindCreated, ID: "n1"}, Event{UserID: "c", Kind: KindCreated, ID: "n2"}),
		`{"events":[{"userId":"","kind":"inbox.created"}]}`,
		`not json`,
	))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 2 || resp.BatchItemFailures[0].ItemIdentifier != "b" || resp.BatchItemFailures[1].ItemIdentifier != "c" {
		t.Errorf("failures %+v, want the two malformed messages", resp.BatchItemFailures)
	}
	for _, id := range []string{"a1", "a2"} {
		if got := sender.posts[id]; len(got) != 1 || got[0] != (Message{Kind: KindCreated, ID: "n1", Unread: Unread{Count: 3, Display: "x"}}) {
			t.Errorf("%s got %+v", id, got)
		}
	}
	for _, id := range []string{"b1", "a-old"} {
		if len(sender.posts[id]) != 0 {
			t.Errorf("%s got %+v: another user's, or a closed connection", id, sender.posts[id])
		}
	}
	if len(conns.removed) != 1 || conns.removed[0] != "a/a-gone" {
		t.Errorf("removed %v, want a/a-gone only", conns.removed)
	}
	// A failed read of the connections drops the posts; the message is done.
	conns.readErr = errors.New("throttled")
	resp, _ = p.Handle(context.Background(), sqsEvent(batch(Event{UserID: "a", Kind: KindUpdated})))
	if len(resp.BatchItemFailures) != 0 {
		t.Errorf("a failed read failed the message: %+v", resp.BatchItemFailures)
	}
}

func TestConnectionDeadline(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	c := Connection{ConnectedAt: t0}
	if !c.Open(t0.Add(MaxConnectionAge-time.Second)) || c.Open(t0.Add(MaxConnectionAge)) {
		t.Error("recorded: open until 2 hours after connecting")
	}
	// API Gateway's own rule, which the local gateway plays: 2 hours, or
	// 10 minutes after the client's last message.
	if got := GatewayDeadline(t0, t0.Add(time.Minute)); !got.Equal(t0.Add(11 * time.Minute)) {
		t.Errorf("idle deadline %v", got)
	}
	if got := GatewayDeadline(t0, t0.Add(MaxConnectionAge-time.Minute)); !got.Equal(t0.Add(MaxConnectionAge)) {
		t.Errorf("age deadline %v", got)
	}
	if PingInterval >= IdleTimeout-time.Minute+time.Second {
		t.Errorf("PingInterval %v leaves less than a minute of the idle timeout %v", PingInterval, IdleTimeout)
	}
}

type fakeCloser struct {
	mu     sync.Mutex
	closed []string
	// gone answers 410 for these ids (or every id when nil and goneAll).
	gone    map[string]bool
	goneAll bool
	err     error
}

// fakePresence records the presence writes.
type fakePresence struct {
	holds []time.Time // each lease's term
	ends  int
}

func (f *fakePresence) HoldPresence(_ context.Context, _ string, at, until time.Time) error {
	f.holds = append(f.holds, until)
	return nil
}
func (f *fakePresence) EndPresence(context.Context, string, time.Time) error {
	f.ends++
	return nil
}

func (f *fakeCloser) DeleteConnection(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	if f.goneAll || f.gone[id] {
		return ErrGone
	}
	f.closed = append(f.closed, id)
	return nil
}

func wsEvent(route, conn string, authorizer any) events.APIGatewayWebsocketProxyRequest {
	return events.APIGatewayWebsocketProxyRequest{RequestContext: events.APIGatewayWebsocketProxyRequestContext{
		RouteKey: route, ConnectionID: conn, Authorizer: authorizer}}
}

// TestRoutes: $connect records the connection and evicts past the bound,
// closing what it evicted; $default touches, $disconnect removes; without
// the authorizer's user nothing is recorded; a store failure refuses.
func TestRoutes(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	st, cl, pr := newMemConns(), &fakeCloser{}, &fakePresence{}
	st.seed("u1", Connection{ID: "old", ConnectedAt: now.Add(-time.Hour)})
	r := &Routes{Store: st, Presence: pr, Closer: cl, Now: func() time.Time { return now }, Log: quiet, MaxConnections: 1}
	auth := map[string]any{"principalId": "u1", "userId": "u1"}
	resp, _ := r.Handle(context.Background(), wsEvent("$connect", "c1", auth))
	if ids := st.ids("u1"); resp.StatusCode != http.StatusOK || !slices.Equal(ids, []string{"c1"}) || !slices.Equal(cl.closed, []string{"old"}) {
		t.Errorf("connect: %d, recorded %v, closed %v", resp.StatusCode, ids, cl.closed)
	}
	// A ping moves the lease to the idle timeout's end; it writes nothing else.
	now = now.Add(PingInterval)
	_, _ = r.Handle(context.Background(), wsEvent("$default", "c1", auth))
	if ids := st.ids("u1"); len(pr.holds) != 2 || !pr.holds[1].Equal(now.Add(IdleTimeout)) || !slices.Equal(ids, []string{"c1"}) {
		t.Errorf("ping: leases %v, recorded %v", pr.holds, ids)
	}
	// A disconnect with another connection of the user open keeps the
	// lease; the last one (one past its 2 hours left recorded) ends it.
	st.seed("u1", Connection{ID: "c2", ConnectedAt: now.Add(-time.Minute)}, Connection{ID: "c-expired", ConnectedAt: now.Add(-MaxConnectionAge)})
	_, _ = r.Handle(context.Background(), wsEvent("$disconnect", "c1", auth))
	if ids := st.ids("u1"); !slices.Equal(ids, []string{"c-expired", "c2"}) || pr.ends != 0 {
		t.Errorf("disconnect with c2 open: recorded %v, ends %d", ids, pr.ends)
	}
	_, _ = r.Handle(context.Background(), wsEvent("$disconnect", "c2", auth))
	if ids := st.ids("u1"); !slices.Equal(ids, []string{"c-expired"}) || pr.ends != 1 {
		t.Errorf("the last disconnect: recorded %v, %d ends, want 1", ids, pr.ends)
	}
	// Without the authorizer's user nothing is recorded.
	resp, _ = r.Handle(context.Background(), wsEvent("$connect", "c2", nil))
	if resp.StatusCode != http.StatusForbidden || st.users() != 1 {
		t.Errorf("no user: %d, %d users recorded", resp.StatusCode, st.users())
	}
	// A store failure refuses the connect.
	st.err = errors.New("down")
	if resp, _ := r.Handle(context.Background(), wsEvent("$connect", "c3", auth)); resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("store down: %d", resp.StatusCode)
	}
}

// writeCounter counts the table writes the routes make through their
// stores (each method one write).
type writeCounter struct{ n int }

func (w *writeCounter) AddConnection(context.Context, string, Connection) ([]Connection, error) {
	w.n++
	return nil, nil
}
func (w *writeCounter) EvictConnection(context.Context, string, string) (bool, error) {
	w.n++
	return true, nil
}
func (w *writeCounter) ForgetConnections(context.Context, string, []string) error {
	w.n++
	return nil
}
func (w *writeCounter) RemoveConnection(context.Context, string, string) ([]Connection, error) {
	w.n++
	return nil, nil
}
func (w *writeCounter) HoldPresence(context.Context, string, time.Time, time.Time) error {
	w.n++
	return nil
}
func (w *writeCounter) EndPresence(context.Context, string, time.Time) error    { w.n++; return nil }
func (w *writeCounter) AddOnline(context.Context, int, string, time.Time) error { w.n++; return nil }

// TestRouteWrites: the writes each route makes are the constants herald
// capacity prices the online profile with (a disconnect here is the
// user's last: it ends the lease).
func TestRouteWrites(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	auth := map[string]any{"principalId": "u1", "userId": "u1"}
	for _, tc := range []struct {
		route string
		want  int
	}{{"$connect", ConnectWrites}, {"$default", PingWrites}, {"$disconnect", DisconnectWrites}} {
		w := &writeCounter{}
		r := &Routes{Store: w, Presence: w, Online: w, Closer: &fakeCloser{}, Now: func() time.Time { return now }, Log: quiet}
		if resp, _ := r.Handle(context.Background(), events.APIGatewayWebsocketProxyRequest{Body: `{"action":"ping"}`,
			RequestContext: events.APIGatewayWebsocketProxyRequestContext{RouteKey: tc.route, ConnectionID: "c1", Authorizer: auth}}); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", tc.route, resp.StatusCode)
		}
		if w.n != tc.want {
			t.Errorf("%s: %d writes, want %d", tc.route, w.n, tc.want)
		}
	}
}

type fakeVerifier struct{}

func (fakeVerifier) Verify(_ context.Context, token string) (string, error) {
	if token == "good" {
		return "u1", nil
	}
	return "", errors.New("bad")
}

func TestAuthorizer(t *testing.T) {
	a := &Authorizer{Verifier: fakeVerifier{}, Log: quiet}
	arn := "arn:aws:execute-api:us-east-1:123456789012:abc/live/$connect"
	resp, err := a.Handle(context.Background(), events.APIGatewayCustomAuthorizerRequestTypeRequest{MethodArn: arn, QueryStringParameters: map[string]string{"token": "good"}})
	if err != nil || resp.PrincipalID != "u1" || resp.Context["userId"] != "u1" ||
		len(resp.PolicyDocument.Statement) != 1 || resp.PolicyDocument.Statement[0].Effect != "Allow" || resp.PolicyDocument.Statement[0].Resource[0] != arn {
		t.Fatalf("good token: %+v, %v", resp, err)
	}
	for _, tok := range []string{"", "bad"} {
		if _, err := a.Handle(context.Background(), events.APIGatewayCustomAuthorizerRequestTypeRequest{MethodArn: arn, QueryStringParameters: map[string]string{"token": tok}}); err == nil || err.Error() != "Unauthorized" {
			t.Errorf("token %q: %v, want Unauthorized (API Gateway's 401)", tok, err)
		}
	}
}
