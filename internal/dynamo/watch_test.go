package dynamo_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

// TestWatchLifecycle: armed watches merge channels and sit in the due index
// (listed beside deferred deliveries), load with the deliveries, re-arm and
// end only at the due time they were read at.
func TestWatchLifecycle(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	id := uniq(t)
	due := t0.Add(time.Hour)
	if _, err := s.CreateDelivery(ctx, &domain.Delivery{NotificationID: id, Channel: domain.ChannelEmail, UserID: "u1",
		Priority: domain.PriorityNormal, Status: domain.StatusQueued, UpdatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []domain.Channel{domain.ChannelEmail, domain.ChannelSMS} {
		if err := s.ArmWatch(ctx, domain.Watch{NotificationID: id, UserID: "u1", Priority: domain.PriorityNormal, Channels: []domain.Channel{c}, DueAt: due}); err != nil {
			t.Fatal(err)
		}
	}
	w, ds, err := s.LoadWatch(ctx, id)
	if err != nil || w == nil || !slices.Equal(w.Channels, []domain.Channel{domain.ChannelEmail, domain.ChannelSMS}) || !w.DueAt.Equal(due) || len(ds) != 1 ||
		ds[domain.ChannelEmail].Status != domain.StatusQueued {
		t.Fatalf("LoadWatch = %+v, %v, %v", w, ds, err)
	}
	listed := func(at time.Time) []domain.Watch {
		t.Helper()
		var out []domain.Watch
		for _, p := range s.DuePartitions(at.Add(-2*time.Hour), at) {
			ds, ws, err := s.ListDue(ctx, p, at, 100)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range ds {
				if d.NotificationID == id {
					t.Fatalf("a watch listed as a delivery: %+v", d)
				}
			}
			for _, w := range ws {
				if w.NotificationID == id {
					out = append(out, w)
				}
			}
		}
		return out
	}
	if got := listed(due.Add(-time.Second)); len(got) != 0 {
		t.Fatalf("listed before due: %+v", got)
	}
	got := listed(due)
	if len(got) != 1 || !got[0].DueAt.Equal(due) || got[0].Priority != domain.PriorityNormal || got[0].UserID != "u1" {
		t.Fatalf("listed at due: %+v", got)
	}
	// A re-arm or end with a stale due time changes nothing.
	next := due.Add(2 * time.Hour)
	if err := s.RearmWatch(ctx, domain.Watch{NotificationID: id, DueAt: due.Add(time.Minute)}, next, 5); err != nil {
		t.Fatal(err)
	}
	if err := s.EndWatch(ctx, domain.Watch{NotificationID: id, DueAt: due.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if w, _, _ := s.LoadWatch(ctx, id); w == nil || !w.DueAt.Equal(due) || w.Checks != 0 {
		t.Fatalf("stale re-arm or end changed the watch: %+v", w)
	}
	if err := s.RearmWatch(ctx, *w, next, 1); err != nil {
		t.Fatal(err)
	}
	if got := listed(next.Add(-time.Minute)); len(got) != 0 {
		t.Fatalf("re-armed watch still listed before its new due: %+v", got)
	}
	if got := listed(next); len(got) != 1 {
		t.Fatalf("re-armed watch not listed at its new due: %+v", got)
	}
	w, _, _ = s.LoadWatch(ctx, id)
	if w.Checks != 1 {
		t.Fatalf("checks = %d", w.Checks)
	}
	if err := s.EndWatch(ctx, *w); err != nil {
		t.Fatal(err)
	}
	if w, _, _ := s.LoadWatch(ctx, id); w != nil {
		t.Fatalf("ended watch remains: %+v", w)
	}
}
