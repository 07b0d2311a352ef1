// Package worker is the loop shared by the email, SMS and push functions. Per
// SQS message: decode → load → recheck → claim → render → send → record, with
// errors classified as transient (retry with backoff, then DLQ) or permanent.
// One message never fails the batch: the handler returns partial batch
// failures by messageId.
package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/policy"
)

// Store is what the worker needs from the table.
type Store interface {
	GetNotificationWithDeliveries(ctx context.Context, id string) (*domain.Notification, []domain.Delivery, error)
	GetRecipientProfile(ctx context.Context, userID string) (*domain.RecipientProfile, error)
	Transition(ctx context.Context, id string, ch domain.Channel, c domain.Change) (*domain.Delivery, error)
}

// Visibility delays a message's next receive.
type Visibility interface {
	SetVisibility(ctx context.Context, queueARN, receiptHandle string, timeout time.Duration) error
}

// Message is one rendered delivery handed to a provider.
type Message struct {
	Notification *domain.Notification
	Type         *catalog.Type
	Profile      *domain.RecipientProfile
	Content      catalog.Content
	Contact      string // email address or phone number; empty for push
}

// Provider sends on one channel.
type Provider interface {
	Channel() domain.Channel
	// Send returns the provider's message id, or an error. Errors that are not
	// *ProviderError are treated as transient.
	Send(ctx context.Context, m *Message) (string, error)
}

// ProviderError is a classified provider failure.
type ProviderError struct {
	// Transient errors are retried with backoff until MaxReceiveCount.
	Transient bool
	// Drop ends the delivery as dropped (the truth is "no longer applies", e.g.
	// an opted-out number) instead of failed.
	Drop bool
	// Reason is recorded on permanent outcomes.
	Reason domain.Reason
	// RetryAfter, when set, is the provider's requested delay (Web Push 429).
	RetryAfter time.Duration
	// Code is a short provider error code, safe to log and store (never PII).
	Code string
	Err  error
}

func (e *ProviderError) Error() string {
	kind := "permanent"
	if e.Transient {
		kind = "transient"
	}
	return fmt.Sprintf("%s provider error %s: %v", kind, e.Code, e.Err)
}

func (e *ProviderError) Unwrap() error { return e.Err }

// Config tunes the loop.
type Config struct {
	BackoffBase time.Duration
	BackoffCap  time.Duration
	// HighBackoffBase replaces BackoffBase for high priority (shorter).
	HighBackoffBase time.Duration
	// MaxReceiveCount is the queue's redrive maxReceiveCount: the receive on
	// which a transient failure is final.
	MaxReceiveCount int
	// Lease bounds a claim; a crashed sender's delivery is reclaimable after it.
	Lease time.Duration
}

// Handler is the channel Lambda handler.
type Handler struct {
	cfg        Config
	store      Store
	visibility Visibility
	provider   Provider
	catalog    *catalog.Catalog
	now        func() time.Time
	log        *slog.Logger
	randMu     sync.Mutex
	rand       *rand.Rand
}

// New wires a worker for one provider.
func New(cfg Config, store Store, vis Visibility, p Provider, cat *catalog.Catalog, now func() time.Time, log *slog.Logger) *Handler {
	if cfg.HighBackoffBase == 0 {
		cfg.HighBackoffBase = cfg.BackoffBase / 4
	}
	if cfg.Lease == 0 {
		cfg.Lease = 30 * time.Second
	}
	seed := uint64(time.Now().UnixNano())
	return &Handler{cfg: cfg, store: store, visibility: vis, provider: p, catalog: cat, now: now, log: log,
		rand: rand.New(rand.NewPCG(seed, seed>>1))}
}

// Handle processes a batch; failed items are retried by SQS, the rest deleted.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	for _, msg := range ev.Records {
		if err := h.handleOne(ctx, msg); err != nil {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: msg.MessageId})
		}
	}
	return resp, nil
}

