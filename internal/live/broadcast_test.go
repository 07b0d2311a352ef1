package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/inbox"
	"github.com/heraldhq/herald/internal/storetest"
)

// memOnline is the online set and the announcements' marks in memory; its
// contract is the DynamoDB adapter's (TestMemOnlineContract).
type memOnline struct {
	mu       sync.Mutex
	shards   map[int]map[string]time.Time
	anns     map[string]*inbox.Announcement
	progress map[string]string // announcement/shard → the page it stands at
	readErr  error
	queries  int
}

func newMemOnline() *memOnline {
	return &memOnline{shards: map[int]map[string]time.Time{}, anns: map[string]*inbox.Announcement{}, progress: map[string]string{}}
}

// AdvanceBroadcast keeps a shard's position as the adapter does: "" before
// the first page, "p:<after>" at a page, "done" at the end.
func (m *memOnline) AdvanceBroadcast(_ context.Context, id string, shard int, after, next string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.anns[id]; !ok {
		return false, nil
	}
	k := fmt.Sprintf("%s/%d", id, shard)
	at := ""
	if after != "" {
		at = "p:" + after
	}
	if m.progress[k] != at {
		return false, nil
	}
	m.progress[k] = "done"
	if next != "" {
		m.progress[k] = "p:" + next
	}
	return true, nil
}

func (m *memOnline) AddOnline(_ context.Context, shard int, user string, until time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.shards[shard] == nil {
		m.shards[shard] = map[string]time.Time{}
	}
	m.shards[shard][user] = until.Truncate(time.Second) // the stored ttl is in seconds
	return nil
}

func (m *memOnline) OnlineUsers(_ context.Context, shard int, after string, now time.Time, limit int) ([]string, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.queries++
	if m.readErr != nil {
		return nil, "", m.readErr
	}
	var keys []string
	for u := range m.shards[shard] {
		if u > after {
			keys = append(keys, u)
		}
	}
	sort.Strings(keys)
	next := ""
	if len(keys) >= limit {
		keys, next = keys[:limit], keys[limit-1]
	}
	var users []string
	for _, u := range keys {
		if m.shards[shard][u].Unix() > now.Unix() {
			users = append(users, u)
		}
	}
	return users, next, nil
}

func (m *memOnline) MarkAnnouncementLive(_ context.Context, id string, at time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.anns[id]
	if !ok || !a.LiveAt.IsZero() {
		return false, nil
	}
	a.LiveAt = at
	return true, nil
}

func (m *memOnline) UnmarkAnnouncementLive(_ context.Context, id string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if a, ok := m.anns[id]; ok && a.LiveAt.Equal(at) {
		a.LiveAt = time.Time{}
	}
	return nil
}

func (m *memOnline) UnexpiredAnnouncements(_ context.Context, now time.Time) ([]inbox.Announcement, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []inbox.Announcement
	for _, a := range m.anns {
		if now.Before(a.ExpiresAt) {
			out = append(out, *a)
		}
	}
	return out, nil
}

func (m *memOnline) seed(a inbox.Announcement) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.anns[a.ID] = &a
}

func (m *memOnline) liveAt(id string) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	if a, ok := m.anns[id]; ok {
		return a.LiveAt
	}
	return time.Time{}
}

func TestMemOnlineContract(t *testing.T) {
	storetest.OnlineContract(t, func(t *testing.T) storetest.OnlineHarness {
		m := newMemOnline()
		return storetest.OnlineHarness{
			AddOnline: m.AddOnline, OnlineUsers: m.OnlineUsers, Mark: m.MarkAnnouncementLive, Unmark: m.UnmarkAnnouncementLive,
			SeedAnnouncement: func(_ testing.TB, id string) { m.seed(inbox.Announcement{ID: id}) },
			MarkedAt:         func(_ testing.TB, id string) time.Time { return m.liveAt(id) },
			Advance:          m.AdvanceBroadcast,
		}
	})
}

