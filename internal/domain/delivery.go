package domain

import (
	"fmt"
	"slices"
	"time"
)

// Status is the state of one delivery (notification × channel).
type Status string

const (
	StatusPlanned  Status = "planned"
	StatusQueued   Status = "queued"
	StatusSending  Status = "sending"
	StatusSent     Status = "sent"
	StatusRetrying Status = "retrying"
	StatusDeferred Status = "deferred"
	StatusSkipped  Status = "skipped"
	StatusDropped  Status = "dropped"
	StatusFailed   Status = "failed"
	// Email feedback states, reached from sent.
	StatusDelivered  Status = "delivered"
	StatusBounced    Status = "bounced"
	StatusComplained Status = "complained"
)

// Reason is a stable snake_case code explaining a skipped, dropped, deferred or
// failed delivery.
type Reason string

const (
	ReasonNone        Reason = ""
	ReasonPreference  Reason = "preference"
	ReasonRateLimited Reason = "rate_limited"
	ReasonNoContact   Reason = "no_contact"
	ReasonCancelled   Reason = "cancelled"
	ReasonExpired     Reason = "expired"
	ReasonExhausted   Reason = "exhausted"
	ReasonSuppressed  Reason = "suppressed"
	ReasonOptedOut    Reason = "opted_out"
	ReasonRejected    Reason = "rejected"
	ReasonQuietHours  Reason = "quiet_hours"
	ReasonScheduled   Reason = "scheduled"
	ReasonDigest      Reason = "digest"
	ReasonDigested    Reason = "digested"
	// ReasonBudget: over the user's notification budget, the delivery waits
	// for the user's budget digest (policy.Budget).
	ReasonBudget        Reason = "budget"
	ReasonProviderError Reason = "provider_error"
	ReasonNotApplicable Reason = "not_applicable"
	// ReasonMuted: the recipient muted the topic the notification was sent to.
	ReasonMuted Reason = "muted"
	// ReasonDelayed: deferred by the type's escalation delay (after).
	ReasonDelayed Reason = "delayed"
	// ReasonActiveInApp: skipped, the user was in the app shortly before the
	// send (the type's unlessActiveWithin).
	ReasonActiveInApp Reason = "active_in_app"
	// ReasonReadInApp: dropped, the inbox item was read or archived before
	// the send (the type's unlessRead).
	ReasonReadInApp Reason = "read_in_app"
)

// transitions is the delivery state machine (docs/architecture.md). Every store update is
// conditional on the current state being one of the allowed sources.
var transitions = map[Status][]Status{
	// planned → sending: the worker may receive the work message before the
	// relay has recorded queued; the message's existence proves it was sent.
	// planned → failed: its work message was lost and the notification
	// expired before the scheduler's watch could send it again (lost).
	StatusPlanned: {StatusQueued, StatusDeferred, StatusSkipped, StatusDropped, StatusSending, StatusFailed},
	// deferred → planned: the scheduler releases it (then sends, then queued).
	StatusDeferred: {StatusPlanned, StatusQueued, StatusDropped, StatusSkipped},
	// queued/retrying → skipped: the worker's recheck finds the user in the
	// app (escalation's unlessActiveWithin).
	StatusQueued:   {StatusSending, StatusDropped, StatusFailed, StatusSkipped},
	StatusRetrying: {StatusSending, StatusDropped, StatusFailed, StatusQueued, StatusSkipped},
	StatusSending:  {StatusSent, StatusRetrying, StatusFailed, StatusDropped, StatusSending},
	StatusSent:     {StatusDelivered, StatusBounced, StatusComplained},
	// A redrive from a DLQ puts a failed delivery back in the queue.
	StatusFailed:    {StatusQueued},
	StatusDelivered: {StatusBounced, StatusComplained},
}

// CanTransition reports whether the state machine allows from → to.
func CanTransition(from, to Status) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// SourcesOf lists the states from which `to` may be reached; stores use it to
// build their conditional updates so the rule lives in one place.
func SourcesOf(to Status) []Status {
	var out []Status
	for _, from := range allStatuses {
		if CanTransition(from, to) {
			out = append(out, from)
		}
	}
	return out
}

