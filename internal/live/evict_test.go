package live

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/storetest"
)

// memConns is the connection store in memory; its contract is the
// DynamoDB adapter's (TestMemConnectionsContract).
type memConns struct {
	mu    sync.Mutex
	conns map[string]map[string]Connection
	err   error
	// evictErr fails EvictConnection (a throttled or timed-out write).
	evictErr error
}

func newMemConns() *memConns { return &memConns{conns: map[string]map[string]Connection{}} }

func (m *memConns) AddConnection(_ context.Context, user string, c Connection) ([]Connection, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return nil, m.err
	}
	if m.conns[user] == nil {
		m.conns[user] = map[string]Connection{}
	}
	m.conns[user][c.ID] = c
	out := make([]Connection, 0, len(m.conns[user]))
	for _, c := range m.conns[user] {
		out = append(out, c)
	}
	return out, nil
}

func (m *memConns) EvictConnection(_ context.Context, user, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.evictErr != nil {
		return false, m.evictErr
	}
	_, ok := m.conns[user][id]
	delete(m.conns[user], id)
	return ok, nil
}

func (m *memConns) ForgetConnections(_ context.Context, user string, ids []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range ids {
		delete(m.conns[user], id)
	}
	return nil
}

func (m *memConns) RemoveConnection(_ context.Context, user, id string) ([]Connection, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.conns[user], id)
	var left []Connection
	for _, c := range m.conns[user] {
		left = append(left, c)
	}
	return left, nil
}

func (m *memConns) seed(user string, cs ...Connection) {
	for _, c := range cs {
		_, _ = m.AddConnection(context.Background(), user, c)
	}
}

// ids are the user's recorded connection ids, sorted (nil without any
// record of the user).
func (m *memConns) ids(user string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	cs, ok := m.conns[user]
	if !ok {
		return nil
	}
	out := []string{}
	for id := range cs {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

func (m *memConns) users() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.conns)
}

func TestMemConnectionsContract(t *testing.T) {
	storetest.ConnectionContract(t, func(t *testing.T) storetest.ConnectionHarness {
		m := newMemConns()
		return storetest.ConnectionHarness{
			Add: func(ctx context.Context, user, id string, at time.Time) ([]string, error) {
				return connectionIDs(m.AddConnection(ctx, user, Connection{ID: id, ConnectedAt: at}))
			},
			Remove: func(ctx context.Context, user, id string) ([]string, error) {
				return connectionIDs(m.RemoveConnection(ctx, user, id))
			},
			Evict: m.EvictConnection, Forget: m.ForgetConnections,
			IDs: func(_ testing.TB, user string) []string { return m.ids(user) },
		}
	})
}

// connectionIDs are the connections' ids, sorted (the contract's harness).
func connectionIDs(cs []Connection, err error) ([]string, error) {
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	slices.Sort(ids)
	return ids, err
}

// overLimit keeps the new connection and the newest others up to the
// bound, evicts the oldest (ties by id), and forgets the closed ones
// without evicting them.
func TestOverLimit(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	c := func(id string, ago time.Duration) Connection {
		return Connection{ID: id, ConnectedAt: now.Add(-ago)}
	}
	conns := []Connection{c("new", 0), c("b", 3*time.Second), c("a", 3*time.Second), c("c", time.Second), c("d", 2*time.Second),
		c("idle", 11*time.Minute), c("aged", 2*time.Hour)}
	closed, evict := overLimit(conns, "new", 3, now)
	var ids []string
	for _, e := range evict {
		ids = append(ids, e.ID)
	}
	// The record knows connect times only (pings write the presence
	// lease, not the connection): one idle for 11 minutes, whose
	// $disconnect was lost, counts as open and goes first as the oldest.
	if !slices.Equal(closed, []string{"aged"}) || !slices.Equal(ids, []string{"idle", "a", "b"}) {
		t.Errorf("closed %v, evicted %v; want [aged] and [idle a b]", closed, ids)
	}
	// The new connection is never evicted, even when it is the oldest.
	if _, evict := overLimit([]Connection{c("new", time.Minute), c("x", 0)}, "new", 1, now); len(evict) != 1 || evict[0].ID != "x" {
		t.Errorf("bound 1: evicted %+v, want x", evict)
	}
	if closed, evict := overLimit(conns[:3], "new", 5, now); len(closed)+len(evict) != 0 {
		t.Errorf("under the bound: %v %v", closed, evict)
	}
}

