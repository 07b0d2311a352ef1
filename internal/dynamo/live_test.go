package dynamo_test

import (
	"context"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/inbox"
	"github.com/heraldhq/herald/internal/live"
)

// TestLiveConnections: connections are kept per user with their deadlines;
// past the bound the oldest are evicted, those past API Gateway's 2 hours
// pruned; concurrent connects all land; a removal answers the connections
// left and never recreates the item; one batch read answers many users.
func TestLiveConnections(t *testing.T) {
	s, db, clock := newStore(t)
	ctx := context.Background()
	user, other := uniq(t), uniq(t)+"-other"
	t0 := clock.Now().Truncate(time.Millisecond)
	add := func(id string, at time.Time) []string {
		t.Helper()
		ev, err := s.AddConnection(ctx, user, live.Connection{ID: id, ConnectedAt: at}, 3, at)
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	for i := range 3 {
		if ev := add("c"+strconv.Itoa(i), t0.Add(time.Duration(i)*time.Second)); len(ev) != 0 {
			t.Fatalf("connect %d evicted %v", i, ev)
		}
	}
	if ev := add("c3", t0.Add(3*time.Second)); !slices.Equal(ev, []string{"c0"}) {
		t.Fatalf("the fourth of three evicted %v, want the oldest c0", ev)
	}
	ids := func(u string) []string {
		t.Helper()
		m, err := s.Connections(ctx, []string{u, other, "nobody"})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range m[u] {
			out = append(out, c.ID)
		}
		sort.Strings(out)
		return out
	}
	if got := ids(user); !slices.Equal(got, []string{"c1", "c2", "c3"}) {
		t.Fatalf("connections %v", got)
	}
	// Connections past API Gateway's 2 hours are pruned by the next
	// connect, not evicted.
	later := t0.Add(live.MaxConnectionAge + 2*time.Second)
	if ev := add("c4", later); len(ev) != 0 {
		t.Fatalf("evicted %v; the expired ones should have been pruned", ev)
	}
	if got := ids(user); !slices.Equal(got, []string{"c3", "c4"}) {
		t.Fatalf("after pruning: %v, want c3 (connected within 2 h) and c4", got)
	}
	// A removal answers what is left; removing again answers the same.
	leftIDs := func(cs []live.Connection, err error) []string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range cs {
			out = append(out, c.ID)
		}
		return out
	}
	if got := leftIDs(s.RemoveConnection(ctx, user, "c3")); !slices.Equal(got, []string{"c4"}) {
		t.Fatalf("removing c3 left %v, want c4", got)
	}
	if got := leftIDs(s.RemoveConnection(ctx, user, "c3")); !slices.Equal(got, []string{"c4"}) {
		t.Fatalf("removing c3 again left %v, want c4", got)
	}
	if got := leftIDs(s.RemoveConnection(ctx, other, "nothing")); len(got) != 0 {
		t.Fatalf("removing from a user without connections left %v", got)
	}
	if got := ids(user); !slices.Equal(got, []string{"c4"}) {
		t.Fatalf("after remove: %v", got)
	}
	if raw := rawItem(t, db, stacktest.Emulators(t).Resources.Table, "U#"+other, "LIVE"); raw != nil {
		t.Fatalf("removing from a user without connections created %v", raw)
	}
	// Concurrent connects of one user all land (conditional on the version).
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			id := "p" + strconv.Itoa(i)
			if _, err := s.AddConnection(ctx, other, live.Connection{ID: id, ConnectedAt: later}, 5, later); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := ids(other); len(got) != 4 {
		t.Fatalf("concurrent connects kept %v, want all four", got)
	}
}

// TestAnnouncementMarkedOnce: however many callers mark an announcement at
// once (the API's replays, the scheduler), exactly one starts its
// broadcast; the online entry carries the TTL that removes it.
func TestAnnouncementMarkedOnce(t *testing.T) {
	s, db, clock := newStore(t)
	ctx := context.Background()
	now := clock.Now()
	a := &inbox.Announcement{ID: "a" + strings.Repeat("0", 20) + strconv.FormatInt(seq.Add(1)+100000, 10), Title: "t", Body: "b",
		PublishedAt: now, ExpiresAt: now.Add(time.Hour), CreatedAt: now, Caller: "svc"}
	if _, err := s.CreateAnnouncement(ctx, a); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var won atomic.Int64
	for i := range 8 {
		wg.Go(func() {
			ok, err := s.MarkAnnouncementLive(ctx, a.ID, now.Add(time.Duration(i)*time.Millisecond))
			if err != nil {
				t.Error(err)
			}
			if ok {
				won.Add(1)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d marks won, want 1", won.Load())
	}
	list, err := s.UnexpiredAnnouncements(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range list {
		found = found || l.ID == a.ID && !l.LiveAt.IsZero()
	}
	if !found {
		t.Error("the mark is not read back with the announcements")
	}
	user := uniq(t)
	until := now.Add(live.MaxConnectionAge)
	if err := s.AddOnline(ctx, live.OnlineShard(user), user, until); err != nil {
		t.Fatal(err)
	}
	item := rawItem(t, db, stacktest.Emulators(t).Resources.Table, "LIVE#"+strconv.Itoa(live.OnlineShard(user)), user)
	if got := numAttr(t, item, "ttl"); got != strconv.FormatInt(until.Unix(), 10) {
		t.Errorf("ttl %s, want %d", got, until.Unix())
	}
}
