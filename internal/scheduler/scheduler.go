// Package scheduler releases deferred deliveries whose due time has come. It
// runs every minute; deferral is stored in the table (a sparse due-time index),
// so it survives restarts and never burns SQS receive counts.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/metrics"
)

// Store is what the scheduler needs from the table.
type Store interface {
	ListDue(ctx context.Context, now time.Time, limit int32) ([]domain.Delivery, error)
	Transition(ctx context.Context, id string, ch domain.Channel, c domain.Change) (*domain.Delivery, error)
}

// Publisher sends work messages; one error slot per item.
type Publisher interface {
	Publish(ctx context.Context, items []domain.WorkItem) []error
}

// Handler is the scheduler Lambda handler.
type Handler struct {
	store Store
	pub   Publisher
	now   func() time.Time
	log   *slog.Logger
	// pageSize bounds one query; a run drains pages until nothing is due or
	// its context is about to end.
	pageSize int32
	// concurrency bounds the conditional writes in flight.
	concurrency int
	metrics     metrics.Recorder
}

// Deps are the scheduler's collaborators. Store, Publisher, Now and Log are
// required.
type Deps struct {
	Store     Store
	Publisher Publisher
	Now       func() time.Time
	Log       *slog.Logger
	// Metrics counts released deliveries as Enqueued (by channel and
	// priority), flushed once per invocation; nil records nothing.
	Metrics metrics.Recorder
}

// New wires a scheduler.
func New(d Deps) *Handler {
	h := &Handler{store: d.Store, pub: d.Publisher, now: d.Now, log: d.Log, pageSize: 100, concurrency: 16, metrics: d.Metrics}
	if h.metrics == nil {
		h.metrics = metrics.Nop{}
	}
	return h
}

// Handle releases every due delivery: deferred → planned (kept in the due
// index) → work message → queued (leaves the index). Each step is
// conditional, so overlapping runs send at most a duplicate message, which
// the worker's claim absorbs.
func (h *Handler) Handle(ctx context.Context, _ events.EventBridgeEvent) (Summary, error) {
	defer h.metrics.Flush(ctx)
	n, err := h.Release(ctx)
	return Summary{Released: n}, err
}

// Summary is the scheduler's invocation result.
type Summary struct {
	Released int `json:"released"`
}

// Release runs one pass and returns how many deliveries it queued. Each page
// of due deliveries is released with its conditional writes in parallel
// (bounded), so a scheduled campaign reaches its queue in seconds.
func (h *Handler) Release(ctx context.Context) (int, error) {
	released := 0
	for ctx.Err() == nil {
		due, err := h.store.ListDue(ctx, h.now(), h.pageSize)
		if err != nil {
			return released, err
		}
		if len(due) == 0 {
			return released, nil
		}
		// deferred → planned, keeping the due-index entry until queued.
		ready := make([]bool, len(due))
		errs := make([]error, len(due))
		h.parallel(len(due), func(i int) {
			d := due[i]
			if d.Status != domain.StatusDeferred {
				ready[i] = true // planned: an earlier release stopped before queued
				return
			}
			_, err := h.store.Transition(ctx, d.NotificationID, d.Channel, domain.Change{
				To: domain.StatusPlanned, From: []domain.Status{domain.StatusDeferred}, KeepDue: true,
			})
			switch {
			case errors.Is(err, domain.ErrConflict):
				// cancelled, or another run released it (the index lags)
			case err != nil:
				errs[i] = fmt.Errorf("release %s/%s: %w", d.NotificationID, d.Channel, err)
			default:
				ready[i] = true
			}
		})
		if err := errors.Join(errs...); err != nil {
			return released, err
		}
		var items []domain.WorkItem
		for i, d := range due {
			if ready[i] {
				items = append(items, domain.WorkItem{Message: domain.WorkMessage{NotificationID: d.NotificationID, Channel: d.Channel, UserID: d.UserID}, Priority: d.Priority})
			}
		}
		if len(items) == 0 {
			// Only entries the index has not caught up with yet: querying
			// again would return them again. The next run sees the rest.
			return released, nil
		}
		sendErrs := h.pub.Publish(ctx, items)
		var queued atomic.Int64
		h.parallel(len(items), func(i int) {
			it := items[i]
			if sendErrs[i] != nil {
				h.log.ErrorContext(ctx, "release enqueue failed", "notificationId", it.Message.NotificationID, "channel", it.Message.Channel, "error", sendErrs[i])
				return
			}
			_, err := h.store.Transition(ctx, it.Message.NotificationID, it.Message.Channel, domain.Change{
				To: domain.StatusQueued, From: []domain.Status{domain.StatusPlanned},
			})
			if err != nil && !errors.Is(err, domain.ErrConflict) {
				h.log.ErrorContext(ctx, "release record failed", "notificationId", it.Message.NotificationID, "channel", it.Message.Channel, "error", err)
				return
			}
			queued.Add(1)
			h.log.InfoContext(ctx, "delivery released", "notificationId", it.Message.NotificationID, "channel", it.Message.Channel, "priority", it.Priority, "outcome", "queued")
			h.metrics.Add(ctx, metrics.Enqueued, metrics.Dims{Channel: it.Message.Channel, Priority: it.Priority}, 1)
		})
		if queued.Load() == 0 {
			return released, fmt.Errorf("no due delivery could be released")
		}
		released += int(queued.Load())
	}
	return released, ctx.Err()
}

// parallel calls fn(0..n-1) on at most h.concurrency goroutines.
func (h *Handler) parallel(n int, fn func(i int)) {
	sem := make(chan struct{}, h.concurrency)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(i)
		})
	}
	wg.Wait()
}
