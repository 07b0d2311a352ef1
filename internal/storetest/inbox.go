package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/inbox"
)

// InboxStore is the inbox repository the inbox routes use
// (api.InboxStore).
type InboxStore interface {
	ListInbox(ctx context.Context, userID string, f inbox.Filter, position string, limit int) ([]inbox.Entry, bool, error)
	CountUnread(ctx context.Context, userID string, limit int) (int, error)
	MarkRead(ctx context.Context, userID, id string, at time.Time) (*domain.Notification, error)
	Archive(ctx context.Context, userID, id string, at time.Time) (*domain.Notification, error)
	MarkAllRead(ctx context.Context, userID string, upTo time.Time, limit int) (int, bool, error)
}

// InboxHarness is one implementation under the inbox contract.
type InboxHarness struct {
	Store InboxStore
	// Seed stores a new notification (unread, unarchived) as intake does.
	Seed func(t testing.TB, n *domain.Notification)
}

// InboxContract runs the inbox contract against the harnesses newHarness
// returns: filters, newest-first pages that neither repeat nor skip across
// states, the capped count, and idempotent read, archive and read-all.
func InboxContract(t *testing.T, newHarness func(t *testing.T) InboxHarness) {
	ctx := context.Background()
	// seed stores n notifications for a new user, one a minute (ids
	// <user>-0 … the last the newest), and returns the user and the ids.
	seed := func(t *testing.T, h InboxHarness, n int) (string, []string) {
		t.Helper()
		user := newID("inbox-user")
		var ids []string
		for i := range n {
			id := fmt.Sprintf("%s-%d", user, i)
			h.Seed(t, &domain.Notification{ID: id, Caller: "svc", Type: "comment.created", Priority: domain.PriorityNormal,
				Recipient: domain.Recipient{UserID: user}, CreatedAt: seededAt.Add(time.Duration(i) * time.Minute),
				Status: domain.NotificationAccepted, Data: map[string]any{"title": "hello"}})
			ids = append(ids, id)
		}
		return user, ids
	}
	// all pages through a filter with the given page size.
	all := func(t *testing.T, s InboxStore, user string, f inbox.Filter, limit int) []string {
		t.Helper()
		var ids []string
		position := ""
		for range 100 {
			entries, more, err := s.ListInbox(ctx, user, f, position, limit)
			if err != nil {
				t.Fatalf("list %s after %q: %v", f, position, err)
			}
			if len(entries) > limit {
				t.Fatalf("list %s: %d entries on a page of %d", f, len(entries), limit)
			}
			for _, e := range entries {
				if want := e.Notification.CreatedAt.UTC().Format("2006-01-02T15:04:05.000000000Z") + "#" + e.Notification.ID; e.SortKey != want {
					t.Errorf("sort key %q, want %q", e.SortKey, want)
				}
				if position != "" && e.SortKey >= position {
					t.Errorf("entry %s not older than the position %s", e.SortKey, position)
				}
				ids = append(ids, e.Notification.ID)
				position = e.SortKey
			}
			if !more {
				return ids
			}
		}
		t.Fatalf("list %s: more than 100 pages", f)
		return nil
	}
	newestFirst := func(ids []string, pick ...int) []string {
		var out []string
		for i := len(ids) - 1; i >= 0; i-- {
			if len(pick) == 0 || slices.Contains(pick, i) {
				out = append(out, ids[i])
			}
		}
		return out
	}
	at := seededAt.Add(24 * time.Hour)

	t.Run("FiltersPageAcrossStatesNewestFirst", func(t *testing.T) {
		h := newHarness(t)
		user, ids := seed(t, h, 9)
		// read: 1, 4, 5, 8 (the newest); archived: 2 (unread) and 6 (read).
		for _, i := range []int{1, 4, 5, 8, 6} {
			if _, err := h.Store.MarkRead(ctx, user, ids[i], at); err != nil {
				t.Fatal(err)
			}
		}
		for _, i := range []int{2, 6} {
			if _, err := h.Store.Archive(ctx, user, ids[i], at); err != nil {
				t.Fatal(err)
			}
		}
		want := map[inbox.Filter][]string{
			inbox.FilterAll:      newestFirst(ids, 0, 1, 3, 4, 5, 7, 8),
			inbox.FilterUnread:   newestFirst(ids, 0, 3, 7),
			inbox.FilterArchived: newestFirst(ids, 2, 6),
		}
		for f, w := range want {
			for _, limit := range []int{1, 2, 3, 100} {
				if got := all(t, h.Store, user, f, limit); !slices.Equal(got, w) {
					t.Errorf("%s by %d: %v, want %v", f, limit, got, w)
				}
			}
		}
		if n, err := h.Store.CountUnread(ctx, user, 100); err != nil || n != 3 {
			t.Errorf("count = %d, %v; want 3", n, err)
		}
	})

	t.Run("CountStopsAtLimit", func(t *testing.T) {
		h := newHarness(t)
		user, ids := seed(t, h, 5)
		if _, err := h.Store.MarkRead(ctx, user, ids[0], at); err != nil {
			t.Fatal(err)
		}
		for limit, want := range map[int]int{1: 1, 3: 3, 4: 4, 100: 4} {
			if n, err := h.Store.CountUnread(ctx, user, limit); err != nil || n != want {
				t.Errorf("count(limit %d) = %d, %v; want %d", limit, n, err, want)
			}
		}
	})

	t.Run("ReadAndArchiveAreIdempotentAndOwned", func(t *testing.T) {
		h := newHarness(t)
		user, ids := seed(t, h, 2)
		if _, err := h.Store.MarkRead(ctx, "someone-else", ids[0], at); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("read of another user's item: err %v, want domain.ErrNotFound", err)
		}
		if _, err := h.Store.Archive(ctx, user, newID("missing"), at); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("archive of a missing item: err %v, want domain.ErrNotFound", err)
		}
		first, err := h.Store.MarkRead(ctx, user, ids[0], at)
		if err != nil || !first.ReadAt.Equal(at) {
			t.Fatalf("read = %+v, %v; want readAt %v", first, err, at)
		}
		again, err := h.Store.MarkRead(ctx, user, ids[0], at.Add(time.Hour))
		if err != nil || !again.ReadAt.Equal(at) {
			t.Errorf("second read = %+v, %v; want the first readAt %v", again, err, at)
		}
		arch, err := h.Store.Archive(ctx, user, ids[0], at.Add(time.Hour))
		if err != nil || !arch.ArchivedAt.Equal(at.Add(time.Hour)) || !arch.ReadAt.Equal(at) {
			t.Fatalf("archive = %+v, %v", arch, err)
		}
		if arch, err = h.Store.Archive(ctx, user, ids[0], at.Add(2*time.Hour)); err != nil || !arch.ArchivedAt.Equal(at.Add(time.Hour)) {
			t.Errorf("second archive = %+v, %v; want the first archivedAt", arch, err)
		}
		// Reading an archived item keeps it archived.
		if _, err := h.Store.Archive(ctx, user, ids[1], at); err != nil {
			t.Fatal(err)
		}
		if n, err := h.Store.MarkRead(ctx, user, ids[1], at); err != nil || !n.ReadAt.Equal(at) || n.ArchivedAt.IsZero() {
			t.Errorf("read of an archived item = %+v, %v", n, err)
		}
		if got := all(t, h.Store, user, inbox.FilterArchived, 10); !slices.Equal(got, newestFirst(ids)) {
			t.Errorf("archived %v, want %v", got, newestFirst(ids))
		}
		if got := all(t, h.Store, user, inbox.FilterAll, 10); len(got) != 0 {
			t.Errorf("all %v, want none", got)
		}
	})

	t.Run("ReadAllStopsAtUpToAndIsIdempotent", func(t *testing.T) {
		h := newHarness(t)
		user, ids := seed(t, h, 5)
		if _, err := h.Store.Archive(ctx, user, ids[1], at); err != nil {
			t.Fatal(err)
		}
		upTo := seededAt.Add(3 * time.Minute) // ids 0..3; 1 is archived
		n, more, err := h.Store.MarkAllRead(ctx, user, upTo, 100)
		if err != nil || n != 3 || more {
			t.Fatalf("read all = %d, %v, %v; want 3, false", n, more, err)
		}
		if n, _, err = h.Store.MarkAllRead(ctx, user, upTo, 100); err != nil || n != 0 {
			t.Errorf("second read all = %d, %v; want 0", n, err)
		}
		if got := all(t, h.Store, user, inbox.FilterUnread, 10); !slices.Equal(got, []string{ids[4]}) {
			t.Errorf("unread %v, want only the newest", got)
		}
		if got := all(t, h.Store, user, inbox.FilterAll, 2); !slices.Equal(got, newestFirst(ids, 0, 2, 3, 4)) {
			t.Errorf("all %v", got)
		}
	})
}
