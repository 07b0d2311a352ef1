package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/inbox"
)

// seedInbox stores n notifications for a new user, one a minute from t0
// (ids <user>-0 … <user>-(n-1), the last the newest), and returns the user.
func seedInbox(t *testing.T, s *stacktest.Stores, n int) (string, []string) {
	t.Helper()
	user := uniq(t)
	var ids []string
	for i := range n {
		id := fmt.Sprintf("%s-%d", user, i)
		mustCreate(t, s, notification(id, user, t0.Add(time.Duration(i)*time.Minute)))
		ids = append(ids, id)
	}
	return user, ids
}

// page lists one page and returns its ids, its last sort key and more.
func page(t *testing.T, s *stacktest.Stores, user string, f inbox.Filter, position string, limit int) ([]string, string, bool) {
	t.Helper()
	entries, more, err := s.ListInbox(context.Background(), user, f, position, limit)
	if err != nil {
		t.Fatalf("list %s after %q: %v", f, position, err)
	}
	var ids []string
	last := ""
	for _, e := range entries {
		if e.Notification.Recipient.Email != "" {
			t.Errorf("inbox entry %s carries the recipient's email", e.Notification.ID)
		}
		if want := e.Notification.CreatedAt.Format("2006-01-02T15:04:05.000000000Z") + "#" + e.Notification.ID; e.SortKey != want {
			t.Errorf("sort key %q, want %q", e.SortKey, want)
		}
		ids = append(ids, e.Notification.ID)
		last = e.SortKey
	}
	return ids, last, more
}

func TestListInboxPagesNewestFirst(t *testing.T) {
	s, _, _ := newStore(t)
	user, ids := seedInbox(t, s, 5)
	seedInbox(t, s, 1) // another user's item never shows
	var got []string
	position := ""
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("paging does not end")
		}
		pageIDs, last, more := page(t, s, user, inbox.FilterAll, position, 2)
		got = append(got, pageIDs...)
		if !more {
			break
		}
		// The position travels to the client and back as an opaque cursor.
		c, err := inbox.DecodeCursor(inbox.Cursor{Scope: string(inbox.FilterAll), Position: last}.Encode(), string(inbox.FilterAll))
		if err != nil {
			t.Fatalf("sort key %q does not survive a cursor: %v", last, err)
		}
		position = c.Position
	}
	if want := []string{ids[4], ids[3], ids[2], ids[1], ids[0]}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("pages %v, want %v", got, want)
	}
	// A full last page: more is false when nothing older remains.
	if pageIDs, _, more := page(t, s, user, inbox.FilterAll, "", 5); len(pageIDs) != 5 || more {
		t.Errorf("one page of all five: %v, more %v", pageIDs, more)
	}
	if pageIDs, _, more := page(t, s, user+"-nobody", inbox.FilterAll, "", 5); len(pageIDs) != 0 || more {
		t.Errorf("a user with no items: %v, more %v", pageIDs, more)
	}
}

func TestListInboxTiesOnCreatedAtPageByID(t *testing.T) {
	s, _, _ := newStore(t)
	user := uniq(t)
	for _, id := range []string{"a", "b", "c"} {
		mustCreate(t, s, notification(user+"-"+id, user, t0))
	}
	first, last, more := page(t, s, user, inbox.FilterAll, "", 1)
	second, _, _ := page(t, s, user, inbox.FilterAll, last, 5)
	if fmt.Sprint(first) != fmt.Sprintf("[%s-c]", user) || !more || fmt.Sprint(second) != fmt.Sprintf("[%s-b %s-a]", user, user) {
		t.Errorf("pages %v then %v, want c then b, a", first, second)
	}
}

