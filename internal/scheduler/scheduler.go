// Package scheduler releases deferred deliveries whose due time has come. It
// runs every minute; deferral is stored in the table (a sparse due-time index),
// so it survives restarts and never burns SQS receive counts.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/domain"
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
}

// New wires a scheduler.
func New(store Store, pub Publisher, now func() time.Time, log *slog.Logger) *Handler {
	return &Handler{store: store, pub: pub, now: now, log: log, pageSize: 100}
}

// Handle releases every due delivery: deferred → planned (kept in the due
// index) → work message → queued (leaves the index). Each step is
// conditional, so overlapping runs send at most a duplicate message, which
// the worker's claim absorbs.
func (h *Handler) Handle(ctx context.Context, _ events.EventBridgeEvent) (Summary, error) {
	n, err := h.Release(ctx)
	return Summary{Released: n}, err
}

// Summary is the scheduler's invocation result.
type Summary struct {
	Released int `json:"released"`
}

// Release runs one pass and returns how many deliveries it queued.
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
		var items []domain.WorkItem
		stale := 0
		for _, d := range due {
			if d.Status == domain.StatusDeferred {
				_, err := h.store.Transition(ctx, d.NotificationID, d.Channel, domain.Change{
					To: domain.StatusPlanned, From: []domain.Status{domain.StatusDeferred}, KeepDue: true,
				})
				if errors.Is(err, domain.ErrConflict) {
					stale++ // cancelled, or another run released it (the index lags)
					continue
				}
				if err != nil {
					return released, fmt.Errorf("release %s/%s: %w", d.NotificationID, d.Channel, err)
				}
			}
			items = append(items, domain.WorkItem{Message: domain.WorkMessage{NotificationID: d.NotificationID, Channel: d.Channel}, Priority: d.Priority})
		}
		if len(items) == 0 && stale == len(due) {
			// Only entries the index has not caught up with yet: querying
			// again would return them again. The next run sees the rest.
			return released, nil
		}
		errs := h.pub.Publish(ctx, items)
		progress := false
		for i, it := range items {
			if errs[i] != nil {
				h.log.ErrorContext(ctx, "release enqueue failed", "notificationId", it.Message.NotificationID, "channel", it.Message.Channel, "error", errs[i])
				continue
			}
			_, err := h.store.Transition(ctx, it.Message.NotificationID, it.Message.Channel, domain.Change{
				To: domain.StatusQueued, From: []domain.Status{domain.StatusPlanned},
			})
			if err != nil && !errors.Is(err, domain.ErrConflict) {
				h.log.ErrorContext(ctx, "release record failed", "notificationId", it.Message.NotificationID, "channel", it.Message.Channel, "error", err)
				continue
			}
			progress = true
			released++
			h.log.InfoContext(ctx, "delivery released", "notificationId", it.Message.NotificationID, "channel", it.Message.Channel, "priority", it.Priority, "outcome", "queued")
		}
		if !progress {
			return released, fmt.Errorf("no due delivery could be released")
		}
	}
	return released, ctx.Err()
}