// fakeQueue records broadcast messages and their delays.
type fakeQueue struct {
	mu     sync.Mutex
	sent   []Broadcast
	delays []time.Duration
	err    error
}

func (q *fakeQueue) Broadcast(_ context.Context, bs []Broadcast, delay time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err != nil {
		return q.err
	}
	q.sent = append(q.sent, bs...)
	for range bs {
		q.delays = append(q.delays, delay)
	}
	return nil
}

func (q *fakeQueue) take() ([]Broadcast, []time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	s, d := q.sent, q.delays
	q.sent, q.delays = nil, nil
	return s, d
}

func broadcastBody(b Broadcast) string {
	raw, _ := json.Marshal(Batch{Broadcast: &b})
	return string(raw)
}

// annID is an announcement id of the real shape.
func annID(n int) string { return fmt.Sprintf("a%026d", n) }

// includeBadge is a badge that must be told of a broadcast's announcement
// before it counts it (as StoreBadge).
type includeBadge struct {
	mu       sync.Mutex
	known    map[string]bool
	included []string
}

func (b *includeBadge) Include(_ context.Context, id string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.known[id] = true
	b.included = append(b.included, id)
	return nil
}

func (b *includeBadge) Badge(_ context.Context, user string) (Unread, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return Unread{Count: len(b.known), Display: "x"}, nil
}

