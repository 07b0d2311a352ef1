package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/recovery"
)

// WatchStore is what the in-flight watches need from the table.
type WatchStore interface {
	ArmWatch(ctx context.Context, w recovery.Watch) error
	// LoadWatch reads a watch; nil when it has ended.
	LoadWatch(ctx context.Context, id string) (*recovery.Watch, error)
	// WatchedDeliveries reads deliveries; a key with no item is absent.
	WatchedDeliveries(ctx context.Context, keys []domain.DeliveryKey) (map[domain.DeliveryKey]*domain.Delivery, error)
	RearmWatch(ctx context.Context, w recovery.Watch, remaining []recovery.WatchEntry, next time.Time, checks int) error
	EndWatch(ctx context.Context, w recovery.Watch) error
	GetNotification(ctx context.Context, id string) (*domain.Notification, error)
}

// armWatches arms the watches of items (one per priority) before their
// messages go out and returns the items whose watch is recorded (the others
// stay planned in the due index, where the next tick finds them).
func (h *Handler) armWatches(ctx context.Context, items []domain.WorkItem) []domain.WorkItem {
	ws := recovery.NewWatches(items, h.now())
	failed := map[domain.Priority]bool{}
	for _, w := range ws {
		if err := h.store.ArmWatch(ctx, w); err != nil {
			h.log.ErrorContext(ctx, "arm watch failed", "watch", w.ID, "error", err)
			failed[w.Priority] = true
		}
	}
	out := items[:0:0]
	for _, it := range items {
		if !failed[it.Priority] {
			out = append(out, it)
		}
	}
	return out
}

// checkWatches checks each due watch (CheckWatch) and returns how many it
// checked.
func (h *Handler) checkWatches(ctx context.Context, ws []recovery.Watch) (int, error) {
	errs := make([]error, len(ws))
	var checked atomic.Int64
	h.parallel(len(ws), func(i int) {
		if _, err := h.CheckWatch(ctx, ws[i].ID); err != nil {
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

// Stuck is one delivery a watch found stuck.
type Stuck = recovery.StuckDelivery

// CheckWatch checks one due watch: each watched delivery that is stuck gets
// its work message again (the worker's claim keeps it exactly-once) or, past
// its notification's expiry, ends failed: lost. The watch then ends when
// every delivery has ended (or was deferred again: its release arms a watch
// of its own), or keeps the others and waits: until the next could be stuck,
// or — having sent again — StuckAfter × 2^checks. It returns what was stuck.
func (h *Handler) CheckWatch(ctx context.Context, id string) ([]Stuck, error) {
	w, err := h.store.LoadWatch(ctx, id)
	if err != nil || w == nil {
		return nil, err // ended by an earlier check
	}
	keys := make([]domain.DeliveryKey, len(w.Entries))
	for i, e := range w.Entries {
		keys[i] = e.Key()
	}
	ds, err := h.store.WatchedDeliveries(ctx, keys)
	if err != nil {
		return nil, err
	}
	now := h.now()
	after := recovery.StuckAfter(w.Priority)
	stuck := w.Stuck(ds, now)
	gone := map[domain.DeliveryKey]bool{} // stuck, expired and never claimed: nothing left to watch
	resent := false
	if len(stuck) > 0 {
		if resent, err = h.unstick(ctx, stuck, now, gone); err != nil {
			return stuck, err
		}
	}
	var next time.Time
	later := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	if resent {
		later(recovery.NextCheck(now, w.Priority, w.Checks))
	}
	var remaining []recovery.WatchEntry
	for _, e := range w.Entries {
		d := ds[e.Key()]
		switch {
		case gone[e.Key()]:
		case d == nil:
			remaining = append(remaining, e)
			later(w.ArmedAt.Add(after))
		case d.Status.InFlight():
			remaining = append(remaining, e)
			if since := d.StuckSince(); now.Sub(since) < after {
				later(since.Add(after))
			}
		}
	}
	if len(remaining) == 0 {
		return stuck, h.store.EndWatch(ctx, *w)
	}
	checks := w.Checks
	if resent {
		checks++
	}
	if next.IsZero() || !next.After(now) {
		next = recovery.NextCheck(now, w.Priority, checks) // a delivery failed lost just now, say
	}
	return stuck, h.store.RearmWatch(ctx, *w, remaining, next, checks)
}

// unstick sends the stuck deliveries' messages again, or fails them when
// their notification has expired (noting in gone what needs no more
// watching); it reports whether it sent any.
func (h *Handler) unstick(ctx context.Context, stuck []Stuck, now time.Time, gone map[domain.DeliveryKey]bool) (bool, error) {
	var items []domain.WorkItem
	var errs []error
	for _, s := range stuck {
		n, err := h.store.GetNotification(ctx, s.NotificationID)
		if errors.Is(err, domain.ErrNotFound) {
			gone[s.Key()] = true // deleted (retention): nothing to send
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		dims := metrics.Dims{Channel: s.Channel, Priority: s.Priority}
		h.metrics.Add(ctx, metrics.Stuck, dims, 1)
		if !n.Expired(now) {
			items = append(items, domain.WorkItem{Message: domain.WorkMessage{NotificationID: n.ID, Channel: s.Channel,
				UserID: n.Recipient.UserID, CampaignID: n.CampaignID}, Priority: s.Priority})
			h.log.WarnContext(ctx, "stuck delivery sent again", "notificationId", n.ID, "channel", s.Channel, "status", s.Status,
				"stuckSeconds", int(s.Age.Seconds()))
			continue
		}
		gone[s.Key()] = true
		if s.Status == "" {
			continue // never claimed and expired: no item to end
		}
		_, err = h.store.Transition(ctx, n.ID, s.Channel, domain.Change{
			To: domain.StatusFailed, From: []domain.Status{domain.StatusPlanned, domain.StatusQueued, domain.StatusRetrying},
			ReclaimExpiredLease: s.Since.Add(time.Nanosecond), Reason: domain.ReasonLost, LastError: "work message lost",
		})
		switch {
		case errors.Is(err, domain.ErrConflict):
			delete(gone, s.Key()) // moved on meanwhile: the next check sees where to
		case err != nil:
			errs = append(errs, err)
			delete(gone, s.Key())
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
