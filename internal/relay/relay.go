// Package relay turns new notifications (DynamoDB stream INSERTs) into
// per-channel deliveries: it records each delivery's first state with a
// conditional write and puts ids-only work messages on the channel queues.
//
// Idempotence rule: a delivery is created as `planned` (or directly in its
// final skipped/dropped/deferred state); a work message is sent only while the
// delivery is still `planned`, and the delivery then moves `planned → queued`.
// A retried stream record finds the delivery past `planned` and sends nothing;
// a crash between the send and the transition re-sends, and the worker's claim
// lets only one of the two messages through.
package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/policy"
)

// Store is what the relay needs from the table.
type Store interface {
	GetRecipientProfile(ctx context.Context, userID string) (*domain.RecipientProfile, error)
	CreateDelivery(ctx context.Context, d *domain.Delivery) (*domain.Delivery, error)
	Transition(ctx context.Context, id string, ch domain.Channel, c domain.Change) (*domain.Delivery, error)
}

// Publisher sends work messages; one error slot per item.
type Publisher interface {
	Publish(ctx context.Context, items []domain.WorkItem) []error
}

// DecodeFunc turns a stream image into a notification, or nil when the item is
// not a notification.
type DecodeFunc func(map[string]events.DynamoDBAttributeValue) (*domain.Notification, error)

// Handler is the relay Lambda handler.
type Handler struct {
	store   Store
	pub     Publisher
	decode  DecodeFunc
	catalog *catalog.Catalog
	now     func() time.Time
	log     *slog.Logger
}

// New wires a relay handler.
func New(store Store, pub Publisher, decode DecodeFunc, cat *catalog.Catalog, now func() time.Time, log *slog.Logger) *Handler {
	return &Handler{store: store, pub: pub, decode: decode, catalog: cat, now: now, log: log}
}

// pending is a planned delivery waiting for its work message.
type pending struct {
	record int
	item   domain.WorkItem
}

// Handle processes a batch of stream records and reports the sequence numbers
// of the records that must be retried.
func (h *Handler) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	failed := make([]bool, len(ev.Records))
	var toSend []pending
	for i, rec := range ev.Records {
		items, err := h.plan(ctx, rec)
		if err != nil {
			h.log.ErrorContext(ctx, "relay record failed", "sequenceNumber", rec.Change.SequenceNumber, "error", err)
			failed[i] = true
			continue
		}
		for _, it := range items {
			toSend = append(toSend, pending{record: i, item: it})
		}
	}
	if len(toSend) > 0 {
		items := make([]domain.WorkItem, len(toSend))
		for i, p := range toSend {
			items[i] = p.item
		}
		errs := h.pub.Publish(ctx, items)
		for i, p := range toSend {
			if errs[i] != nil {
				h.log.ErrorContext(ctx, "enqueue failed", "notificationId", p.item.Message.NotificationID, "channel", p.item.Message.Channel, "error", errs[i])
				failed[p.record] = true
				continue
			}
			if err := h.markQueued(ctx, p.item); err != nil {
				h.log.ErrorContext(ctx, "mark queued failed", "notificationId", p.item.Message.NotificationID, "channel", p.item.Message.Channel, "error", err)
				failed[p.record] = true
			}
		}
	}
	var resp events.DynamoDBEventResponse
	for i, f := range failed {
		if f {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: ev.Records[i].Change.SequenceNumber})
		}
	}
	return resp, nil
}

func (h *Handler) markQueued(ctx context.Context, it domain.WorkItem) error {
	_, err := h.store.Transition(ctx, it.Message.NotificationID, it.Message.Channel, domain.Change{
		To: domain.StatusQueued, From: []domain.Status{domain.StatusPlanned},
	})
	if errors.Is(err, domain.ErrConflict) {
		return nil // a concurrent retry got there first: the message is out either way
	}
	return err
}

// plan records the deliveries of one stream record and returns the work items
// still to send. Records that are not notification INSERTs are ignored even if
// the mapping's filter let them through.
func (h *Handler) plan(ctx context.Context, rec events.DynamoDBEventRecord) ([]domain.WorkItem, error) {
	if rec.EventName != string(events.DynamoDBOperationTypeInsert) {
		return nil, nil
	}
	n, err := h.decode(rec.Change.NewImage)
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if n == nil {
		return nil, nil
	}
	typ, ok := h.catalog.Lookup(n.Type)
	if !ok {
		// Intake validated the type; a type removed since cannot be delivered.
		h.log.WarnContext(ctx, "notification type no longer in catalog", "notificationId", n.ID, "type", n.Type)
		return nil, nil
	}
	profile, err := h.store.GetRecipientProfile(ctx, n.Recipient.UserID)
	if err != nil {
		return nil, fmt.Errorf("notification %s: %w", n.ID, err)
	}
	now := h.now()
	var items []domain.WorkItem
	for _, d := range policy.Decide(policy.Input{Notification: n, Type: typ, Profile: profile, Now: now}) {
		status := d.Status
		if status == domain.StatusQueued {
			status = domain.StatusPlanned
		}
		del := &domain.Delivery{
			NotificationID: n.ID, Channel: d.Channel, Priority: n.Priority,
			Status: status, Reason: d.Reason, DueAt: d.DueAt, UpdatedAt: now,
		}
		existing, err := h.store.CreateDelivery(ctx, del)
		switch {
		case errors.Is(err, domain.ErrConflict):
			if existing == nil || existing.Status != domain.StatusPlanned {
				continue // already past planning: nothing more to send
			}
		case err != nil:
			return nil, fmt.Errorf("notification %s: %w", n.ID, err)
		case status != domain.StatusPlanned:
			h.log.InfoContext(ctx, "delivery planned", "notificationId", n.ID, "channel", d.Channel, "priority", n.Priority, "outcome", status, "reason", d.Reason)
			continue
		}
		items = append(items, domain.WorkItem{
			Message:  domain.WorkMessage{NotificationID: n.ID, Channel: d.Channel},
			Priority: n.Priority,
		})
	}
	return items, nil
}
