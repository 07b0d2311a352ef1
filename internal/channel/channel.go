// Package channel is the contract between the delivery loop (internal/worker)
// and the channel providers (internal/email, internal/sms, internal/push): the
// rendered message a provider sends and the classified error it returns. It
// sits below both, so a provider never imports the loop that drives it.
package channel

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
)

// Message is one rendered delivery handed to a provider.
type Message struct {
	Notification *domain.Notification
	Type         *catalog.Type
	Profile      *domain.RecipientProfile
	Content      catalog.Content
	Contact      string // email address or phone number; empty for push
	// SentTargets are, for a provider with several targets (push: web
	// subscriptions and devices, by id), those accepted on an earlier
	// attempt of this delivery: they are not sent to again.
	SentTargets []string
	// Accepted is filled by such a provider: the targets this call reached
	// (the worker records them on the delivery).
	Accepted []string
	// TargetError is the code of a target that failed permanently while the
	// send as a whole succeeded (recorded as the delivery's lastError);
	// TargetAlert marks it as one an operator must act on (OperatorAlert).
	TargetError string
	TargetAlert bool
}

// Provider sends on one channel.
type Provider interface {
	Channel() domain.Channel
	// Send returns the provider's message id, or an error. Errors that are not
	// *ProviderError are treated as transient.
	Send(ctx context.Context, m *Message) (string, error)
}

// ContentBudget is implemented by providers whose messages have a size limit
// (Web Push, one SMS segment): the worker renders a digest with fewer items,
// counting the rest, until Fits holds.
type ContentBudget interface {
	Fits(catalog.Content) bool
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
	// Alert marks errors an operator must act on (e.g. the SES account is
	// paused or suspended): besides the outcome, the worker logs
	// OperatorAlert at ERROR and counts ProviderRefused. A condition of the
	// account rather than of the recipient is Transient and Alert: the
	// delivery is retried, then parked in the DLQ for a redrive, never
	// failed: rejected for something no recipient did.
	Alert bool
	// Unknown marks a transient error whose outcome is unknown: the request
	// may have reached the provider and no answer came back (a timeout or a
	// connection lost after the request was written). Such an attempt is
	// never retried on another provider (internal/failover).
	Unknown bool
	Err     error
}

// throttleCodes are the provider codes that mean "you are sending too fast":
// SES v2, SNS and a Web Push service's 429.
var throttleCodes = map[string]bool{
	"TooManyRequestsException": true, "TooManyRequests": true, "Throttling": true, "ThrottlingException": true,
	"Throttled": true, "http_429": true,
}

// Throttle reports whether a transient provider error is the provider
// throttling the account (counted apart from other transient failures).
func (e *ProviderError) Throttle() bool { return e.Transient && throttleCodes[e.Code] }

// OperatorAlert is the stable log message of errors with Alert set; alarms
// match on it.
const OperatorAlert = "operator alert: provider refuses to send"

func (e *ProviderError) Error() string {
	kind := "permanent"
	if e.Transient {
		kind = "transient"
	}
	return fmt.Sprintf("%s provider error %s: %v", kind, e.Code, e.Err)
}

func (e *ProviderError) Unwrap() error { return e.Err }