// KnownStatus reports whether s is a delivery state.
func KnownStatus(s Status) bool { return slices.Contains(allStatuses, s) }

var allStatuses = []Status{
	StatusPlanned, StatusQueued, StatusSending, StatusSent, StatusRetrying, StatusDeferred,
	StatusSkipped, StatusDropped, StatusFailed, StatusDelivered, StatusBounced, StatusComplained,
}

// Terminal reports whether no further work will happen for the delivery
// (feedback may still refine sent).
func (s Status) Terminal() bool {
	switch s {
	case StatusSent, StatusSkipped, StatusDropped, StatusFailed, StatusDelivered, StatusBounced, StatusComplained:
		return true
	}
	return false
}

// Delivery is the state of one notification on one channel.
type Delivery struct {
	NotificationID string
	Channel        Channel
	UserID         string // the recipient; empty on deliveries recorded before it was kept
	Priority       Priority
	Status         Status
	Reason         Reason
	Attempts       int // provider calls made
	UpdatedAt      time.Time
	DueAt          time.Time // set while deferred
	LeaseUntil     time.Time // set while sending
	// LeaseHolder names the claim's holder while sending (the SQS message
	// id of the work message that claimed it), so a receive of that same
	// message can tell its own live lease from another worker's.
	LeaseHolder       string
	LastError         string // classified error text, never PII
	ProviderMessageID string
	// Provider names the provider of the latest attempt (the one that sent
	// a sent delivery): "ses:<region>", "sns", "sms-voice"; empty for push,
	// which has one path per platform, and before any attempt.
	Provider string
	// PinnedProvider is set when an attempt's outcome was unknown (the
	// request left and no answer came back): every later attempt goes to
	// that provider only, never to the other one (failover.Route).
	PinnedProvider string
	DigestID       string // digest this delivery joined or leads
	// BudgetDigest: the digest of DigestID is the user's budget digest of the
	// channel (BudgetDigestKey), which the worker renders from the catalog's
	// budget digest, not the type's.
	BudgetDigest bool
	// SentTargets are the targets of a delivery with several (a push
	// delivery's web subscriptions and devices, by id) that their provider
	// accepted; a retry sends only to the others.
	SentTargets []string
	// Notification fields copied onto the delivery when it is created, so
	// that a delivery event is built from the delivery's own stream image
	// (no read of the notification per event). Empty on deliveries created
	// before they were kept.
	Caller     string
	Type       string
	CampaignID string
	ResourceID string
	// NotificationCreatedAt is the notification's acceptance time, copied
	// like the fields above: it orders the recipient's history (zero on
	// deliveries created before it was kept, which the history omits).
	NotificationCreatedAt time.Time
	// Trail is the decision trail: each state the delivery reached, oldest
	// first, recorded by the write that made the change (at most MaxTrail).
	Trail []Step
}

// Step is one entry of a delivery's decision trail: the state reached, when,
// and why. Error and Note are classified codes and durations, never PII.
type Step struct {
	At     time.Time
	Status Status
	Reason Reason
	DueAt  time.Time // deferred: until when
	Error  string    // the provider's classified error (retrying, failed)
	Note   string    // what the writer adds, e.g. "retry in 4s"
}

// MaxTrail bounds a delivery's trail: past it, the oldest steps after the
// first are dropped. One life of a delivery (planned, deferred, released,
// queued, then a claim and an outcome per receive, feedback) takes about
// 4 + 2 × maxReceiveCount + 2 steps; a redrive starts a new trail.
const MaxTrail = 24

// StepOf is the step a change records at `at`.
func StepOf(c Change, at time.Time) Step {
	s := Step{At: at, Status: c.To, Reason: c.Reason, Error: c.LastError, Note: c.Note}
	if c.To == StatusDeferred {
		s.DueAt = c.DueAt
	}
	return s
}

// TrailAtCreation is the trail of d as it is created in its state (the
// relay's skipped, dropped or deferred items, a cancel's tombstone): its
// own trail when it has one, else its state as the first step.
func TrailAtCreation(d *Delivery) []Step {
	if len(d.Trail) > 0 || d.Status == "" {
		return d.Trail
	}
	s := Step{At: d.UpdatedAt, Status: d.Status, Reason: d.Reason}
	if d.Status == StatusDeferred {
		s.DueAt = d.DueAt
	}
	return []Step{s}
}