// errRetry marks a message to be reported as failed (retried by SQS).
var errRetry = errors.New("retry")

func (h *Handler) handleOne(ctx context.Context, msg events.SQSMessage) error {
	var wm domain.WorkMessage
	if err := decodeStrict(msg.Body, &wm); err != nil || wm.NotificationID == "" || wm.Channel != h.provider.Channel() {
		h.log.ErrorContext(ctx, "malformed work message", "messageId", msg.MessageId, "outcome", "malformed")
		return errRetry // redrive moves it to the DLQ after MaxReceiveCount
	}
	log := h.log.With("notificationId", wm.NotificationID, "channel", wm.Channel, "messageId", msg.MessageId)
	n, deliveries, err := h.store.GetNotificationWithDeliveries(ctx, wm.NotificationID)
	if errors.Is(err, domain.ErrNotFound) {
		log.WarnContext(ctx, "notification gone", "outcome", "discarded")
		return nil
	}
	if err != nil {
		log.ErrorContext(ctx, "load failed", "error", err)
		return errRetry
	}
	var d *domain.Delivery
	for i := range deliveries {
		if deliveries[i].Channel == wm.Channel {
			d = &deliveries[i]
		}
	}
	if d == nil {
		log.ErrorContext(ctx, "no delivery for work message", "outcome", "malformed")
		return errRetry
	}
	log = log.With("priority", d.Priority)
	if d.Status.Terminal() {
		log.InfoContext(ctx, "duplicate work message", "outcome", "duplicate", "status", d.Status)
		return nil
	}
	typ, ok := h.catalog.Lookup(n.Type)
	if !ok {
		return h.finish(ctx, log, n.ID, domain.Change{To: domain.StatusFailed, Reason: domain.ReasonNotApplicable, LastError: "unknown type"})
	}
	profile, err := h.store.GetRecipientProfile(ctx, n.Recipient.UserID)
	if err != nil {
		log.ErrorContext(ctx, "load profile failed", "error", err)
		return errRetry
	}
	now := h.now()
	contact, reason := h.recheck(n, typ, profile, now)
	if reason != domain.ReasonNone {
		return h.finish(ctx, log, n.ID, domain.Change{To: domain.StatusDropped, Reason: reason})
	}

	claimed, err := h.store.Transition(ctx, n.ID, wm.Channel, domain.Change{
		To: domain.StatusSending, From: []domain.Status{domain.StatusPlanned, domain.StatusQueued, domain.StatusRetrying},
		ReclaimExpiredLease: now, LeaseUntil: now.Add(h.cfg.Lease), IncrementAttempts: true,
	})
	if errors.Is(err, domain.ErrConflict) {
		log.InfoContext(ctx, "claim lost", "outcome", "claimed_elsewhere")
		return nil
	}
	if err != nil {
		log.ErrorContext(ctx, "claim failed", "error", err)
		return errRetry
	}
	log = log.With("attempt", claimed.Attempts)

	content, err := h.render(ctx, n, d, typ, locale(n, profile)) // digest.go: a digest leader renders its digest
	if errors.Is(err, errDigestLoad) {
		return h.retryDigest(ctx, log, msg, n, d, err)
	}
	if err != nil {
		return h.finish(ctx, log, n.ID, domain.Change{To: domain.StatusFailed, From: []domain.Status{domain.StatusSending}, Reason: domain.ReasonNotApplicable, LastError: "render failed"})
	}
	pmid, sendErr := h.provider.Send(ctx, &Message{Notification: n, Type: typ, Profile: profile, Content: content, Contact: contact})
	if sendErr == nil {
		return h.finish(ctx, log, n.ID, domain.Change{To: domain.StatusSent, From: []domain.Status{domain.StatusSending}, ProviderMessageID: pmid})
	}
	var pe *ProviderError
	if !errors.As(sendErr, &pe) {
		pe = &ProviderError{Transient: true, Code: "unclassified", Err: sendErr}
	}
	if !pe.Transient {
		to := domain.StatusFailed
		if pe.Drop {
			to = domain.StatusDropped
		}
		reason := pe.Reason
		if reason == "" {
			reason = domain.ReasonRejected
		}
		return h.finish(ctx, log, n.ID, domain.Change{To: to, From: []domain.Status{domain.StatusSending}, Reason: reason, LastError: pe.Code})
	}
	receives := receiveCount(msg)
	if h.cfg.MaxReceiveCount > 0 && receives >= h.cfg.MaxReceiveCount {
		// Last allowed receive: SQS moves the message to the DLQ after this.
		_ = h.finish(ctx, log, n.ID, domain.Change{To: domain.StatusFailed, From: []domain.Status{domain.StatusSending}, Reason: domain.ReasonExhausted, LastError: pe.Code})
		return errRetry
	}
	delay := h.backoff(d.Priority, receives)
	if pe.RetryAfter > delay {
		delay = pe.RetryAfter
	}
	_ = h.finish(ctx, log.With("retryIn", delay.String()), n.ID, domain.Change{To: domain.StatusRetrying, From: []domain.Status{domain.StatusSending}, LastError: pe.Code})
	if err := h.visibility.SetVisibility(ctx, msg.EventSourceARN, msg.ReceiptHandle, delay); err != nil {
		log.WarnContext(ctx, "change visibility failed", "error", err)
	}
	return errRetry
}

