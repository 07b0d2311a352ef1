// Package policy decides, for a new notification, what happens on each
// channel: queued now, deferred until a time, skipped or dropped with a reason.
// It is pure: the relay gathers the inputs, policy decides, the relay records.
//
// The order of the rules: cancelled or expired → dropped; preference off (a
// mandatory type ignores the user's override) → skipped: preference; no
// contact → skipped: no_contact; then the send time: sendAt in the future
// defers (scheduled), the type's escalation delay (after) defers from
// acceptance (delayed), and a non-high delivery whose send time falls in the
// user's quiet hours defers to the window's end (quiet_hours); a send time at
// or after expiresAt drops it (expired). What remains may be rate limited
// (Limited) or collapse into a digest (DigestUntil): those two need the table,
// so the relay resolves them.
package policy

import (
	"slices"
	"time"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
)

// Input is everything a decision depends on.
type Input struct {
	Notification *domain.Notification
	Type         *catalog.Type
	Profile      *domain.RecipientProfile // never nil; User may be nil
	Now          time.Time
}

// Decision is the planned first state of one delivery.
type Decision struct {
	Channel domain.Channel
	Status  domain.Status // queued, deferred, skipped or dropped
	Reason  domain.Reason
	DueAt   time.Time // when deferred
	// Limited: the delivery will produce a message and the per-user channel
	// rate limit applies to it (neither high priority nor a mandatory type).
	// The relay counts it and, over the limit, records skipped: rate_limited.
	Limited bool
	// DigestUntil, when set, makes the delivery a digest candidate (a batch
	// key on a digestible type, not high priority, not scheduled): the relay
	// opens a digest that closes at this time, or joins the open one. When no
	// digest takes it, the rest of the decision stands.
	DigestUntil time.Time
}

// Channels resolves the channels a notification targets: the requested ones
// that the type supports, or the type's defaults when none were requested.
func Channels(n *domain.Notification, t *catalog.Type) []domain.Channel {
	if len(n.Channels) == 0 {
		return slices.Clone(t.Channels)
	}
	var out []domain.Channel
	for _, c := range n.Channels {
		if t.HasChannel(c) && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// Enabled applies preferences: a mandatory type always uses its default; else
// the user's override for (type, channel) wins over the type default (on).
func Enabled(t *catalog.Type, prefs domain.Preferences, c domain.Channel) bool {
	if t.Mandatory {
		return true
	}
	if on, ok := prefs.Enabled(t.Name, c); ok {
		return on
	}
	return true
}

// Contact returns the address for a channel: the intake override, else the
// profile. Push has no single address: it needs at least one subscription.
func Contact(n *domain.Notification, p *domain.RecipientProfile, c domain.Channel) (string, bool) {
	switch c {
	case domain.ChannelEmail:
		if n.Recipient.Email != "" {
			return n.Recipient.Email, true
		}
		if p.User != nil && p.User.Email != "" {
			return p.User.Email, true
		}
	case domain.ChannelSMS:
		if n.Recipient.Phone != "" {
			return n.Recipient.Phone, true
		}
		if p.User != nil && p.User.Phone != "" {
			return p.User.Phone, true
		}
	case domain.ChannelPush:
		// Browsers and native devices alike.
		return "", len(p.PushSubscriptions) > 0 || len(p.Devices) > 0
	}
	return "", false
}

// Decide plans every channel of a notification.
func Decide(in Input) []Decision {
	n := in.Notification
	channels := Channels(n, in.Type)
	out := make([]Decision, 0, len(channels))
	for _, c := range channels {
		out = append(out, decideChannel(in, c))
	}
	return out
}

func decideChannel(in Input, c domain.Channel) Decision {
	n := in.Notification
	d := Decision{Channel: c, Status: domain.StatusQueued}
	switch {
	case n.Status == domain.NotificationCancelled:
		d.Status, d.Reason = domain.StatusDropped, domain.ReasonCancelled
		return d
	case n.Expired(in.Now):
		d.Status, d.Reason = domain.StatusDropped, domain.ReasonExpired
		return d
	case n.Muted && !in.Type.Mandatory:
		// The recipient muted the topic this was sent to (a mandatory type
		// still goes: the lot does not mark it muted, and this holds it).
		d.Status, d.Reason = domain.StatusSkipped, domain.ReasonMuted
		return d
	case !Enabled(in.Type, in.Profile.Preferences, c):
		d.Status, d.Reason = domain.StatusSkipped, domain.ReasonPreference
		return d
	}
	if _, ok := Contact(n, in.Profile, c); !ok {
		d.Status, d.Reason = domain.StatusSkipped, domain.ReasonNoContact
		return d
	}
	user := in.Profile.User
	high := n.Priority == domain.PriorityHigh
	at, reason := in.Now, domain.ReasonNone
	if n.SendAt.After(in.Now) {
		at, reason = n.SendAt, domain.ReasonScheduled
	}
	if due, delayed := EscalationDue(n, in.Type, c, in.Now); delayed && due.After(at) {
		at, reason = due, domain.ReasonDelayed
	}
	if !high {
		if end, quiet := QuietUntil(user, at); quiet {
			at, reason = end, domain.ReasonQuietHours
		}
	}
	if !n.ExpiresAt.IsZero() && !at.Before(n.ExpiresAt) {
		// It could only be sent after it stops mattering.
		d.Status, d.Reason = domain.StatusDropped, domain.ReasonExpired
		return d
	}
	if at.After(in.Now) {
		d.Status, d.Reason, d.DueAt = domain.StatusDeferred, reason, at
	}
	d.Limited = !Exempt(in.Type, n.Priority)
	if n.BatchKey != "" && in.Type.Digestible && !high && reason != domain.ReasonScheduled && reason != domain.ReasonDelayed {
		opened := n.CreatedAt
		if opened.IsZero() {
			opened = in.Now
		}
		if due := DigestDue(user, n.Priority, opened); n.ExpiresAt.IsZero() || due.Before(n.ExpiresAt) {
			d.DigestUntil = due
		}
	}
	return d
}

// EscalationDue is when the type's escalation delay (after) lets channel c
// go: acceptance plus the delay; delayed is false when the channel has none.
func EscalationDue(n *domain.Notification, t *catalog.Type, c domain.Channel, now time.Time) (due time.Time, delayed bool) {
	after := t.EscalationOf(c).After
	if after <= 0 {
		return time.Time{}, false
	}
	accepted := n.CreatedAt
	if accepted.IsZero() {
		accepted = now
	}
	return accepted.Add(after), true
}

// NeedsProfile reports whether deciding n requires the recipient's stored
// profile. It does not when nothing in it can change the outcome: a mandatory
// (preferences ignored), high-priority (no quiet hours, no rate limit, no
// digest) notification whose every channel has a contact given at intake
// (push always needs the stored subscriptions). One-time codes sent to the
// number in the request are the case: the relay then skips a read.
func NeedsProfile(n *domain.Notification, t *catalog.Type) bool {
	if !t.Mandatory || n.Priority != domain.PriorityHigh {
		return true
	}
	for _, c := range Channels(n, t) {
		if _, ok := Contact(n, &domain.RecipientProfile{}, c); !ok {
			return true
		}
	}
	return false
}