// laterQueue records the Closes sent to the live queue.
type laterQueue struct {
	mu     sync.Mutex
	closes []Close
	delays []time.Duration
	err    error
}

func (q *laterQueue) CloseLater(_ context.Context, c Close, delay time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err != nil {
		return q.err
	}
	q.closes, q.delays = append(q.closes, c), append(q.delays, delay)
	return nil
}

// A burst of connects of one user at once, each evicting from its own
// view of the store: none refused, exactly the bound left recorded, and
// every connection evicted closed once — at once, or through the live
// queue when API Gateway answered 410 (inside its $connect).
func TestRoutesConnectBurst(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	st, q := newMemConns(), &laterQueue{}
	// Half the connections are still inside their $connect when evicted.
	cl := &fakeCloser{gone: map[string]bool{}}
	for i := 0; i < 12; i += 2 {
		cl.gone["c"+strconv.Itoa(i)] = true
	}
	auth := map[string]any{"userId": "u1"}
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			// Each connect reads its own clock: a millisecond apart, in
			// no particular order against the writes.
			at := now.Add(time.Duration((i*7)%12) * time.Millisecond)
			r := &Routes{Store: st, Closer: cl, Later: q, Now: func() time.Time { return at }, Log: quiet}
			if resp, _ := r.Handle(context.Background(), wsEvent("$connect", "c"+strconv.Itoa(i), auth)); resp.StatusCode != http.StatusOK {
				t.Errorf("connect %d: %d", i, resp.StatusCode)
			}
		})
	}
	wg.Wait()
	kept := st.ids("u1")
	if len(kept) != DefaultMaxConnections {
		t.Fatalf("kept %v, want %d", kept, DefaultMaxConnections)
	}
	closed := map[string]int{}
	for _, id := range cl.closed {
		closed[id]++
	}
	for _, c := range q.closes {
		closed[c.ConnectionID]++
		if c.Attempt != 1 || !c.Until.Equal(now.Add(time.Duration((mustAtoi(t, c.ConnectionID[1:])*7)%12)*time.Millisecond+ConnectWindow)) {
			t.Errorf("close later %+v: want attempt 1, until its ConnectWindow's end", c)
		}
	}
	for i := range 12 {
		id := "c" + strconv.Itoa(i)
		want := 1
		if slices.Contains(kept, id) {
			want = 0
		}
		if closed[id] != want {
			t.Errorf("%s closed %d times, want %d (kept %v)", id, closed[id], want, kept)
		}
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A Close from the live queue: closed when API Gateway has the connection;
// sent again (1 s, doubling, never past the window's end) while it answers
// 410 inside the window, or fails otherwise (at most maxCloseAttempts
// calls); a 410 after the window is a gone connection. A malformed Close
// goes to the DLQ.
func TestPosterClose(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	body := func(c Close) string {
		b, _ := json.Marshal(Batch{Close: &c})
		return string(b)
	}
	for _, tt := range []struct {
		name      string
		c         Close
		closer    *fakeCloser
		wantClose bool
		wantNext  *Close
		wantDelay time.Duration
	}{
		{name: "established", c: Close{ConnectionID: "x", Until: now.Add(20 * time.Second), Attempt: 1}, closer: &fakeCloser{}, wantClose: true},
		{name: "still connecting", c: Close{ConnectionID: "x", Until: now.Add(20 * time.Second), Attempt: 1}, closer: &fakeCloser{goneAll: true},
			wantNext: &Close{ConnectionID: "x", Until: now.Add(20 * time.Second), Attempt: 2}, wantDelay: 2 * time.Second},
		{name: "near the window's end", c: Close{ConnectionID: "x", Until: now.Add(3 * time.Second), Attempt: 4}, closer: &fakeCloser{goneAll: true},
			wantNext: &Close{ConnectionID: "x", Until: now.Add(3 * time.Second), Attempt: 5}, wantDelay: 3 * time.Second},
		{name: "gone after the window", c: Close{ConnectionID: "x", Until: now, Attempt: 6}, closer: &fakeCloser{goneAll: true}},
		{name: "throttled", c: Close{ConnectionID: "x", Until: now.Add(-time.Minute), Attempt: 2}, closer: &fakeCloser{err: errors.New("429")},
			wantNext: &Close{ConnectionID: "x", Until: now.Add(-time.Minute), Attempt: 3}, wantDelay: 4 * time.Second},
		{name: "given up", c: Close{ConnectionID: "x", Until: now.Add(time.Minute), Attempt: maxCloseAttempts - 1}, closer: &fakeCloser{err: errors.New("500")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := &laterQueue{}
			p := &Poster{Closer: tt.closer, Later: q, Now: func() time.Time { return now }, Log: quiet}
			resp, err := p.Handle(context.Background(), sqsEvent(body(tt.c)))
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("%+v, %v", resp, err)
			}
			if closed := len(tt.closer.closed) == 1; closed != tt.wantClose {
				t.Errorf("closed %v, want %v", tt.closer.closed, tt.wantClose)
			}
			switch {
			case tt.wantNext == nil && len(q.closes) != 0:
				t.Errorf("sent again: %+v", q.closes)
			case tt.wantNext != nil && (len(q.closes) != 1 || q.closes[0] != *tt.wantNext || q.delays[0] != tt.wantDelay):
				t.Errorf("sent again %+v after %v, want %+v after %s", q.closes, q.delays, *tt.wantNext, tt.wantDelay)
			}
		})
	}
	p := &Poster{Closer: &fakeCloser{}, Later: &laterQueue{}, Now: func() time.Time { return now }, Log: quiet}
	resp, _ := p.Handle(context.Background(), sqsEvent(`{"close":{"connectionId":""}}`, `{"close":{"connectionId":"x","until":"2026-12-04T12:00:00Z"},"events":[{"userId":"u","kind":"inbox.created"}]}`))
	if len(resp.BatchItemFailures) != 2 {
		t.Errorf("malformed closes: %+v, want both reported", resp.BatchItemFailures)
	}
}

