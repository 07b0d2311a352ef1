// Package failover holds the rules of provider failover inside a channel
// (issue 38): a circuit breaker per provider, shared by every worker through
// the table (dynamo.Breakers), and the choice of the provider an attempt goes
// to. It is pure: the worker asks it, the store keeps its state.
//
// The rules:
//   - A transient, known error of the primary (the provider answered that it
//     did not send: a throttle, a 5xx, the account refused) counts a failure
//     on its breaker. HIGH moves that same attempt to the secondary at once;
//     NORMAL and LOW are retried as before (on the primary) until the
//     breaker is open, so a flapping primary does not double the
//     secondary's bill.
//   - A permanent, recipient-specific error never fails over: a bounced
//     address is bounced everywhere.
//   - A send whose outcome is unknown (the request left and no answer came
//     back) is never retried on the other provider: the delivery is pinned
//     to the provider that may have sent it, and every later attempt goes
//     there only, as today's retry does. The duplicate window stays what it
//     was (one provider's retry), and a second provider never adds a copy.
//   - Open: everything goes to the secondary until OpenUntil; then one
//     worker at a time takes the probe (a conditional write) and sends one
//     message to the primary: success closes the breaker, failure opens it
//     again for OpenFor.
//   - An operator may force a breaker open or closed (herald providers
//     force), which wins over the counts until set back to auto.
package failover

import (
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

// Provider names, as recorded on deliveries (domain.Delivery.Provider),
// events, metrics and breakers.
const (
	SNS      = "sns"
	SMSVoice = "sms-voice"
)

// SES is the provider name of SES v2 in region.
func SES(region string) string { return "ses:" + region }

// Force is an operator's override of a breaker.
type Force string

// Overrides of herald providers force.
const (
	ForceAuto   Force = ""
	ForceOpen   Force = "open"
	ForceClosed Force = "closed"
)

// ParseForce reads open, closed or auto.
func ParseForce(s string) (Force, error) {
	switch s {
	case "open":
		return ForceOpen, nil
	case "closed":
		return ForceClosed, nil
	case "auto":
		return ForceAuto, nil
	}
	return "", fmt.Errorf("force %q: want open, closed or auto", s)
}

// Breaker is the shared state of one provider's circuit breaker, as the
// table keeps it. The zero Breaker is closed with no failures.
type Breaker struct {
	Provider string
	// Failures counted in the window starting at WindowStart.
	Failures    int
	WindowStart time.Time
	// OpenUntil is set while open (and after, until a probe closes it): the
	// breaker is half-open from then on.
	OpenUntil time.Time
	// OpenedAt is when it last opened (shown by herald providers).
	OpenedAt time.Time
	// ProbeUntil is the lease of the probe in flight while half-open.
	ProbeUntil time.Time
	Forced     Force
}

// State is a breaker's state at an instant.
type State string

// Breaker states.
const (
	Closed   State = "closed"
	Open     State = "open"
	HalfOpen State = "half-open"
)

// State is b's state at now, the operator's override first.
func (b Breaker) State(now time.Time) State {
	switch {
	case b.Forced == ForceOpen:
		return Open
	case b.Forced == ForceClosed, b.OpenUntil.IsZero():
		return Closed
	case now.Before(b.OpenUntil):
		return Open
	}
	return HalfOpen
}

// Rules tune the breakers.
type Rules struct {
	// Threshold failures within Window open a breaker.
	Threshold int
	Window    time.Duration
	// OpenFor is how long a breaker stays open before a probe.
	OpenFor time.Duration
	// ProbeLease bounds one probe: a probe whose worker died is taken again
	// after it.
	ProbeLease time.Duration
	// Refresh is how long a worker instance trusts its cached copy of a
	// breaker that is not closed, and how often it re-reads one that is
	// closed while it sends (docs/decisions.md, "Provider failover").
	Refresh time.Duration
}

// DefaultRules: 5 failures in 10 s open a breaker for 30 s; a probe holds
// 30 s (a send's time at most); cached copies are re-read every 5 s.
var DefaultRules = Rules{Threshold: 5, Window: 10 * time.Second, OpenFor: 30 * time.Second, ProbeLease: 30 * time.Second, Refresh: 5 * time.Second}

// Opens reports whether b, after a failure counted in it, has reached the
// threshold and is not open yet: the write that opens it is due.
func (r Rules) Opens(b Breaker, now time.Time) bool {
	return b.Failures >= r.Threshold && b.State(now) == Closed && b.Forced == ForceAuto
}

// Target is where an attempt goes.
type Target int

// Targets of Route.
const (
	Primary Target = iota
	Secondary
	// Probe is the primary, tried as the half-open breaker's probe when the
	// worker wins it; Secondary otherwise.
	Probe
)

// Route chooses the provider of an attempt of priority p from the
// primary's breaker state, whether a secondary is configured, the
// secondary's own breaker state, and the delivery's pin (the provider
// name of an attempt with an unknown outcome, or "").
func Route(primary, secondary string, hasSecondary bool, primaryState, secondaryState State, pinned string) Target {
	switch {
	case pinned != "" && pinned == secondary && hasSecondary:
		return Secondary
	case pinned != "" || !hasSecondary:
		return Primary
	case primaryState == Closed:
		return Primary
	case secondaryState == Open:
		// Both are down: the primary is still the default.
		return Primary
	case primaryState == HalfOpen:
		return Probe
	}
	return Secondary
}

// FailOverNow reports whether an attempt of priority p that failed on the
// primary (the error transient and its outcome known, the delivery not
// pinned) moves to the secondary in the same attempt: HIGH at once, the
// rest only once the breaker is open.
func FailOverNow(p domain.Priority, primaryState State) bool {
	return p == domain.PriorityHigh || primaryState != Closed
}
