// Package feedback handles SES email events (the configuration set's event
// destination publishes them to an SNS topic the feedback function
// subscribes to): Delivery, Bounce and Complaint refine a sent email delivery
// to delivered, bounced or complained, and a hard bounce or a complaint
// suppresses the address for its user, so later email to it is dropped
// (reason suppressed) until the profile's address changes.
//
// Every update is conditional, so SNS's at-least-once delivery and
// out-of-order events are harmless: a duplicate finds the delivery already
// there, and a Delivery arriving after a Bounce does not undo it. An event
// that arrives before the worker has recorded sent (the race between SES and
// the worker's write) fails the invocation, and Lambda's asynchronous retries
// bring it back once sent is recorded.
package feedback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/metrics"
)

// Store is what the feedback handler needs from the table.
type Store interface {
	GetNotification(ctx context.Context, id string) (*domain.Notification, error)
	Transition(ctx context.Context, id string, ch domain.Channel, c domain.Change) (*domain.Delivery, error)
	GetDelivery(ctx context.Context, id string, ch domain.Channel) (*domain.Delivery, error)
	// SuppressEmail records that email to address must no longer be sent to
	// the user (idempotent).
	SuppressEmail(ctx context.Context, userID, address string) error
}

// Event is the part of an SES event-publishing record Herald reads. SES
// identity notifications use notificationType instead of eventType; both
// are accepted.
type Event struct {
	EventType        string `json:"eventType"`
	NotificationType string `json:"notificationType"`
	Mail             struct {
		MessageID   string              `json:"messageId"`
		Destination []string            `json:"destination"`
		Tags        map[string][]string `json:"tags"`
	} `json:"mail"`
	Bounce *struct {
		BounceType        string      `json:"bounceType"` // Permanent | Transient | Undetermined
		BounceSubType     string      `json:"bounceSubType"`
		BouncedRecipients []recipient `json:"bouncedRecipients"`
	} `json:"bounce"`
	Complaint *struct {
		ComplainedRecipients []recipient `json:"complainedRecipients"`
	} `json:"complaint"`
	Delivery *struct {
		// Timestamp is when the recipient's mail server accepted the mail.
		Timestamp time.Time `json:"timestamp"`
	} `json:"delivery"`
}

type recipient struct {
	EmailAddress string `json:"emailAddress"`
}

// Type is the event's type ("Delivery", "Bounce", "Complaint", …).
func (e *Event) Type() string {
	if e.EventType != "" {
		return e.EventType
	}
	return e.NotificationType
}

// Handler is the feedback Lambda handler.
type Handler struct {
	store   Store
	log     *slog.Logger
	metrics metrics.Recorder
}

// Deps are the feedback handler's collaborators; Store and Log are required.
type Deps struct {
	Store Store
	Log   *slog.Logger
	// Metrics counts the feedback recorded (Delivered, Bounced, Complained
	// by channel and priority), flushed once per invocation; nil records
	// nothing.
	Metrics metrics.Recorder
}

// New returns a feedback handler.
func New(d Deps) *Handler {
	h := &Handler{store: d.Store, log: d.Log, metrics: d.Metrics}
	if h.metrics == nil {
		h.metrics = metrics.Nop{}
	}
	return h
}

// feedbackMetric is the metric counting deliveries that reach each feedback
// status.
var feedbackMetric = map[domain.Status]metrics.Name{
	domain.StatusDelivered:  metrics.Delivered,
	domain.StatusBounced:    metrics.Bounced,
	domain.StatusComplained: metrics.Complained,
}

// errNotYetSent asks for a retry: the event overtook the worker's write.
var errNotYetSent = errors.New("delivery not yet recorded as sent")

// Handle processes the SNS records (SNS invokes with one). An unusable event
// is logged and skipped — retrying cannot fix it; a store error or an event
// that overtook the worker fails the invocation so Lambda retries it.
func (h *Handler) Handle(ctx context.Context, ev events.SNSEvent) error {
	defer h.metrics.Flush(ctx)
	var errs []error
	for _, r := range ev.Records {
		if err := h.handleOne(ctx, r.SNS); err != nil {
			errs = append(errs, fmt.Errorf("sns message %s: %w", r.SNS.MessageID, err))
		}
	}
	return errors.Join(errs...)
}

func (h *Handler) handleOne(ctx context.Context, msg events.SNSEntity) error {
	log := h.log.With("snsMessageId", msg.MessageID)
	var e Event
	if err := json.Unmarshal([]byte(msg.Message), &e); err != nil {
		log.ErrorContext(ctx, "unreadable SES event", "outcome", "malformed")
		return nil
	}
	ids := e.Mail.Tags[domain.EmailTagNotificationID]
	if len(ids) == 0 || ids[0] == "" {
		log.WarnContext(ctx, "SES event without a notification tag", "eventType", e.Type(), "outcome", "ignored")
		return nil
	}
	id := ids[0]
	log = log.With("notificationId", id, "eventType", e.Type(), "sesMessageId", e.Mail.MessageID)

	to, suppress, handled := e.outcome()
	if !handled {
		log.InfoContext(ctx, "SES event type not handled", "outcome", "ignored")
		return nil
	}
	// Suppress first: it is idempotent, and a retried event redoes both. Only
	// suppression needs the notification (for its user); a delivery event,
	// one per email sent, goes straight to the conditional transition.
	if len(suppress) > 0 {
		if known, err := h.suppress(ctx, log, id, suppress); err != nil || !known {
			return err
		}
	}
	ms, ok := e.deliveredLatency()
	return h.record(ctx, log, id, to, ms, ok)
}

