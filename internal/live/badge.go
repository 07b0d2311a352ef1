package live

import (
	"context"
	"sync"
	"time"

	"github.com/heraldhq/herald/internal/inbox"
)

// BadgeStore is what the badge reads: the same reads as the API's
// GET …/inbox/unread-count, so that the socket and the route agree.
type BadgeStore interface {
	CountUnread(ctx context.Context, userID string, limit int) (int, error)
	UnexpiredAnnouncements(ctx context.Context, now time.Time) ([]inbox.Announcement, error)
	InboxState(ctx context.Context, userID string, announcementIDs []string, withLocale bool) (inbox.UserState, error)
	// GetAnnouncement reads one announcement (strongly consistent).
	GetAnnouncement(ctx context.Context, id string) (*inbox.Announcement, error)
}

// AnnouncementCacheTTL is how long the poster keeps the unexpired
// announcements (as the API does, per instance).
const AnnouncementCacheTTL = 30 * time.Second

// StoreBadge computes the unread badge: unread notifications (capped) plus
// the active announcements the user has not read.
type StoreBadge struct {
	Store BadgeStore
	Now   func() time.Time

	mu      sync.Mutex
	list    []inbox.Announcement
	fetched time.Time
	valid   bool
}

// Badge is the user's badge now.
func (b *StoreBadge) Badge(ctx context.Context, user string) (Unread, error) {
	n, err := b.Store.CountUnread(ctx, user, inbox.CountCap)
	if err != nil {
		return Unread{}, err
	}
	active, err := b.active(ctx)
	if err != nil {
		return Unread{}, err
	}
	if len(active) > 0 {
		st, err := b.Store.InboxState(ctx, user, inbox.AnnouncementIDs(active), false)
		if err != nil {
			return Unread{}, err
		}
		n += inbox.UnreadAnnouncements(active, st.Markers)
	}
	badge := inbox.NewBadge(n)
	return Unread{Count: badge.Count, Display: badge.Display}, nil
}

func (b *StoreBadge) active(ctx context.Context) ([]inbox.Announcement, error) {
	now := b.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.refreshLocked(ctx, now); err != nil {
		return nil, err
	}
	return inbox.ActiveAnnouncements(b.list, now), nil
}

// refreshLocked rereads the list when it is older than the cache's TTL.
func (b *StoreBadge) refreshLocked(ctx context.Context, now time.Time) error {
	if !b.valid || now.Sub(b.fetched) >= AnnouncementCacheTTL || now.Before(b.fetched) {
		list, err := b.Store.UnexpiredAnnouncements(ctx, now)
		if err != nil {
			return err
		}
		b.list, b.fetched, b.valid = list, now, true
	}
	return nil
}

// Include makes sure the badge counts the announcement id (a broadcast
// names it): when the cached list does not hold it, it is read by key
// (strongly consistent: the inbox index may not show a new one yet) and
// added, so that no post announces an item its badge does not count.
func (b *StoreBadge) Include(ctx context.Context, id string) error {
	now := b.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.refreshLocked(ctx, now); err != nil {
		return err
	}
	for _, a := range b.list {
		if a.ID == id {
			return nil
		}
	}
	a, err := b.Store.GetAnnouncement(ctx, id)
	if err != nil {
		return err
	}
	b.list = append(b.list, *a)
	return nil
}
