package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/metrics"
)

// WatchStore is what the in-flight watch needs from the table.
type WatchStore interface {
	ArmWatch(ctx context.Context, w domain.Watch) error
	// LoadWatch reads a notification's watch (nil when none) and its
	// deliveries by channel.
	LoadWatch(ctx context.Context, id string) (*domain.Watch, map[domain.Channel]*domain.Delivery, error)
	RearmWatch(ctx context.Context, w domain.Watch, next time.Time, checks int) error
	EndWatch(ctx context.Context, w domain.Watch) error
	GetNotification(ctx context.Context, id string) (*domain.Notification, error)
}

// armWatches arms one watch per notification of items before their messages
// go out and returns the items whose watch is recorded (the others stay
// planned in the due index, where the next tick finds them).
func (h *Handler) armWatches(ctx context.Context, items []domain.WorkItem) []domain.WorkItem {
	var order []string
	byID := map[string]*domain.Watch{}
	for _, it := range items {
		w, ok := byID[it.Message.NotificationID]
		if !ok {
			w = &domain.Watch{NotificationID: it.Message.NotificationID, UserID: it.Message.UserID, Priority: it.Priority,
				DueAt: h.now().Add(domain.StuckAfter(it.Priority))}
			byID[w.NotificationID] = w
			order = append(order, w.NotificationID)
		}
		w.Channels = append(w.Channels, it.Message.Channel)
	}
	failed := make([]bool, len(order))
	h.parallel(len(order), func(i int) {
		if err := h.store.ArmWatch(ctx, *byID[order[i]]); err != nil {
			h.log.ErrorContext(ctx, "arm watch failed", "notificationId", order[i], "error", err)
			failed[i] = true
		}
	})
	bad := map[string]bool{}
	for i, id := range order {
		if failed[i] {
			bad[id] = true
		}
	}
	out := items[:0:0]
	for _, it := range items {
		if !bad[it.Message.NotificationID] {
			out = append(out, it)
		}
	}
	return out
}

// checkWatches checks each due watch (see CheckWatch) and returns how many
// it checked.
func (h *Handler) checkWatches(ctx context.Context, ws []domain.Watch) (int, error) {
	errs := make([]error, len(ws))
	var checked atomic.Int64
	h.parallel(len(ws), func(i int) {
		if _, err := h.CheckWatch(ctx, ws[i]); err != nil {
			errs[i] = err
			return
		}
		checked.Add(1)
	})
	if n := checked.Load(); n > 0 {
		return int(n), nil // progress: the failed ones come back
	}
	return 0, errors.Join(errs...)
}

// Stuck is one delivery a watch found stuck (domain.StuckDelivery).
type Stuck = domain.StuckDelivery

// CheckWatch checks one due watch: each watched channel whose delivery is
// stuck gets its work message again (the worker's claim keeps it
// exactly-once) or, past the notification's expiry, ends failed: lost. The
// watch then ends when every channel has ended, or waits again: until the
// next channel could be stuck, or — after sending again — twice as long as
// before. It returns the stuck channels.
func (h *Handler) CheckWatch(ctx context.Context, due domain.Watch) ([]Stuck, error) {
	w, ds, err := h.store.LoadWatch(ctx, due.NotificationID)
	if err != nil || w == nil {
		return nil, err // no watch: ended by an earlier check
	}
	now := h.now()
	after := domain.StuckAfter(w.Priority)
	stuck := w.Stuck(ds, now)
	var next time.Time
	later := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	for _, c := range w.Channels {
		d := ds[c]
		switch {
		case d == nil:
		case d.Status == domain.StatusDeferred:
			later(d.DueAt.Add(after)) // released later; its release arms again
		case d.Status.InFlight() && now.Sub(d.StuckSince()) < after:
			later(d.StuckSince().Add(after))
		}
	}
	if len(stuck) > 0 {
		n, err := h.store.GetNotification(ctx, w.NotificationID)
		if err != nil {
			return stuck, err
		}
		resent, err := h.unstick(ctx, n, stuck, now)
		if err != nil {
			return stuck, err
		}
		if resent {
			later(domain.NextCheck(now, w.Priority, w.Checks))
		}
	}
	switch {
	case next.IsZero():
		err = h.store.EndWatch(ctx, *w)
	default:
		checks := w.Checks
		if len(stuck) > 0 {
			checks++
		}
		err = h.store.RearmWatch(ctx, *w, next, checks)
	}
	return stuck, err
}

// unstick sends the stuck channels' messages again, or fails them when the
// notification has expired; it reports whether it sent any.
func (h *Handler) unstick(ctx context.Context, n *domain.Notification, stuck []Stuck, now time.Time) (bool, error) {
	var items []domain.WorkItem
	var mu sync.Mutex
	var errs []error
	for _, s := range stuck {
		dims := metrics.Dims{Channel: s.Channel, Priority: s.Priority}
		h.metrics.Add(ctx, metrics.Stuck, dims, 1)
		if !n.Expired(now) {
			items = append(items, domain.WorkItem{Message: domain.WorkMessage{NotificationID: n.ID, Channel: s.Channel,
				UserID: n.Recipient.UserID, CampaignID: n.CampaignID}, Priority: s.Priority})
			h.log.WarnContext(ctx, "stuck delivery sent again", "notificationId", n.ID, "channel", s.Channel, "status", s.Status,
				"stuckSeconds", int(s.Age.Seconds()))
			continue
		}
		if s.Status == "" {
			continue // never claimed and expired: nothing was recorded, nothing to end
		}
		_, err := h.store.Transition(ctx, n.ID, s.Channel, domain.Change{
			To: domain.StatusFailed, From: []domain.Status{domain.StatusPlanned, domain.StatusQueued, domain.StatusRetrying},
			ReclaimExpiredLease: s.Since.Add(time.Nanosecond), Reason: domain.ReasonLost, LastError: "work message lost",
		})
		switch {
		case errors.Is(err, domain.ErrConflict):
			// moved on meanwhile
		case err != nil:
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		default:
			dims.Reason = domain.ReasonLost
			h.metrics.Add(ctx, metrics.Failed, dims, 1)
			h.log.WarnContext(ctx, "stuck delivery failed", "notificationId", n.ID, "channel", s.Channel, "status", s.Status,
				"outcome", domain.StatusFailed, "reason", domain.ReasonLost, "stuckSeconds", int(s.Age.Seconds()))
		}
	}
	if len(items) > 0 {
		for i, err := range h.pub.Publish(ctx, items) {
			if err != nil {
				errs = append(errs, fmt.Errorf("send %s/%s again: %w", items[i].Message.NotificationID, items[i].Message.Channel, err))
			}
		}
	}
	return len(items) > 0, errors.Join(errs...)
}
