// Package push is the provider of the push worker: Web Push to every browser
// subscription of the user (RFC 8291 encryption, RFC 8292 VAPID) and SNS
// mobile push to every native device (APNs, FCM), removing subscriptions and
// devices their push service reports gone.
package push

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/webpush"
)

// Sender delivers one message to one subscription.
type Sender interface {
	Send(ctx context.Context, sub webpush.Subscription, msg webpush.Message) (webpush.Result, error)
}

var _ Sender = (*webpush.Sender)(nil)

// Subscriptions removes subscriptions that no longer exist.
type Subscriptions interface {
	DeletePushSubscription(ctx context.Context, userID, subscriptionID string) error
}

// Provider sends push notifications: Web Push to browsers and, with
// WithMobile, SNS mobile push to native devices.
type Provider struct {
	sender  Sender
	subs    Subscriptions
	mobile  Mobile
	devices Devices
	now     func() time.Time
}

var (
	_ channel.Provider      = (*Provider)(nil)
	_ channel.ContentBudget = (*Provider)(nil)
)

// New returns a Web Push provider.
func New(sender Sender, subs Subscriptions, now func() time.Time) *Provider {
	return &Provider{sender: sender, subs: subs, now: now}
}

// WithMobile adds native devices: published through m, removed from devices
// (and their endpoint deleted) when gone.
func (p *Provider) WithMobile(m Mobile, devices Devices) *Provider {
	p.mobile, p.devices = m, devices
	return p
}

// Channel implements channel.Provider.
func (p *Provider) Channel() domain.Channel { return domain.ChannelPush }

// DefaultTTL is how long a push service keeps an undelivered message when the
// notification has no expiresAt: urgent messages are useless when stale.
var DefaultTTL = map[domain.Priority]time.Duration{
	domain.PriorityHigh:   time.Hour,
	domain.PriorityNormal: 24 * time.Hour,
	domain.PriorityLow:    72 * time.Hour,
}

// fitIDLength is the longest notification id a payload is budgeted for
// (Herald's ids are 27 characters; callers' resource-derived ids no longer).
const fitIDLength = 32

// Fits reports whether content makes a push within webpush.MaxPlaintextSize
// (the tightest of the push limits); the worker renders digests to this
// budget (fewer items before shortening).
func (p *Provider) Fits(c catalog.Content) bool {
	pl := catalog.PushPayload{ID: strings.Repeat("x", fitIDLength), Title: c.Title, Body: c.Body, URL: c.URL}
	return len(pl.Encode()) <= webpush.MaxPlaintextSize
}

// outcome gathers the targets' results of one send.
type outcome struct {
	firstID   string
	accepted  []string
	transient *channel.ProviderError
	permanent *channel.ProviderError
	gone      int
}

func (o *outcome) sent(target, id string) {
	o.accepted = append(o.accepted, target)
	if o.firstID == "" {
		o.firstID = id
	}
}

func (o *outcome) retry(e *channel.ProviderError) {
	if o.transient == nil || e.RetryAfter > o.transient.RetryAfter {
		o.transient = e
	}
}

// Send implements channel.Provider: it pushes to every web subscription and
// every device of the user, except the targets an earlier attempt of this
// delivery reached (m.SentTargets); the targets reached now are reported in
// m.Accepted. Gone targets (a 410 subscription, a disabled endpoint) are
// removed and the others still sent. The delivery succeeds when any target
// has reached its provider, on this attempt or an earlier one, and no target
// failed transiently; a transient failure is retried (only the targets not
// yet reached), and the worker records sent when retries run out but some
// target was reached.
func (p *Provider) Send(ctx context.Context, m *channel.Message) (string, error) {
	done := make(map[string]bool, len(m.SentTargets))
	for _, t := range m.SentTargets {
		done[t] = true
	}
	var o outcome
	if err := p.sendWeb(ctx, m, done, &o); err != nil {
		return "", err
	}
	p.sendMobile(ctx, m, done, &o)
	m.Accepted = append(m.Accepted, o.accepted...)
	if o.permanent != nil {
		m.TargetError, m.TargetAlert = o.permanent.Code, o.permanent.Alert
	}
	reached := len(o.accepted) > 0 || len(done) > 0
	switch {
	case o.transient != nil:
		return "", o.transient
	case reached:
		return o.firstID, nil
	case o.permanent != nil:
		return "", o.permanent
	case o.gone > 0:
		return "", &channel.ProviderError{Drop: true, Reason: domain.ReasonNoContact, Code: "subscriptions_gone", Err: webpush.ErrSubscriptionGone}
	}
	return "", &channel.ProviderError{Drop: true, Reason: domain.ReasonNoContact, Code: "no_subscription", Err: errors.New("no push subscription or device")}
}

