package dynamo_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/inbox"
)

// Announcements share one partition across the table. Each test here
// publishes in a year of its own, in the past, and lists from the end of
// that year, so no other test's announcements reach its pages.
func announcement(id string, published time.Time, ttl time.Duration) *inbox.Announcement {
	return &inbox.Announcement{ID: id, Title: "Maintenance " + id, Body: "Tonight.", URL: "https://example.com/" + id,
		PublishedAt: published, ExpiresAt: published.Add(ttl), CreatedAt: published, Caller: "svc", RequestHash: "h-" + id}
}

func TestAnnouncementsRoundTripPageAndTTL(t *testing.T) {
	s, db, _ := newStore(t)
	ctx := context.Background()
	year := time.Date(2003, 1, 1, 0, 0, 0, 0, time.UTC)
	prefix := uniq(t)
	var ids []string
	for i := range 3 {
		a := announcement(fmt.Sprintf("%s-%d", prefix, i), year.Add(time.Duration(i)*time.Hour), 24*time.Hour)
		got, err := s.CreateAnnouncement(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		if want := a.PublishedAt.Format("2006-01-02T15:04:05.000000000Z") + "#" + a.ID; got.SortKey != want {
			t.Errorf("sort key %q, want %q", got.SortKey, want)
		}
		stored, err := s.GetAnnouncement(ctx, a.ID)
		if err != nil || !reflect.DeepEqual(stored, a) {
			t.Errorf("round trip:\n got %+v, %v\nwant %+v", stored, err, a)
		}
		item := rawItem(t, db, s.Name(), "A#"+a.ID, "A")
		if ttl := numAttr(t, item, "ttl"); ttl != fmt.Sprint(a.ExpiresAt.Unix()) {
			t.Errorf("ttl %s, want the expiry", ttl)
		}
		ids = append(ids, a.ID)
	}
	endOfYear := year.AddDate(1, 0, 0).Format("2006-01-02T15:04:05.000000000Z") + "#"
	var got []string
	position := endOfYear
	for {
		list, more, err := s.ListAnnouncements(ctx, position, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range list {
			got = append(got, a.ID)
			c, err := inbox.DecodeCursor(inbox.Cursor{Scope: inbox.ScopeAnnouncements, Position: a.SortKey}.Encode(), inbox.ScopeAnnouncements)
			if err != nil {
				t.Fatalf("sort key %q does not survive a cursor: %v", a.SortKey, err)
			}
			position = c.Position
		}
		if !more {
			break
		}
		if len(got) > 3 {
			t.Fatalf("paging does not end: %v", got)
		}
	}
	if want := []string{ids[2], ids[1], ids[0]}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("listed %v, want %v newest published first", got, want)
	}
	if _, err := s.GetAnnouncement(ctx, prefix+"-missing"); !isNotFound(err) {
		t.Errorf("missing: %v, want ErrNotFound", err)
	}
}

func TestUnexpiredAnnouncements(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	year := time.Date(2004, 1, 1, 0, 0, 0, 0, time.UTC)
	prefix := uniq(t)
	expired := announcement(prefix+"-expired", year, time.Hour)
	active := announcement(prefix+"-active", year.Add(time.Hour), 24*time.Hour)
	scheduled := announcement(prefix+"-scheduled", year.Add(3*time.Hour), 24*time.Hour)
	for _, a := range []*inbox.Announcement{expired, active, scheduled} {
		if _, err := s.CreateAnnouncement(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.UnexpiredAnnouncements(ctx, year.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var mine []string
	for _, a := range list {
		if len(a.ID) > len(prefix) && a.ID[:len(prefix)] == prefix {
			mine = append(mine, a.ID)
		}
	}
	if want := []string{scheduled.ID, active.ID}; fmt.Sprint(mine) != fmt.Sprint(want) {
		t.Errorf("unexpired %v, want %v (scheduled and active, not expired)", mine, want)
	}
}

func TestAnnouncementMarkersAndInboxState(t *testing.T) {
	s, db, _ := newStore(t)
	ctx := context.Background()
	user := uniq(t)
	if err := s.PutUser(ctx, &domain.User{ID: user, Email: "x@example.com", Locale: "pt-BR"}); err != nil {
		t.Fatal(err)
	}
	a := announcement(uniq(t), t0, 48*time.Hour)
	b := announcement(uniq(t), t0, 24*time.Hour)
	at := t0.Add(time.Minute)

	m, changed, err := s.MarkAnnouncementRead(ctx, user, a, at, true)
	if err != nil || !changed || !m.ReadAt.Equal(at) {
		t.Fatalf("read: %+v, %v, %v", m, changed, err)
	}
	// Read-all (onlyUnread) skips what the user read already; a plain read keeps the first readAt.
	if _, changed, err := s.MarkAnnouncementRead(ctx, user, a, at.Add(time.Hour), true); err != nil || changed {
		t.Errorf("read-all of a read announcement: changed %v, %v", changed, err)
	}
	if m, changed, err := s.MarkAnnouncementRead(ctx, user, a, at.Add(time.Hour), false); err != nil || !changed || !m.ReadAt.Equal(at) {
		t.Errorf("second read: %+v, %v, %v; want the first readAt kept", m, changed, err)
	}
	if m, err := s.ArchiveAnnouncement(ctx, user, b, at); err != nil || !m.ArchivedAt.Equal(at) || !m.ReadAt.IsZero() {
		t.Fatalf("archive: %+v, %v", m, err)
	}
	if _, changed, err := s.MarkAnnouncementRead(ctx, user, b, at, true); err != nil || changed {
		t.Errorf("read-all of an archived announcement: changed %v, %v", changed, err)
	}
	// Markers go with their announcement.
	if ttl := numAttr(t, rawItem(t, db, s.Name(), "ANNREAD#"+user, b.ID), "ttl"); ttl != fmt.Sprint(b.ExpiresAt.Unix()) {
		t.Errorf("marker ttl %s, want the announcement's expiry", ttl)
	}

	st, err := s.InboxState(ctx, user, []string{a.ID, b.ID, "never-seen"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if st.Locale != "pt-BR" || len(st.Markers) != 2 ||
		!st.Markers[a.ID].ReadAt.Equal(at) || !st.Markers[b.ID].ArchivedAt.Equal(at) || !st.Markers[b.ID].ReadAt.IsZero() {
		t.Errorf("inbox state %+v", st)
	}
	if st, err := s.InboxState(ctx, user, []string{a.ID}, false); err != nil || st.Locale != "" || len(st.Markers) != 1 {
		t.Errorf("without locale: %+v, %v", st, err)
	}
	if st, err := s.InboxState(ctx, user, nil, false); err != nil || len(st.Markers) != 0 {
		t.Errorf("nothing asked: %+v, %v", st, err)
	}
	many := make([]string, 100)
	for i := range many {
		many[i] = fmt.Sprint("a", i)
	}
	if _, err := s.InboxState(ctx, user, many, true); err == nil {
		t.Error("101 keys: want an error, not a silent second batch")
	}
}
