package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/recovery"
)

// stuckStore holds one notification whose email is in status since since,
// watched by watch "w1" armed two hours ago and due a minute ago.
func stuckStore(id string, status domain.Status, since time.Time, expires time.Time) *memStore {
	st := &memStore{deliveries: map[string]*domain.Delivery{}, notifications: map[string]*domain.Notification{}}
	st.deliveries[key(id, domain.ChannelEmail)] = &domain.Delivery{NotificationID: id, Channel: domain.ChannelEmail, UserID: "u1",
		Priority: domain.PriorityNormal, Status: status, UpdatedAt: since}
	st.notifications[id] = &domain.Notification{ID: id, Recipient: domain.Recipient{UserID: "u1"}, Priority: domain.PriorityNormal, ExpiresAt: expires}
	_ = st.ArmWatch(context.Background(), recovery.Watch{ID: "w1", Priority: domain.PriorityNormal,
		Entries: []recovery.WatchEntry{{NotificationID: id, Channel: domain.ChannelEmail}}, ArmedAt: now.Add(-2 * time.Hour), DueAt: now.Add(-time.Minute)})
	return st
}

func TestTickSendsAStuckDeliveryAgainOnceAndThenEndsItsWatch(t *testing.T) {
	st := stuckStore("n-stuck", domain.StatusQueued, now.Add(-2*time.Hour), time.Time{})
	pub := &memPublisher{}
	h, _ := newHandler(st, pub)
	if _, err := h.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(pub.sent) != 1 || pub.sent[0].Message.NotificationID != "n-stuck" || pub.sent[0].Message.Channel != domain.ChannelEmail || pub.sent[0].Message.UserID != "u1" {
		t.Fatalf("sent %+v, want the stuck email once", pub.sent)
	}
	w := st.watches["w1"]
	if w == nil || w.Checks != 1 || !w.DueAt.Equal(now.Add(recovery.StuckAfter(domain.PriorityNormal))) || len(w.Entries) != 1 {
		t.Fatalf("watch after sending again = %+v, want checks 1 due in recovery.StuckAfter", w)
	}
	// A second tick before the re-armed due time sends nothing more.
	if _, err := h.Tick(context.Background()); err != nil || len(pub.sent) != 1 {
		t.Fatalf("second tick: %v, sent %d", err, len(pub.sent))
	}
	// The worker sent it; the next check ends the watch without sending.
	st.deliveries[key("n-stuck", domain.ChannelEmail)].Status = domain.StatusSent
	later := now.Add(3 * recovery.StuckAfter(domain.PriorityNormal))
	h.now = func() time.Time { return later }
	if _, err := h.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(pub.sent) != 1 || st.watches["w1"] != nil {
		t.Fatalf("after sent: %d sent, watch %+v; want 1 and no watch", len(pub.sent), st.watches["w1"])
	}
}

func TestCheckFailsAStuckDeliveryOfAnExpiredNotification(t *testing.T) {
	for _, status := range []domain.Status{domain.StatusQueued, domain.StatusRetrying, domain.StatusPlanned} {
		st := stuckStore("n-exp", status, now.Add(-2*time.Hour), now.Add(-time.Minute))
		pub := &memPublisher{}
		h, _ := newHandler(st, pub)
		stuck, err := h.CheckWatch(context.Background(), "w1")
		if err != nil || len(stuck) != 1 {
			t.Fatalf("%s: check = %v, %v", status, stuck, err)
		}
		if d := st.deliveries[key("n-exp", domain.ChannelEmail)]; d.Status != domain.StatusFailed || len(pub.sent) != 0 {
			t.Fatalf("%s: delivery %s, %d sent; want failed, none sent", status, d.Status, len(pub.sent))
		}
		if st.watches["w1"] != nil {
			t.Fatalf("%s: the watch of an ended delivery stays", status)
		}
	}
}

func TestCheckLeavesADeliveryInProgressAlone(t *testing.T) {
	since := now.Add(-10 * time.Minute)
	st := stuckStore("n-busy", domain.StatusRetrying, since, time.Time{})
	// A second entry already sent leaves the watch.
	st.deliveries[key("n-done", domain.ChannelSMS)] = &domain.Delivery{NotificationID: "n-done", Channel: domain.ChannelSMS, Status: domain.StatusSent, UpdatedAt: since}
	st.watches["w1"].Entries = append(st.watches["w1"].Entries, recovery.WatchEntry{NotificationID: "n-done", Channel: domain.ChannelSMS})
	pub := &memPublisher{}
	h, _ := newHandler(st, pub)
	stuck, err := h.CheckWatch(context.Background(), "w1")
	if err != nil || len(stuck) != 0 || len(pub.sent) != 0 {
		t.Fatalf("check = %v, %v, sent %d; want nothing stuck, nothing sent", stuck, err, len(pub.sent))
	}
	w := st.watches["w1"]
	if w == nil || !w.DueAt.Equal(since.Add(recovery.StuckAfter(domain.PriorityNormal))) || w.Checks != 0 || len(w.Entries) != 1 || w.Entries[0].NotificationID != "n-busy" {
		t.Fatalf("watch = %+v, want only the busy delivery, due when it could first be stuck", w)
	}
}

func TestCheckSendsANeverClaimedDelivery(t *testing.T) {
	st := stuckStore("n-none", domain.StatusQueued, now.Add(-2*time.Hour), time.Time{})
	delete(st.deliveries, key("n-none", domain.ChannelEmail)) // the claim creates it (none yet)
	pub := &memPublisher{}
	h, _ := newHandler(st, pub)
	stuck, err := h.CheckWatch(context.Background(), "w1")
	if err != nil || len(stuck) != 1 || stuck[0].Status != "" || len(pub.sent) != 1 {
		t.Fatalf("check = %+v, %v, sent %d; want the unclaimed delivery sent again", stuck, err, len(pub.sent))
	}
}

func TestReleaseArmsAWatchBeforeSending(t *testing.T) {
	st := &memStore{deliveries: map[string]*domain.Delivery{}}
	st.deliveries[key("n-def", domain.ChannelSMS)] = &domain.Delivery{NotificationID: "n-def", Channel: domain.ChannelSMS, UserID: "u1",
		Priority: domain.PriorityHigh, Status: domain.StatusDeferred, DueAt: now.Add(-time.Minute)}
	pub := &memPublisher{}
	h, _ := newHandler(st, pub)
	if _, err := h.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(pub.sent) != 1 || len(st.watches) != 1 {
		t.Fatalf("sent %d, %d watches; want 1 and 1", len(pub.sent), len(st.watches))
	}
	for _, w := range st.watches {
		if len(w.Entries) != 1 || w.Entries[0] != (recovery.WatchEntry{NotificationID: "n-def", Channel: domain.ChannelSMS}) ||
			!w.DueAt.Equal(now.Add(recovery.StuckAfter(domain.PriorityHigh))) {
			t.Fatalf("watch %+v; want the sms watched for recovery.StuckAfter(high)", w)
		}
	}
}