// What a connect does with a connection it evicted: closed when API
// Gateway has it; sent to the live queue on a 410 inside the connection's
// window (possibly still connecting) or a failed call; nothing more on a
// 410 past the window (gone).
func TestRoutesEvictedClose(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	auth := map[string]any{"userId": "u1"}
	for _, tt := range []struct {
		name     string
		age      time.Duration
		closer   *fakeCloser
		closed   bool
		queued   bool
		noQueue  bool
		queueErr error
		evictErr error
	}{
		{name: "established", age: time.Minute, closer: &fakeCloser{}, closed: true},
		{name: "still connecting", age: 2 * time.Second, closer: &fakeCloser{goneAll: true}, queued: true},
		{name: "gone", age: ConnectWindow, closer: &fakeCloser{goneAll: true}},
		{name: "call failed", age: time.Minute, closer: &fakeCloser{err: errors.New("timeout")}, queued: true},
		{name: "no live queue", age: 2 * time.Second, closer: &fakeCloser{goneAll: true}, noQueue: true},
		{name: "queue down", age: 2 * time.Second, closer: &fakeCloser{goneAll: true}, queueErr: errors.New("down")},
		{name: "eviction write failed", age: time.Minute, closer: &fakeCloser{}, evictErr: errors.New("throttled"), queued: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, q := newMemConns(), &laterQueue{err: tt.queueErr}
			st.seed("u1", Connection{ID: "old", ConnectedAt: now.Add(-tt.age)})
			st.evictErr = tt.evictErr
			r := &Routes{Store: st, Closer: tt.closer, Later: q, Now: func() time.Time { return now }, Log: quiet, MaxConnections: 1}
			if tt.noQueue {
				r.Later = nil
			}
			if resp, _ := r.Handle(context.Background(), wsEvent("$connect", "new", auth)); resp.StatusCode != http.StatusOK {
				t.Fatalf("connect: %d", resp.StatusCode)
			}
			wantIDs, wantUser := []string{"new"}, ""
			if tt.evictErr != nil {
				wantIDs, wantUser = []string{"new", "old"}, "u1" // the poster evicts it
			}
			if got := st.ids("u1"); !slices.Equal(got, wantIDs) {
				t.Errorf("recorded %v, want %v", got, wantIDs)
			}
			if closed := slices.Equal(tt.closer.closed, []string{"old"}); closed != tt.closed {
				t.Errorf("closed %v, want %v", tt.closer.closed, tt.closed)
			}
			want := Close{User: wantUser, ConnectionID: "old", Until: now.Add(-tt.age + ConnectWindow), Attempt: 1}
			if queued := len(q.closes) == 1 && q.closes[0] == want && q.delays[0] == time.Second; queued != tt.queued || len(q.closes) > 1 {
				t.Errorf("queued %+v after %v, want %v (%+v after 1 s)", q.closes, q.delays, tt.queued, want)
			}
		})
	}
}

