package dynamo_test

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/recovery"
)

// TestWatchLifecycle: a watch sits in the due index beside deferred
// deliveries, reads back with its entries, reads its deliveries, and
// re-arms or ends only at the due time it was read at.
func TestWatchLifecycle(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	id := uniq(t)
	due := t0.Add(time.Hour)
	if _, err := s.CreateDelivery(ctx, &domain.Delivery{NotificationID: id, Channel: domain.ChannelEmail, UserID: "u1",
		Priority: domain.PriorityNormal, Status: domain.StatusQueued, UpdatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	entries := []recovery.WatchEntry{{NotificationID: id, Channel: domain.ChannelEmail}, {NotificationID: id, Channel: domain.ChannelSMS}}
	w := recovery.Watch{ID: recovery.NewWatchID(), Priority: domain.PriorityNormal, Entries: entries, ArmedAt: t0, DueAt: due}
	if err := s.ArmWatch(ctx, w); err != nil {
		t.Fatal(err)
	}
	got, err := s.LoadWatch(ctx, w.ID)
	if err != nil || got == nil || len(got.Entries) != 2 || got.Entries[1] != entries[1] || !got.DueAt.Equal(due) || !got.ArmedAt.Equal(t0) || got.Priority != domain.PriorityNormal {
		t.Fatalf("LoadWatch = %+v, %v", got, err)
	}
	ds, err := s.WatchedDeliveries(ctx, []domain.DeliveryKey{entries[0].Key(), entries[1].Key()})
	if err != nil || len(ds) != 1 || ds[entries[0].Key()].Status != domain.StatusQueued {
		t.Fatalf("WatchedDeliveries = %+v, %v (the sms has no item)", ds, err)
	}
	listed := func(at time.Time) []recovery.Watch {
		t.Helper()
		var out []recovery.Watch
		for _, p := range s.DuePartitions(at.Add(-2*time.Hour), at) {
			_, ws, err := s.ListDue(ctx, p, at, 100)
			if err != nil {
				t.Fatal(err)
			}
			for _, lw := range ws {
				if lw.ID == w.ID {
					out = append(out, lw)
				}
			}
		}
		return out
	}
	if l := listed(due.Add(-time.Second)); len(l) != 0 {
		t.Fatalf("listed before due: %+v", l)
	}
	if l := listed(due); len(l) != 1 || !l[0].DueAt.Equal(due) || l[0].Priority != domain.PriorityNormal {
		t.Fatalf("listed at due: %+v", l)
	}
	// A re-arm or end with a stale due time changes nothing.
	next := due.Add(2 * time.Hour)
	stale := *got
	stale.DueAt = due.Add(time.Minute)
	if err := s.RearmWatch(ctx, stale, entries[:1], next, 5); err != nil {
		t.Fatal(err)
	}
	if err := s.EndWatch(ctx, stale); err != nil {
		t.Fatal(err)
	}
	if again, _ := s.LoadWatch(ctx, w.ID); again == nil || !again.DueAt.Equal(due) || again.Checks != 0 || len(again.Entries) != 2 {
		t.Fatalf("stale re-arm or end changed the watch: %+v", again)
	}
	if err := s.RearmWatch(ctx, *got, entries[:1], next, 1); err != nil {
		t.Fatal(err)
	}
	if l := listed(next.Add(-time.Minute)); len(l) != 0 {
		t.Fatalf("re-armed watch still listed before its new due: %+v", l)
	}
	if l := listed(next); len(l) != 1 {
		t.Fatalf("re-armed watch not listed at its new due: %+v", l)
	}
	got, _ = s.LoadWatch(ctx, w.ID)
	if got.Checks != 1 || len(got.Entries) != 1 || !got.ArmedAt.Equal(t0) {
		t.Fatalf("re-armed: %+v", got)
	}
	if err := s.EndWatch(ctx, *got); err != nil {
		t.Fatal(err)
	}
	if gone, _ := s.LoadWatch(ctx, w.ID); gone != nil {
		t.Fatalf("ended watch remains: %+v", gone)
	}
}
