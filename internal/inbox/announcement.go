package inbox

import (
	"slices"
	"strings"
	"time"
)

// Announcement is a message to every user, stored once. A user's read or
// archived state lives in a per-user Marker written only when that user acts,
// so a user without markers sees every active announcement unread.
type Announcement struct {
	ID          string
	Title       string
	Body        string
	URL         string
	PublishedAt time.Time
	ExpiresAt   time.Time
	CreatedAt   time.Time
	// Caller is the service that created it.
	Caller string
	// RequestHash is the canonical hash of the creating request, compared on
	// idempotent replays.
	RequestHash string
	// SortKey places it among a user's notifications ("<publishedAt>#<id>");
	// the store sets it.
	SortKey string
	// LiveAt is when its broadcast to the users' open live-inbox
	// connections started (zero: not yet).
	LiveAt time.Time
}

// Announcement lifecycle, as listed to services.
const (
	StatusScheduled = "scheduled"
	StatusActive    = "active"
	StatusExpired   = "expired"
)

// Active reports whether users see the announcement at now: published and
// not yet expired.
func (a *Announcement) Active(now time.Time) bool {
	return !now.Before(a.PublishedAt) && now.Before(a.ExpiresAt)
}

// Status is scheduled, active or expired at now.
func (a *Announcement) Status(now time.Time) string {
	switch {
	case now.Before(a.PublishedAt):
		return StatusScheduled
	case now.Before(a.ExpiresAt):
		return StatusActive
	}
	return StatusExpired
}

// MaxActiveAnnouncements bounds the announcements one inbox shows (the newest
// active ones). It keeps a user's markers one batch read (≤ 100 keys with the
// profile) and the badge's cost independent of how many were ever posted.
const MaxActiveAnnouncements = 50

// AnnouncementIDPrefix starts every announcement id; notification ids never
// start with it, so an inbox item id names its kind.
const AnnouncementIDPrefix = "a"

// announcementIDLen is the prefix and 26 base32 characters (128 bits).
const announcementIDLen = 27

// IsAnnouncementID reports whether id has the shape of an announcement id.
func IsAnnouncementID(id string) bool {
	return len(id) == announcementIDLen && id[:len(AnnouncementIDPrefix)] == AnnouncementIDPrefix
}

// Marker is one user's state of one announcement; zero when the user never
// acted on it.
type Marker struct {
	ReadAt     time.Time
	ArchivedAt time.Time
}

// UserState is what the inbox needs about the user besides the page: the
// profile's locale and the user's markers of the active announcements, read
// together in one batch.
type UserState struct {
	// Locale is the profile's locale ("" when none).
	Locale string
	// Markers holds the user's markers by announcement id.
	Markers map[string]Marker
}

// Read reports whether the user has read the announcement.
func (m Marker) Read() bool { return !m.ReadAt.IsZero() }

// Archived reports whether the user has archived the announcement.
func (m Marker) Archived() bool { return !m.ArchivedAt.IsZero() }

// Shows reports whether an item in the given state appears under filter.
// Archiving takes an item out of all and unread, whether or not it was read.
func Shows(f Filter, read, archived bool) bool {
	switch f {
	case FilterArchived:
		return archived
	case FilterUnread:
		return !read && !archived
	}
	return !archived
}

// ActiveAnnouncements returns the announcements active at now, newest
// published first, at most MaxActiveAnnouncements.
func ActiveAnnouncements(all []Announcement, now time.Time) []Announcement {
	out := make([]Announcement, 0, len(all))
	for _, a := range all {
		if a.Active(now) {
			out = append(out, a)
		}
	}
	slices.SortStableFunc(out, func(a, b Announcement) int { return strings.Compare(b.SortKey, a.SortKey) })
	if len(out) > MaxActiveAnnouncements {
		out = out[:MaxActiveAnnouncements]
	}
	return out
}

// AnnouncementIDs lists the ids of as.
func AnnouncementIDs(as []Announcement) []string {
	ids := make([]string, len(as))
	for i, a := range as {
		ids[i] = a.ID
	}
	return ids
}

// UnreadAnnouncements counts the announcements in active that markers leave
// unread.
func UnreadAnnouncements(active []Announcement, markers map[string]Marker) int {
	n := 0
	for _, a := range active {
		if m := markers[a.ID]; Shows(FilterUnread, m.Read(), m.Archived()) {
			n++
		}
	}
	return n
}