// A broadcast message posts the announcement to one page of its shard's
// online users that have an open connection (not to stale entries, nor to
// closed connections), with a badge that counts it; a full page sends the
// shard's continuation, paced to the rate; the last page sends none; a
// malformed broadcast goes to the DLQ.
func TestPosterBroadcast(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	online := newMemOnline()
	var conns = &fakeConns{conns: map[string][]Connection{}}
	const shard = 3
	var users []string
	for i := range BroadcastPage + 20 {
		u := fmt.Sprintf("u%03d", i)
		users = append(users, u)
		_ = online.AddOnline(context.Background(), shard, u, now.Add(time.Hour))
		switch {
		case i%10 == 1: // connected once, closed since: no open connection
			conns.conns[u] = []Connection{{ID: u + "-c", ConnectedAt: now.Add(-MaxConnectionAge - time.Minute)}}
		case i%10 == 2: // no connections item at all
		default:
			conns.conns[u] = []Connection{{ID: u + "-c", ConnectedAt: now.Add(-time.Minute)}}
		}
	}
	_ = online.AddOnline(context.Background(), shard, "u000-stale", now.Add(-time.Second))
	conns.conns["u000-stale"] = []Connection{{ID: "stale-c", ConnectedAt: now}}
	_ = online.AddOnline(context.Background(), shard+1, "other-shard", now.Add(time.Hour))
	conns.conns["other-shard"] = []Connection{{ID: "other-c", ConnectedAt: now}}

	sender := &fakeSender{posts: map[string][]Message{}}
	q := &fakeQueue{}
	badge := &includeBadge{known: map[string]bool{"a-old": true}}
	p := &Poster{Connections: conns, Badge: badge, Sender: sender, Now: func() time.Time { return now }, Log: quiet,
		Online: online, Progress: online, Queue: q, BroadcastRate: 400}
	id := annID(1)
	online.seed(inbox.Announcement{ID: id, PublishedAt: now, ExpiresAt: now.Add(time.Hour)})
	resp, err := p.Handle(context.Background(), sqsEvent(broadcastBody(Broadcast{ID: id, Shard: shard}),
		broadcastBody(Broadcast{ID: "n-not-an-announcement", Shard: shard}),
		broadcastBody(Broadcast{ID: id, Shard: OnlineShards}),
		`{"events":[{"userId":"u1","kind":"inbox.created","id":"n1"}],"broadcast":{"id":"`+id+`","shard":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 3 {
		t.Errorf("failures %+v, want the three malformed broadcasts", resp.BatchItemFailures)
	}
	sent, delays := q.take()
	// The first page evaluates 100 entries: u000 … u000-stale … u098.
	if len(sent) != 1 || sent[0].ID != id || sent[0].Shard != shard || sent[0].After != "u098" {
		t.Fatalf("continuation %+v, want one after u098", sent)
	}
	// 99 entries were users; 99 users at 400/s over 16 shards: 3.96 s.
	if want := time.Duration(99 * float64(OnlineShards) / 400 * float64(time.Second)); delays[0] != want {
		t.Errorf("delay %s, want %s (the shard's share of the rate)", delays[0], want)
	}
	wantPosted := func(from, to int) {
		t.Helper()
		for _, u := range users[from:to] {
			got := sender.posts[u+"-c"]
			open := conns.conns[u] != nil && conns.conns[u][0].Open(now)
			switch {
			case open && (len(got) != 1 || got[0] != (Message{Kind: KindCreated, ID: id, Unread: Unread{Count: 2, Display: "x"}})):
				t.Errorf("%s got %+v, want inbox.created %s counting it", u, got, id)
			case !open && len(got) != 0:
				t.Errorf("%s has no open connection but got %+v", u, got)
			}
		}
	}
	wantPosted(0, 99)
	for _, c := range []string{"stale-c", "other-c", users[99] + "-c"} {
		if len(sender.posts[c]) != 0 {
			t.Errorf("%s got %+v: a stale entry, another shard, or the next page", c, sender.posts[c])
		}
	}
	if !slices.Equal(badge.included, []string{id}) {
		t.Errorf("badge told of %v, want the broadcast's id", badge.included)
	}
	// The continuation: the rest of the shard, and the end (no further message).
	if _, err := p.Handle(context.Background(), sqsEvent(broadcastBody(sent[0]))); err != nil {
		t.Fatal(err)
	}
	wantPosted(99, len(users))
	if sent, _ := q.take(); len(sent) != 0 {
		t.Errorf("the last page sent %+v", sent)
	}
	// A failed read of the shard drops it; the message is done.
	online.readErr = errors.New("throttled")
	resp, _ = p.Handle(context.Background(), sqsEvent(broadcastBody(Broadcast{ID: id, Shard: shard})))
	if len(resp.BatchItemFailures) != 0 {
		t.Errorf("a failed read failed the message: %+v", resp.BatchItemFailures)
	}
}

// A page message delivered again (SQS delivers at least once; a poster that
// timed out after queueing the continuation) neither forks the shard's
// chain nor posts the page twice: each page's position is taken once, the
// second delivery finds it taken and does nothing (issue 36, 10b).
func TestRedeliveredBroadcastPageDoesNotFork(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	online := newMemOnline()
	conns := &fakeConns{conns: map[string][]Connection{}}
	const shard = 2
	for i := range 2*BroadcastPage + 10 {
		u := fmt.Sprintf("u%03d", i)
		_ = online.AddOnline(context.Background(), shard, u, now.Add(time.Hour))
		conns.conns[u] = []Connection{{ID: u + "-c", ConnectedAt: now}}
	}
	id := annID(7)
	online.seed(inbox.Announcement{ID: id, PublishedAt: now, ExpiresAt: now.Add(time.Hour)})
	sender := &fakeSender{posts: map[string][]Message{}}
	q := &fakeQueue{}
	p := &Poster{Connections: conns, Badge: &includeBadge{known: map[string]bool{}}, Sender: sender, Now: func() time.Time { return now }, Log: quiet,
		Online: online, Progress: online, Queue: q}

	// Walk the shard, delivering every message twice: once alone, once
	// again after its continuation was queued (a redelivery).
	pending := []Broadcast{{ID: id, Shard: shard}}
	pages := 0
	for len(pending) > 0 {
		b := pending[0]
		pending = pending[1:]
		for range 2 {
			if resp, err := p.Handle(context.Background(), sqsEvent(broadcastBody(b))); err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("page after %q: %v, %+v", b.After, err, resp.BatchItemFailures)
			}
		}
		sent, _ := q.take()
		pending = append(pending, sent...)
		if pages++; pages > 10 {
			t.Fatalf("the chain does not end: %d pages", pages)
		}
	}
	if pages != 3 {
		t.Errorf("%d pages walked, want 3 (one chain)", pages)
	}
	for u, cs := range conns.conns {
		if got := len(sender.posts[cs[0].ID]); got != 1 {
			t.Errorf("%s got %d posts, want 1", u, got)
		}
	}
	// Two deliveries at once: one posts and continues, the other nothing.
	online2 := newMemOnline()
	for u := range conns.conns {
		_ = online2.AddOnline(context.Background(), shard, u, now.Add(time.Hour))
	}
	online2.seed(inbox.Announcement{ID: id, PublishedAt: now, ExpiresAt: now.Add(time.Hour)})
	sender2, q2 := &fakeSender{posts: map[string][]Message{}}, &fakeQueue{}
	p2 := &Poster{Connections: conns, Badge: &includeBadge{known: map[string]bool{}}, Sender: sender2, Now: func() time.Time { return now }, Log: quiet,
		Online: online2, Progress: online2, Queue: q2}
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = p2.Handle(context.Background(), sqsEvent(broadcastBody(Broadcast{ID: id, Shard: shard})))
		}()
	}
	wg.Wait()
	if sent, _ := q2.take(); len(sent) != 1 {
		t.Errorf("two deliveries at once queued %d continuations, want 1", len(sent))
	}
	if got := len(sender2.posts["u000-c"]); got != 1 {
		t.Errorf("u000 got %d posts from two deliveries at once, want 1", got)
	}
}

// Announce marks the announcement and sends one message per shard, once;
// a failed send unmarks it so that the scheduler's run retries it.
// AnnouncePending broadcasts the active, unmarked announcements published
// within the window, and nothing else.
func TestAnnouncer(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	st, q := newMemOnline(), &fakeQueue{}
	a := &Announcer{Store: st, Queue: q, Now: func() time.Time { return now }, Log: quiet}
	ann := func(n int, published time.Time) string {
		id := annID(n)
		st.seed(inbox.Announcement{ID: id, PublishedAt: published, ExpiresAt: now.Add(time.Hour)})
		return id
	}
	id := ann(1, now)
	for i := range 3 {
		won, err := a.Announce(context.Background(), id)
		if err != nil || won != (i == 0) {
			t.Fatalf("announce %d: %v, %v", i, won, err)
		}
	}
	sent, _ := q.take()
	if len(sent) != OnlineShards {
		t.Fatalf("%d messages, want one per shard (%d)", len(sent), OnlineShards)
	}
	for i, b := range sent {
		if b != (Broadcast{ID: id, Shard: i}) {
			t.Errorf("message %d: %+v", i, b)
		}
	}
	// A send that fails leaves the announcement unmarked.
	failing := ann(2, now.Add(-time.Minute))
	q.err = errors.New("sqs down")
	if won, err := a.Announce(context.Background(), failing); won || err == nil {
		t.Fatalf("failed send: %v, %v", won, err)
	}
	if !st.liveAt(failing).IsZero() {
		t.Fatal("a broadcast that was not sent stays marked")
	}
	q.err = nil
	ann(3, now.Add(time.Minute))                // scheduled: not yet
	ann(4, now.Add(-PendingWindow-time.Second)) // active before the window
	due := ann(5, now.Add(-30*time.Second))     // became active: due
	n, err := a.AnnouncePending(context.Background())
	if err != nil || n != 2 {
		t.Fatalf("pending: %d, %v, want 2 (the failed one and the due one)", n, err)
	}
	sent, _ = q.take()
	started := map[string]int{}
	for _, b := range sent {
		started[b.ID]++
	}
	if len(started) != 2 || started[failing] != OnlineShards || started[due] != OnlineShards {
		t.Errorf("pending broadcasts %v", started)
	}
	if n, _ := a.AnnouncePending(context.Background()); n != 0 {
		t.Errorf("a second run started %d", n)
	}
}

// The connect writes the user's online-set entry (its shard, the 2-hour
// limit); a failure of that write refuses the connect before anything else.
func TestRoutesOnline(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	st, online := newMemConns(), newMemOnline()
	r := &Routes{Store: st, Closer: &fakeCloser{}, Online: online, Now: func() time.Time { return now }, Log: quiet}
	auth := map[string]any{"userId": "u1"}
	if resp, _ := r.Handle(context.Background(), wsEvent("$connect", "c1", auth)); resp.StatusCode != http.StatusOK {
		t.Fatalf("connect: %d", resp.StatusCode)
	}
	if got := online.shards[OnlineShard("u1")]["u1"]; !got.Equal(now.Add(MaxConnectionAge)) {
		t.Errorf("online until %v, want the connection's 2-hour limit", got)
	}
	r.Online = failingOnline{}
	if resp, _ := r.Handle(context.Background(), wsEvent("$connect", "c2", auth)); resp.StatusCode != http.StatusInternalServerError || !slices.Equal(st.ids("u1"), []string{"c1"}) {
		t.Errorf("online write down: %d, connections recorded %v", resp.StatusCode, st.ids("u1"))
	}
}

type failingOnline struct{}

func (failingOnline) AddOnline(context.Context, int, string, time.Time) error {
	return errors.New("down")
}

// Shards spread users evenly enough: 16,000 users, every shard within 15 %
// of its share.
func TestOnlineShard(t *testing.T) {
	counts := make([]int, OnlineShards)
	for i := range 16000 {
		counts[OnlineShard(fmt.Sprintf("user-%d", i))]++
	}
	for s, c := range counts {
		if c < 850 || c > 1150 {
			t.Errorf("shard %d holds %d of 16,000", s, c)
		}
	}
	if !strings.HasPrefix(annID(1), inbox.AnnouncementIDPrefix) || !inbox.IsAnnouncementID(annID(1)) {
		t.Fatal("annID is not an announcement id")
	}
}

// badgeStore answers the badge's reads; the inbox index (UnexpiredAnnouncements)
// lags behind a new announcement, its key read does not.
type badgeStore struct {
	listed []inbox.Announcement
	byKey  map[string]inbox.Announcement
	lists  int
}

func (s *badgeStore) CountUnread(context.Context, string, int) (int, error) { return 0, nil }
func (s *badgeStore) UnexpiredAnnouncements(context.Context, time.Time) ([]inbox.Announcement, error) {
	s.lists++
	return s.listed, nil
}
func (s *badgeStore) InboxState(context.Context, string, []string, bool) (inbox.UserState, error) {
	return inbox.UserState{}, nil
}
func (s *badgeStore) GetAnnouncement(_ context.Context, id string) (*inbox.Announcement, error) {
	a, ok := s.byKey[id]
	if !ok {
		return nil, errors.New("not found")
	}
	return &a, nil
}

// The poster's cached announcements never give a badge without the
// broadcast's announcement: Include reads one it does not hold by key.
func TestStoreBadgeInclude(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	old := inbox.Announcement{ID: annID(1), PublishedAt: now.Add(-time.Hour), ExpiresAt: now.Add(time.Hour), SortKey: "1"}
	fresh := inbox.Announcement{ID: annID(2), PublishedAt: now, ExpiresAt: now.Add(time.Hour), SortKey: "2"}
	st := &badgeStore{listed: []inbox.Announcement{old}, byKey: map[string]inbox.Announcement{old.ID: old, fresh.ID: fresh}}
	b := &StoreBadge{Store: st, Now: func() time.Time { return now }}
	if u, _ := b.Badge(context.Background(), "u"); u.Count != 1 {
		t.Fatalf("badge %+v, want 1", u)
	}
	if err := b.Include(context.Background(), fresh.ID); err != nil {
		t.Fatal(err)
	}
	if u, _ := b.Badge(context.Background(), "u"); u.Count != 2 {
		t.Errorf("badge %+v after the broadcast's announcement, want 2", u)
	}
	if err := b.Include(context.Background(), old.ID); err != nil || st.lists != 1 {
		t.Errorf("a held announcement: %v, %d list reads, want the cache's one", err, st.lists)
	}
}