// WithStep is trail after c at `at`, as the store records it: the step
// appended, or a new trail for a redrive; past MaxTrail the oldest steps
// after the first are dropped.
func WithStep(trail []Step, c Change, at time.Time) []Step {
	if c.Redrive() {
		return []Step{StepOf(c, at)}
	}
	out := append(slices.Clone(trail), StepOf(c, at))
	if extra := len(out) - MaxTrail; extra > 0 {
		out = append(out[:1], out[1+extra:]...)
	}
	return out
}

// Redrive reports whether c reopens a delivery a DLQ redrive puts back
// (failed or retrying → queued): its trail starts again.
func (c Change) Redrive() bool {
	if c.To != StatusQueued {
		return false
	}
	for _, f := range c.From {
		if f == StatusFailed || f == StatusRetrying {
			return true
		}
	}
	return false
}

// DeliveryKey names one delivery: a notification on a channel.
type DeliveryKey struct {
	NotificationID string
	Channel        Channel
}

// ErrInvalidTransition is returned when a caller asks for a transition the
// state machine forbids.
type ErrInvalidTransition struct{ From, To Status }

func (e ErrInvalidTransition) Error() string {
	return fmt.Sprintf("delivery cannot go from %s to %s", e.From, e.To)
}

// Change describes one conditional state transition of a delivery.
type Change struct {
	To Status
	// From restricts the allowed current states; empty means every state the
	// state machine allows to reach To.
	From   []Status
	Reason Reason
	// DueAt is required when To is deferred; it is indexed for the scheduler.
	DueAt time.Time
	// LeaseUntil is set when To is sending (the claim).
	LeaseUntil time.Time
	// LeaseHolder is recorded with LeaseUntil (Delivery.LeaseHolder).
	LeaseHolder string
	// ReclaimExpiredLease also allows the transition from sending when the
	// current lease ended before this instant (a worker crashed mid-send).
	ReclaimExpiredLease time.Time
	IncrementAttempts   bool
	LastError           string
	ProviderMessageID   string
	// Provider records the provider of this attempt (Delivery.Provider).
	Provider string
	// PinProvider also records Provider as the delivery's PinnedProvider
	// (the attempt's outcome is unknown).
	PinProvider bool
	DigestID    string
	// KeepDue leaves the delivery in the due-time index, so a release that
	// crashes between its steps is found again by the next scheduler run.
	KeepDue bool
	// RefundAttempt takes back the attempt of a claim given up before the
	// provider was called (its send-quota token went stale).
	RefundAttempt bool
	// AddSentTargets adds targets the provider accepted to SentTargets.
	AddSentTargets []string
	// Note is added to the trail's step (e.g. "retry in 4s"); never PII.
	Note string
	// Create lets the change create the delivery when it has no item yet: a
	// channel sent at once, for which the relay writes nothing and the
	// worker's claim (or its recheck's outcome) is the first write. A
	// missing delivery counts as queued (Absent), so the change must be
	// allowed from queued; the new item takes Create's notification fields
	// (UserID, Priority, Caller, Type, CampaignID, ResourceID,
	// NotificationCreatedAt) and nothing
	// else of it. Without Create a missing delivery is domain.ErrConflict.
	Create *Delivery
}

// Absent is the state a delivery without an item is in: a channel the
// notification plans, sent at once, that no worker has claimed yet.
const Absent = StatusQueued

// Creates reports whether c may create a missing delivery.
func (c Change) Creates() bool { return c.Create != nil && CanTransition(Absent, c.To) }

// DeliveryOf is the delivery of n on channel c as it is created: the
// recipient, priority and the notification fields delivery events carry
// (Change.Create, and the relay's items).
func DeliveryOf(n *Notification, c Channel) *Delivery {
	return &Delivery{NotificationID: n.ID, Channel: c, UserID: n.Recipient.UserID, Priority: n.Priority,
		Caller: n.Caller, Type: n.Type, CampaignID: n.CampaignID, ResourceID: n.ResourceID, NotificationCreatedAt: n.CreatedAt}
}