// deliveredLatency is a Delivery event's accepted → delivered, in
// milliseconds: from the due time the email's dueAt tag carries to the
// delivery's timestamp; ok false when the event lacks either (mail sent
// before the tag was set, or another event type).
func (e *Event) deliveredLatency() (ms float64, ok bool) {
	tag := e.Mail.Tags[domain.EmailTagDueAt]
	if e.Delivery == nil || e.Delivery.Timestamp.IsZero() || len(tag) == 0 {
		return 0, false
	}
	due, err := strconv.ParseInt(tag[0], 10, 64)
	if err != nil || due <= 0 {
		return 0, false
	}
	return metrics.Latency(time.UnixMilli(due), e.Delivery.Timestamp), true
}

// outcome is the delivery status the event records and the addresses it
// suppresses (a hard bounce's or a complaint's); handled is false for event
// types Herald does not act on.
func (e *Event) outcome() (to domain.Status, suppress []string, handled bool) {
	switch e.Type() {
	case "Delivery":
		return domain.StatusDelivered, nil, true
	case "Bounce":
		if e.Bounce != nil && e.Bounce.BounceType == "Permanent" {
			suppress = addresses(e.Bounce.BouncedRecipients, e.Mail.Destination)
		}
		return domain.StatusBounced, suppress, true
	case "Complaint":
		if e.Complaint != nil {
			suppress = addresses(e.Complaint.ComplainedRecipients, e.Mail.Destination)
		}
		return domain.StatusComplained, suppress, true
	}
	return "", nil, false
}

// suppress records the addresses as suppressed for the notification's user.
// known is false (and err nil) when the notification is gone: the event is
// then ignored.
func (h *Handler) suppress(ctx context.Context, log *slog.Logger, id string, addrs []string) (known bool, err error) {
	n, err := h.store.GetNotification(ctx, id)
	if errors.Is(err, domain.ErrNotFound) {
		log.WarnContext(ctx, "SES event for an unknown notification", "outcome", "ignored")
		return false, nil
	}
	if err != nil {
		log.ErrorContext(ctx, "load notification failed", "error", err)
		return false, err
	}
	for _, addr := range addrs {
		if err := h.store.SuppressEmail(ctx, n.Recipient.UserID, addr); err != nil {
			log.ErrorContext(ctx, "suppress address failed", "error", err)
			return false, err
		}
	}
	log.InfoContext(ctx, "address suppressed", "userId", n.Recipient.UserID, "outcome", "suppressed")
	return true, nil
}

// record moves the email delivery to its feedback status with a conditional
// transition, and observes the delivered latency (ms, ok) of a delivery it
// recorded. A delivery not yet recorded as sent asks for a retry
// (errNotYetSent); one already past it, or missing, ignores the event.
func (h *Handler) record(ctx context.Context, log *slog.Logger, id string, to domain.Status, ms float64, ok bool) error {
	d, err := h.store.Transition(ctx, id, domain.ChannelEmail, domain.Change{To: to})
	if errors.Is(err, domain.ErrConflict) && d == nil {
		// The store did not return the current item with the failed write.
		if d, err = h.store.GetDelivery(ctx, id, domain.ChannelEmail); err == nil {
			err = domain.ErrConflict
		}
	}
	var invalid domain.ErrInvalidTransition
	switch {
	case err == nil:
		log.InfoContext(ctx, "email feedback recorded", "outcome", d.Status)
		dims := metrics.Dims{Channel: domain.ChannelEmail, Priority: d.Priority}
		h.metrics.Add(ctx, feedbackMetric[to], dims, 1)
		if to == domain.StatusDelivered && ok {
			h.metrics.Observe(ctx, metrics.DeliveredLatency, dims, ms)
		}
		return nil
	case errors.Is(err, domain.ErrNotFound):
		log.WarnContext(ctx, "SES event for a notification without email delivery", "outcome", "ignored")
		return nil
	case errors.Is(err, domain.ErrConflict) && !d.Status.Terminal():
		// SES answered the send before the worker recorded it: retry later.
		log.WarnContext(ctx, "email feedback before sent was recorded", "status", d.Status, "outcome", "retry")
		return errNotYetSent
	case errors.Is(err, domain.ErrConflict):
		log.InfoContext(ctx, "email feedback not applicable", "status", d.Status, "outcome", "ignored")
		return nil
	case errors.As(err, &invalid):
		log.ErrorContext(ctx, "email feedback transition invalid", "error", err)
		return nil
	}
	log.ErrorContext(ctx, "record feedback failed", "error", err)
	return err
}

// addresses are the recipients the event names, else the mail's destination
// (Herald sends every email to exactly one address).
func addresses(rs []recipient, destination []string) []string {
	var out []string
	for _, r := range rs {
		if a := strings.TrimSpace(r.EmailAddress); a != "" {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		out = destination
	}
	return out
}
