package ops

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/ops"
	"github.com/heraldhq/herald/internal/recovery"
)

// loseWorkMessage leaves a notification's email as a lost work message does:
// the delivery queued and watched (as the relay or a release records it
// before sending), and no message in any queue. The notification is
// scheduled first, so no message ever exists; its delivery then moves
// deferred → queued as a release does, and the release's watch is armed.
func loseWorkMessage(t *testing.T, addr string, expiresIn time.Duration) (id, watch string, prio domain.Priority) {
	t.Helper()
	st := stacktest.Stack(t)
	ctx := context.Background()
	now := st.Clock.Now()
	body := map[string]any{
		"type": "invoice.payment_failed", "channels": []string{"email"},
		"recipient": map[string]any{"userId": stacktest.UniqueID("u"), "email": addr},
		"data":      map[string]any{"invoiceUrl": "https://example.com/i/23"},
		"sendAt":    now.Add(10 * time.Minute).UTC().Format(time.RFC3339),
	}
	if expiresIn > 0 {
		body["expiresAt"] = now.Add(expiresIn).UTC().Format(time.RFC3339)
	}
	id = stacktest.Notify(t, body)
	d := delivery(t, id, domain.ChannelEmail, "the delivery deferred", status(domain.StatusDeferred, domain.ReasonScheduled))
	s := stacktest.Store(t)
	if _, err := s.Transition(ctx, id, domain.ChannelEmail, domain.Change{To: domain.StatusQueued, From: []domain.Status{domain.StatusDeferred}}); err != nil {
		t.Fatal(err)
	}
	ws := recovery.NewWatches([]domain.WorkItem{{Message: domain.WorkMessage{NotificationID: id, Channel: domain.ChannelEmail, UserID: d.UserID}, Priority: d.Priority}}, st.Clock.Now())
	if err := s.ArmWatch(ctx, ws[0]); err != nil {
		t.Fatal(err)
	}
	return id, ws[0].ID, d.Priority
}

// stuck lists the stuck deliveries as `herald dlq stuck` does, on the
// stack's clock (the command reads the real one).
func stuck(t *testing.T) []ops.StuckDelivery {
	t.Helper()
	st := stacktest.Stack(t)
	op := &ops.Operator{Watches: stacktest.Store(t), Now: st.Clock.Now}
	got, err := op.Stuck(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func find(ds []ops.StuckDelivery, id string) *ops.StuckDelivery {
	for i := range ds {
		if ds[i].NotificationID == id {
			return &ds[i]
		}
	}
	return nil
}

func tick(t *testing.T) {
	t.Helper()
	if _, err := stacktest.Stack(t).Scheduler.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestLostWorkMessageIsSentOnce: a delivery whose work message is gone is
// listed stuck with its age once past StuckAfter, sent again by the
// scheduler's check, and ends sent with exactly one email; the watch then
// ends.
func TestLostWorkMessageIsSentOnce(t *testing.T) {
	st := stacktest.Stack(t)
	addr := "stuck-" + stacktest.UniqueID("s") + "@example.com"
	id, watch, prio := loseWorkMessage(t, addr, 0)
	if d := find(stuck(t), id); d != nil {
		t.Fatalf("listed stuck before StuckAfter: %+v", d)
	}
	st.Clock.Advance(recovery.StuckAfter(prio) + time.Minute)
	d := find(stuck(t), id)
	if d == nil || d.Status != string(domain.StatusQueued) || d.Channel != "email" || time.Duration(d.AgeSeconds)*time.Second < recovery.StuckAfter(prio) {
		t.Fatalf("herald dlq stuck: %+v, want the queued email with its age", d)
	}
	tick(t)
	delivery(t, id, domain.ChannelEmail, "the stuck delivery sent", status(domain.StatusSent, ""))
	stacktest.Eventually(t, 20*time.Second, "the email", func() bool { return len(stacktest.EmailsTo(t, addr)) > 0 })
	if d := find(stuck(t), id); d != nil {
		t.Fatalf("still listed stuck once sent: %+v", d)
	}
	// The next check ends the watch and sends nothing more.
	st.Clock.Advance(recovery.NextCheck(time.Time{}, prio, 0).Sub(time.Time{}) + time.Minute)
	tick(t)
	stacktest.Eventually(t, 20*time.Second, "the watch ended", func() bool {
		w, err := stacktest.Store(t).LoadWatch(context.Background(), watch)
		return err == nil && w == nil
	})
	time.Sleep(time.Second)
	if n := len(stacktest.EmailsTo(t, addr)); n != 1 {
		t.Fatalf("%d emails, want exactly 1", n)
	}
}

// TestLostWorkMessageOfAnExpiredNotificationFails: past the notification's
// expiry the check ends the delivery failed: lost, and sends nothing.
func TestLostWorkMessageOfAnExpiredNotificationFails(t *testing.T) {
	st := stacktest.Stack(t)
	addr := "stuck-exp-" + stacktest.UniqueID("s") + "@example.com"
	id, watch, prio := loseWorkMessage(t, addr, 20*time.Minute)
	st.Clock.Advance(recovery.StuckAfter(prio) + time.Minute)
	tick(t)
	d := delivery(t, id, domain.ChannelEmail, "the stuck delivery failed", status(domain.StatusFailed, domain.ReasonLost))
	if d.Attempts != 0 {
		t.Errorf("attempts %d, want 0", d.Attempts)
	}
	stacktest.Eventually(t, 20*time.Second, "the watch ended", func() bool {
		w, err := stacktest.Store(t).LoadWatch(context.Background(), watch)
		return err == nil && w == nil
	})
	if n := len(stacktest.EmailsTo(t, addr)); n != 0 {
		t.Fatalf("%d emails, want none", n)
	}
}
