package storetest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// OnlineHarness is one implementation of the live inbox's online set and
// broadcast mark (the DynamoDB adapter; the live package's fake).
type OnlineHarness struct {
	AddOnline   func(ctx context.Context, shard int, user string, until time.Time) error
	OnlineUsers func(ctx context.Context, shard int, after string, now time.Time, limit int) ([]string, string, error)
	// SeedAnnouncement stores an announcement with the id, unmarked.
	SeedAnnouncement func(t testing.TB, id string)
	Mark             func(ctx context.Context, id string, at time.Time) (bool, error)
	Unmark           func(ctx context.Context, id string, at time.Time) error
	// MarkedAt reads the announcement's mark (zero: none).
	MarkedAt func(t testing.TB, id string) time.Time
	// Advance moves a shard's broadcast position (live.BroadcastProgress).
	Advance func(ctx context.Context, id string, shard int, after, next string) (bool, error)
}

// OnlineContract: the online set pages a shard in user order from after,
// skips entries past their time, evaluates at most limit entries a page
// and says where the next starts; a later connect moves the entry's time.
// The mark is set once, never on an absent announcement, and an unmark
// lets the next mark win. The table may be shared: the users are this
// run's own, under a prefix, in a shard other tests may also use.
func OnlineContract(t *testing.T, newHarness func(t *testing.T) OnlineHarness) {
	ctx := context.Background()
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	t.Run("online set", func(t *testing.T) {
		h := newHarness(t)
		prefix := newID("online") + "-"
		const shard = 5
		add := func(user string, until time.Time) {
			t.Helper()
			if err := h.AddOnline(ctx, shard, prefix+user, until); err != nil {
				t.Fatalf("add %s: %v", user, err)
			}
		}
		add("d", now.Add(time.Hour))
		add("a", now.Add(time.Hour))
		add("b", now.Add(-time.Second)) // past: skipped
		add("c", now.Add(time.Minute))
		add("e", now.Add(-time.Hour))
		add("e", now.Add(2*time.Hour)) // a later connect
		add("f", now)                  // ends now: skipped
		var got []string
		after, pages := prefix, 0
		for {
			users, next, err := h.OnlineUsers(ctx, shard, after, now, 2)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			if len(users) > 2 {
				t.Fatalf("page %d: %d users, limit 2", pages, len(users))
			}
			for _, u := range users {
				if strings.HasPrefix(u, prefix) {
					got = append(got, strings.TrimPrefix(u, prefix))
				}
			}
			if next == "" || !strings.HasPrefix(next, prefix) {
				break
			}
			if next <= after {
				t.Fatalf("page %d: next %q does not move past %q", pages, next, after)
			}
			after = next
			if pages > 10 {
				t.Fatal("paging does not end")
			}
		}
		if want := []string{"a", "c", "d", "e"}; !slices.Equal(got, want) {
			t.Errorf("online users %v, want %v (in order, the past ones skipped)", got, want)
		}
		// Six entries of which four valid, two evaluated a page: at least
		// three pages.
		if pages < 3 {
			t.Errorf("%d pages of limit 2 for 6 entries: the limit must count the entries evaluated", pages)
		}
		// Another shard holds none of them.
		users, _, err := h.OnlineUsers(ctx, shard+1, prefix, now, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range users {
			if strings.HasPrefix(u, prefix) {
				t.Errorf("shard %d lists %s", shard+1, u)
			}
		}
	})
	t.Run("broadcast mark", func(t *testing.T) {
		h := newHarness(t)
		id := newID("ann")
		h.SeedAnnouncement(t, id)
		if !h.MarkedAt(t, id).IsZero() {
			t.Fatal("a new announcement is marked")
		}
		if won, err := h.Mark(ctx, id, now); err != nil || !won {
			t.Fatalf("first mark: %v, %v", won, err)
		}
		if won, err := h.Mark(ctx, id, now.Add(time.Second)); err != nil || won {
			t.Fatalf("second mark: %v, %v, want lost", won, err)
		}
		if got := h.MarkedAt(t, id); !got.Equal(now) {
			t.Errorf("marked at %v, want %v", got, now)
		}
		// An unmark of another time leaves the mark; its own removes it.
		if err := h.Unmark(ctx, id, now.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if won, _ := h.Mark(ctx, id, now.Add(2*time.Second)); won {
			t.Fatal("an unmark of another time removed the mark")
		}
		if err := h.Unmark(ctx, id, now); err != nil {
			t.Fatal(err)
		}
		if won, err := h.Mark(ctx, id, now.Add(3*time.Second)); err != nil || !won {
			t.Fatalf("mark after unmark: %v, %v", won, err)
		}
		// No announcement, no mark (and nothing created).
		missing := newID("ann-missing")
		if won, err := h.Mark(ctx, missing, now); err != nil || won {
			t.Fatalf("mark of an absent announcement: %v, %v", won, err)
		}
		if !h.MarkedAt(t, missing).IsZero() {
			t.Error("a mark created an announcement")
		}
	})
	t.Run("broadcast progress", func(t *testing.T) {
		h := newHarness(t)
		id := newID("ann")
		h.SeedAnnouncement(t, id)
		step := func(shard int, after, next string, want bool) {
			t.Helper()
			if got, err := h.Advance(ctx, id, shard, after, next); err != nil || got != want {
				t.Fatalf("shard %d %q → %q: %v, %v; want %v", shard, after, next, got, err, want)
			}
		}
		// Each page is taken once, in order; a shard's pages do not touch
		// another shard's.
		step(3, "", "u100", true)
		step(3, "", "u100", false) // the first page delivered again
		step(4, "", "u050", true)
		step(3, "u050", "u200", false) // not where shard 3 stands
		step(3, "u100", "u200", true)
		step(3, "u100", "u200", false)
		step(3, "u200", "", true) // the last page
		step(3, "u200", "", false)
		step(3, "", "u100", false) // a whole new chain cannot start over
		// No announcement, no progress (and nothing created).
		missing := newID("ann-missing")
		if got, err := h.Advance(ctx, missing, 0, "", "u1"); err != nil || got {
			t.Fatalf("advance of an absent announcement: %v, %v", got, err)
		}
		if !h.MarkedAt(t, missing).IsZero() {
			t.Error("an advance created an announcement")
		}
	})
}
