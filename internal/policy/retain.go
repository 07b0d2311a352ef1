package policy

import (
	"time"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
)

// MaxQuietDeferral bounds how far quiet hours move a send time: a window
// is shorter than a day, and a daylight-saving change lengthens one by at
// most 2 hours (Antarctica/Troll; 1 hour almost everywhere).
const MaxQuietDeferral = 26 * time.Hour

// MaxDigestWindow bounds a user's digest window (the users API accepts at
// most 1,440 minutes; a longer stored value counts as this).
const MaxDigestWindow = 24 * time.Hour

// LatestDue is the latest time any channel of n can be due when it is
// planned on time: its sendAt, or its acceptance plus its type's longest
// escalation delay or (a digest candidate) the longest digest window,
// whichever is latest, moved past quiet hours unless n is high priority.
// The store keeps n until then plus the retention, so a far sendAt or a
// long delay is never deleted before it is sent (docs/decisions.md,
// "Retention counts from the latest due time").
func LatestDue(n *domain.Notification, t *catalog.Type) time.Time {
	due := n.CreatedAt
	if n.SendAt.After(due) {
		due = n.SendAt
	}
	for _, c := range Channels(n, t) {
		if at, delayed := EscalationDue(n, t, c, n.CreatedAt); delayed && at.After(due) {
			due = at
		}
	}
	if n.Priority == domain.PriorityHigh {
		return due
	}
	if n.BatchKey != "" && t.Digestible {
		if at := n.CreatedAt.Add(MaxDigestWindow); at.After(due) {
			due = at
		}
	}
	return due.Add(MaxQuietDeferral)
}