// recheck re-validates a delivery against the latest state just before the
// claim; a non-empty reason means it no longer applies.
func (h *Handler) recheck(n *domain.Notification, typ *catalog.Type, p *domain.RecipientProfile, now time.Time) (string, domain.Reason) {
	c := h.provider.Channel()
	switch {
	case n.Status == domain.NotificationCancelled:
		return "", domain.ReasonCancelled
	case n.Expired(now):
		return "", domain.ReasonExpired
	case !policy.Enabled(typ, p.Preferences, c):
		return "", domain.ReasonPreference
	}
	contact, ok := policy.Contact(n, p, c)
	if !ok {
		return "", domain.ReasonNoContact
	}
	if c == domain.ChannelEmail && p.User != nil && p.User.SuppressedEmail != "" && strings.EqualFold(p.User.SuppressedEmail, contact) {
		return "", domain.ReasonSuppressed
	}
	return contact, domain.ReasonNone
}

// finish records an outcome and logs it; the message is done (deleted) unless
// the store write fails, in which case SQS retries it.
func (h *Handler) finish(ctx context.Context, log *slog.Logger, id string, c domain.Change) error {
	d, err := h.store.Transition(ctx, id, h.provider.Channel(), c)
	if errors.Is(err, domain.ErrConflict) {
		log.InfoContext(ctx, "outcome already recorded", "outcome", c.To)
		return nil
	}
	if err != nil {
		log.ErrorContext(ctx, "record outcome failed", "outcome", c.To, "error", err)
		return errRetry
	}
	log.InfoContext(ctx, "delivery outcome", "outcome", d.Status, "reason", d.Reason, "attempts", d.Attempts)
	return nil
}

func (h *Handler) backoff(p domain.Priority, receives int) time.Duration {
	base := h.cfg.BackoffBase
	if p == domain.PriorityHigh {
		base = h.cfg.HighBackoffBase
	}
	h.randMu.Lock()
	defer h.randMu.Unlock()
	return domain.Backoff(base, h.cfg.BackoffCap, receives, h.rand.Float64)
}

func locale(n *domain.Notification, p *domain.RecipientProfile) string {
	if n.Recipient.Locale != "" {
		return n.Recipient.Locale
	}
	if p.User != nil {
		return p.User.Locale
	}
	return ""
}

func receiveCount(msg events.SQSMessage) int {
	var n int
	fmt.Sscan(msg.Attributes["ApproximateReceiveCount"], &n)
	return n
}

func decodeStrict(body string, v any) error {
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
