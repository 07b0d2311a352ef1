package dynamo

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

// Issue 36, defect 1: sendAt is accepted up to a year ahead, but every item
// expired at its creation plus the retention (90 days, at least 1): TTL
// deleted a notification, its deferred delivery with its due-index entry,
// and a scheduled campaign's items before they were due. Retention now
// counts from the latest due time.
func TestRetentionCountsFromTheLatestDueTime(t *testing.T) {
	const retention = 24 * time.Hour // RetentionDays' minimum
	s := New(nil, "t", WithRetention(retention))
	due := created.Add(200 * 24 * time.Hour)

	n := fullNotification()
	if got, want := s.toNotificationItem(n).TTL, created.Add(retention).Unix(); got != want {
		t.Errorf("notification without a later due time: ttl %d, want createdAt + retention %d", got, want)
	}
	n.LastDue = due
	if got, want := s.toNotificationItem(n).TTL, due.Add(retention).Unix(); got != want {
		t.Errorf("notification due in 200 days: ttl %d, want its latest due time + retention %d", got, want)
	}

	d := &domain.Delivery{NotificationID: "n1", Channel: domain.ChannelEmail, Priority: domain.PriorityLow, Status: domain.StatusDeferred,
		Reason: domain.ReasonScheduled, UpdatedAt: created, DueAt: due}
	if it := s.toDeliveryItem(d); it.TTL != due.Add(retention).Unix() || it.GSI3PK == "" {
		t.Errorf("deferred delivery due in 200 days: ttl %d (due-index entry %q), want dueAt + retention %d", it.TTL, it.GSI3PK, due.Add(retention).Unix())
	}

	c := &domain.Campaign{ID: "c1", Caller: "svc", Type: "t", Priority: domain.PriorityLow, Status: domain.CampaignDraft, CreatedAt: created, SendAt: due}
	if got, want := s.toCampaignItem(c).TTL, due.Add(retention).Unix(); got != want {
		t.Errorf("campaign sent in 200 days: ttl %d, want sendAt + retention %d", got, want)
	}
}