func TestReadAndArchiveMoveItemsBetweenListings(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	user, ids := seedInbox(t, s, 3)
	readAt := t0.Add(time.Hour)

	n, err := s.MarkRead(ctx, user, ids[1], readAt)
	if err != nil || !n.ReadAt.Equal(readAt) {
		t.Fatalf("mark read: %+v, %v", n, err)
	}
	if n, _ := s.MarkRead(ctx, user, ids[1], readAt.Add(time.Hour)); !n.ReadAt.Equal(readAt) {
		t.Errorf("second read moved readAt to %v", n.ReadAt)
	}
	for _, tt := range []struct{ user, id string }{{"someone-else", ids[0]}, {user, user + "-missing"}} {
		if _, err := s.MarkRead(ctx, tt.user, tt.id, readAt); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("mark read %s as %s: %v, want ErrNotFound", tt.id, tt.user, err)
		}
		if _, err := s.Archive(ctx, tt.user, tt.id, readAt); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("archive %s as %s: %v, want ErrNotFound", tt.id, tt.user, err)
		}
	}
	if a, err := s.Archive(ctx, user, ids[0], readAt); err != nil || !a.ArchivedAt.Equal(readAt) || !a.ReadAt.IsZero() {
		t.Fatalf("archive: %+v, %v", a, err)
	}

	want := map[inbox.Filter][]string{
		inbox.FilterAll:      {ids[2], ids[1]},
		inbox.FilterUnread:   {ids[2]},
		inbox.FilterArchived: {ids[0]},
	}
	for f, w := range want {
		if got, _, _ := page(t, s, user, f, "", 10); fmt.Sprint(got) != fmt.Sprint(w) {
			t.Errorf("%s: %v, want %v", f, got, w)
		}
	}
	if c, err := s.CountUnread(ctx, user, 10); err != nil || c != 1 {
		t.Errorf("unread count %d, %v; want 1", c, err)
	}
	// The stored notification shows the inbox state too.
	if got, _ := s.GetNotification(ctx, ids[0]); !got.ArchivedAt.Equal(readAt) {
		t.Errorf("archived notification reads back %+v", got)
	}
}

func TestCountUnreadStopsAtLimit(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	user, _ := seedInbox(t, s, 5)
	for _, tt := range []struct{ limit, want int }{{1, 1}, {3, 3}, {5, 5}, {99, 5}} {
		if got, err := s.CountUnread(ctx, user, tt.limit); err != nil || got != tt.want {
			t.Errorf("CountUnread(limit %d) = %d, %v; want %d", tt.limit, got, err, tt.want)
		}
	}
}

func TestMarkAllRead(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	user, ids := seedInbox(t, s, 6)
	// ids[0..5] at t0 … t0+5m; one is read already, one archived.
	if _, err := s.MarkRead(ctx, user, ids[1], t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Archive(ctx, user, ids[2], t0); err != nil {
		t.Fatal(err)
	}
	upTo := t0.Add(4 * time.Minute) // ids[4] included, ids[5] arrived later
	n, more, err := s.MarkAllRead(ctx, user, upTo, 1)
	if err != nil || n != 1 || !more {
		t.Fatalf("first call: %d, %v, %v; want 1 marked, more", n, more, err)
	}
	n, more, err = s.MarkAllRead(ctx, user, upTo, 100)
	if err != nil || n != 2 || more {
		t.Fatalf("second call: %d, %v, %v; want the other 2, no more", n, more, err)
	}
	if got, _, _ := page(t, s, user, inbox.FilterUnread, "", 10); fmt.Sprint(got) != fmt.Sprintf("[%s]", ids[5]) {
		t.Errorf("unread after read-all: %v, want only the later %s", got, ids[5])
	}
	if got, _ := s.GetNotification(ctx, ids[3]); !got.ReadAt.Equal(upTo) {
		t.Errorf("readAt of a read-all item = %v, want %v", got.ReadAt, upTo)
	}
	if got, _ := s.GetNotification(ctx, ids[1]); !got.ReadAt.Equal(t0) {
		t.Errorf("read-all moved an earlier readAt to %v", got.ReadAt)
	}
	if n, more, err := s.MarkAllRead(ctx, user, upTo, 100); err != nil || n != 0 || more {
		t.Errorf("nothing left: %d, %v, %v", n, more, err)
	}
}

func TestInboxItemsAreProjected(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	user := uniq(t)
	n := notification(user+"-1", user, t0)
	n.Recipient.Phone, n.Recipient.Locale, n.RequestHash = "+15550100", "de", "secret-hash"
	mustCreate(t, s, n)
	entries, _, err := s.ListInbox(ctx, user, inbox.FilterAll, "", 1)
	if err != nil || len(entries) != 1 {
		t.Fatalf("%v, %v", entries, err)
	}
	got := entries[0].Notification
	if got.Recipient.Email != "" || got.Recipient.Phone != "" || got.RequestHash != "" || got.Caller != "" {
		t.Errorf("inbox entry carries contact details or bookkeeping: %+v", got)
	}
	if got.Type != n.Type || got.Recipient.Locale != "de" || got.Data["title"] != "hello" || !strings.HasSuffix(entries[0].SortKey, n.ID) {
		t.Errorf("inbox entry lacks what rendering needs: %+v", got)
	}
}
