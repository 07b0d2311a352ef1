package dynamo_test

import (
	"maps"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
)

// TestKeysAreTheFullBuildsKeys: NotificationKeys and DeliveryKeys give the
// keys the full builds give, in every state that moves an item in or out of
// an index (read, archived, cancelled, muted, deferred, queued).
func TestKeysAreTheFullBuildsKeys(t *testing.T) {
	s := dynamo.New(nil, "model")
	created := time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC)
	base := domain.Notification{ID: "n0123456789", Caller: "arn:aws:iam::123456789012:role/app", Type: "t", Recipient: domain.Recipient{UserID: "u42"},
		Priority: domain.PriorityNormal, Channels: []domain.Channel{domain.ChannelEmail, domain.ChannelPush}, CreatedAt: created, Status: "accepted"}
	notifications := map[string]func(*domain.Notification){
		"unread": func(*domain.Notification) {}, "read": func(n *domain.Notification) { n.ReadAt = created.Add(time.Minute) },
		"archived":  func(n *domain.Notification) { n.ArchivedAt = created.Add(time.Minute) },
		"cancelled": func(n *domain.Notification) { n.Status = domain.NotificationCancelled }, "muted": func(n *domain.Notification) { n.Muted = true },
	}
	for name, change := range notifications {
		n := base
		change(&n)
		full, err := s.NotificationItemKeys(&n)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.NotificationKeys(&n); got.PK != full.PK || !maps.Equal(got.Index, full.Index) {
			t.Errorf("%s notification: keys %q %v, its full build's %q %v", name, got.PK, got.Index, full.PK, full.Index)
		}
	}
	for _, st := range []struct {
		status domain.Status
		due    time.Time
	}{{domain.StatusQueued, time.Time{}}, {domain.StatusDeferred, created.Add(25 * time.Hour)}, {domain.StatusDeferred, time.Time{}}, {domain.StatusSent, created.Add(time.Hour)}} {
		for _, c := range base.Channels {
			d := domain.DeliveryOf(&base, c)
			d.Status, d.DueAt, d.UpdatedAt = st.status, st.due, created
			full, err := s.DeliveryItemKeys(d)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.DeliveryKeys(d); got.PK != full.PK || !maps.Equal(got.Index, full.Index) {
				t.Errorf("%s %s delivery due %v: keys %q %v, its full build's %q %v", st.status, c, st.due, got.PK, got.Index, full.PK, full.Index)
			}
		}
	}
}