// sendWeb pushes to the web subscriptions not yet reached. A non-nil error
// (the content cannot be encoded) ends the send before any push. A gone
// subscription that cannot be removed is a transient outcome of the send:
// the other targets are still sent and reported.
func (p *Provider) sendWeb(ctx context.Context, m *channel.Message, done map[string]bool, o *outcome) error {
	n := m.Notification
	var msg webpush.Message
	encoded := false
	for _, s := range m.Profile.PushSubscriptions {
		if done[s.ID] {
			continue
		}
		if !encoded {
			// Never dropped for its size: shortened to fit, the link given up first.
			body, _, err := catalog.FitPush(catalog.PushPayload{ID: n.ID, Title: m.Content.Title, Body: m.Content.Body, URL: m.Content.URL}, webpush.MaxPlaintextSize)
			if err != nil {
				return &channel.ProviderError{Reason: domain.ReasonNotApplicable, Code: "encode", Err: err}
			}
			msg = webpush.Message{Payload: body, TTL: p.ttl(n), Urgency: urgency(n.Priority), Topic: webpush.TopicFor(n.ID)}
			encoded = true
		}
		res, err := p.sender.Send(ctx, webpush.Subscription{Endpoint: s.Endpoint, P256dh: s.P256dh, Auth: s.Auth}, msg)
		var pe *webpush.ProviderError
		switch {
		case err == nil:
			id := res.MessageID
			if id == "" {
				id = fmt.Sprintf("push-%d", res.StatusCode)
			}
			o.sent(s.ID, id)
		case errors.Is(err, webpush.ErrSubscriptionGone), errors.Is(err, webpush.ErrInvalidSubscription):
			// Gone, or never sendable: an endpoint off the allow-list (or
			// resolving to a non-public address) is never contacted again.
			o.gone++
			if derr := p.subs.DeletePushSubscription(ctx, n.Recipient.UserID, s.ID); derr != nil && !errors.Is(derr, domain.ErrNotFound) {
				// Retried (the retry finds it gone again), the other
				// targets still sent and reported.
				o.retry(&channel.ProviderError{Transient: true, Code: "delete_subscription", Err: derr})
			}
		case errors.As(err, &pe) && pe.Transient:
			o.retry(&channel.ProviderError{Transient: true, RetryAfter: pe.RetryAfter, Code: fmt.Sprintf("http_%d", pe.StatusCode), Err: pe})
		case errors.As(err, &pe):
			o.permanent = &channel.ProviderError{Reason: domain.ReasonRejected, Code: fmt.Sprintf("http_%d", pe.StatusCode), Err: pe}
		default:
			o.permanent = &channel.ProviderError{Reason: domain.ReasonRejected, Code: "push_rejected", Err: err}
		}
	}
	return nil
}

// sendMobile publishes to the devices not yet reached. A gone device that
// cannot be removed is a transient outcome, as for a web subscription.
func (p *Provider) sendMobile(ctx context.Context, m *channel.Message, done map[string]bool, o *outcome) {
	n := m.Notification
	for _, d := range m.Profile.Devices {
		if done[d.ID] {
			continue
		}
		if p.mobile == nil {
			o.permanent = &channel.ProviderError{Reason: domain.ReasonRejected, Code: "mobile_not_configured", Err: ErrNoMobile}
			continue
		}
		msg, err := BuildMobile(d.Platform, MobileContent{
			Payload: catalog.PushPayload{ID: n.ID, Title: m.Content.Title, Body: m.Content.Body, URL: m.Content.URL},
			Type:    n.Type, Priority: n.Priority, TTL: p.ttl(n),
		})
		if err != nil {
			o.permanent = &channel.ProviderError{Reason: domain.ReasonNotApplicable, Code: "encode", Err: err}
			continue
		}
		id, err := p.mobile.Publish(ctx, d.EndpointARN, msg)
		var me *MobileError
		switch {
		case err == nil:
			o.sent(d.ID, id)
		case errors.As(err, &me) && me.Kind == MobileGone:
			// The platform refused the token (SNS disabled the endpoint):
			// the endpoint and the device go, as a 410 removes a web
			// subscription. The endpoint first: a failure leaves the device,
			// and the retry finds the endpoint disabled (or gone) again.
			o.gone++
			if derr := p.mobile.DeleteEndpoint(ctx, d.EndpointARN); derr != nil {
				o.retry(&channel.ProviderError{Transient: true, Code: "delete_endpoint", Err: derr})
			} else if derr := p.devices.DeleteDevice(ctx, n.Recipient.UserID, d.ID); derr != nil && !errors.Is(derr, domain.ErrNotFound) {
				o.retry(&channel.ProviderError{Transient: true, Code: "delete_device", Err: derr})
			}
		case errors.As(err, &me) && me.Kind == MobileRejected:
			o.permanent = &channel.ProviderError{Reason: domain.ReasonRejected, Code: me.Code, Alert: me.Alert, Err: me}
		case errors.As(err, &me):
			o.retry(&channel.ProviderError{Transient: true, Code: me.Code, Err: me})
		default:
			o.retry(&channel.ProviderError{Transient: true, Code: "transport", Err: err})
		}
	}
}

func (p *Provider) ttl(n *domain.Notification) time.Duration {
	if !n.ExpiresAt.IsZero() {
		return max(n.ExpiresAt.Sub(p.now()), time.Second)
	}
	return DefaultTTL[n.Priority]
}

func urgency(pr domain.Priority) webpush.Urgency {
	switch pr {
	case domain.PriorityHigh:
		return webpush.UrgencyHigh
	case domain.PriorityLow:
		return webpush.UrgencyLow
	}
	return webpush.UrgencyNormal
}