// A Close whose record is still to be removed (the connect's eviction
// write failed): the poster evicts it, then closes it; one another connect
// evicted (or that disconnected) meanwhile is left alone; a failed
// eviction is sent again, with its user.
func TestPosterCloseEvictsFirst(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	body := func(c Close) string {
		b, _ := json.Marshal(Batch{Close: &c})
		return string(b)
	}
	pending := Close{User: "u1", ConnectionID: "old", Until: now.Add(-time.Minute), Attempt: 1}
	run := func(st *memConns) (*fakeCloser, *laterQueue) {
		t.Helper()
		cl, q := &fakeCloser{}, &laterQueue{}
		p := &Poster{Evict: st, Closer: cl, Later: q, Now: func() time.Time { return now }, Log: quiet}
		if resp, err := p.Handle(context.Background(), sqsEvent(body(pending))); err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("%+v, %v", resp, err)
		}
		return cl, q
	}
	st := newMemConns()
	st.seed("u1", Connection{ID: "old", ConnectedAt: now.Add(-time.Hour)}, Connection{ID: "new", ConnectedAt: now})
	if cl, q := run(st); !slices.Equal(st.ids("u1"), []string{"new"}) || !slices.Equal(cl.closed, []string{"old"}) || len(q.closes) != 0 {
		t.Errorf("evicted and closed: recorded %v, closed %v, sent again %+v", st.ids("u1"), cl.closed, q.closes)
	}
	if cl, q := run(st); len(cl.closed) != 0 || len(q.closes) != 0 {
		t.Errorf("already evicted: closed %v, sent again %+v", cl.closed, q.closes)
	}
	st.seed("u1", Connection{ID: "old", ConnectedAt: now.Add(-time.Hour)})
	st.evictErr = errors.New("throttled")
	next := pending
	next.Attempt = 2
	if cl, q := run(st); len(cl.closed) != 0 || len(q.closes) != 1 || q.closes[0] != next || q.delays[0] != 2*time.Second {
		t.Errorf("eviction failed: closed %v, sent again %+v after %v; want %+v after 2 s", cl.closed, q.closes, q.delays, next)
	}
}
