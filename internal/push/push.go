// Package push is the provider of the push worker: Web Push to every browser
// subscription of the user (RFC 8291 encryption, RFC 8292 VAPID) and SNS
// mobile push to every native device (APNs, FCM), removing subscriptions and
// devices their push service reports gone.
package push

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
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
	sender        Sender
	subs          Subscriptions
	mobile        Mobile
	devices       Devices
	now           func() time.Time
	targetTimeout time.Duration
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

// MaxParallelTargets bounds the targets of one delivery pushed at once. A
// user has at most domain.MaxPushSubscriptionsPerUser browsers and
// domain.MaxDevicesPerUser devices: 20 targets, two rounds.
const MaxParallelTargets = 10

// DefaultTargetTimeout bounds one target's push (the request to its push
// service or one SNS Publish, with the SDK's retries): a slow push service
// costs that target a retry, not its neighbours their push, and two rounds
// of targets stay inside the worker's send window (25 s of a 30 s
// invocation). The worker's send deadline may end a push sooner.
const DefaultTargetTimeout = 10 * time.Second

// WithTargetTimeout replaces DefaultTargetTimeout.
func (p *Provider) WithTargetTimeout(d time.Duration) *Provider {
	p.targetTimeout = d
	return p
}

// result is one target's outcome.
type result struct {
	target    string
	messageID string // reached: the provider's id
	gone      bool   // removed (or to be: cleanup is a transient)
	transient *channel.ProviderError
	permanent *channel.ProviderError
}

// outcome gathers the targets' results of one send.
type outcome struct {
	firstID   string
	accepted  []string
	transient *channel.ProviderError
	permanent *channel.ProviderError
	gone      int
}

func (o *outcome) add(r result) {
	// An alerting transient (the account's credentials refused) is kept
	// over a plain one, so that the worker alerts the operator.
	if r.messageID != "" {
		o.accepted = append(o.accepted, r.target)
		if o.firstID == "" {
			o.firstID = r.messageID
		}
	}
	if r.gone {
		o.gone++
	}
	if e := r.transient; e != nil && (o.transient == nil || e.Alert && !o.transient.Alert ||
		e.Alert == o.transient.Alert && e.RetryAfter > o.transient.RetryAfter) {
		o.transient = e
	}
	if r.permanent != nil {
		o.permanent = r.permanent
	}
}

// Send implements channel.Provider: it pushes to every web subscription and
// every device of the user, except the targets an earlier attempt of this
// delivery reached (m.SentTargets); the targets reached now are reported in
// m.Accepted. Targets are pushed in parallel (MaxParallelTargets at once,
// each within the target timeout and ctx), so a slow push service delays
// only its own target. Gone targets (a 410 subscription, a disabled
// endpoint) are removed and the others still sent. The delivery succeeds
// when any target has reached its provider, on this attempt or an earlier
// one, and no target failed transiently; a transient failure is retried
// (only the targets not yet reached), and the worker records sent when
// retries run out but some target was reached.
func (p *Provider) Send(ctx context.Context, m *channel.Message) (string, error) {
	done := make(map[string]bool, len(m.SentTargets))
	for _, t := range m.SentTargets {
		done[t] = true
	}
	var sends []func(context.Context) result
	web, err := p.webSends(m, done)
	if err != nil {
		return "", err
	}
	sends = append(sends, web...)
	sends = append(sends, p.mobileSends(m, done)...)

	var o outcome
	for _, r := range p.run(ctx, sends) { // in target order: accepted, firstID and errors are deterministic
		o.add(r)
	}
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

// run calls every send, MaxParallelTargets at a time, each under the target
// timeout, and returns their results in the order of sends.
func (p *Provider) run(ctx context.Context, sends []func(context.Context) result) []result {
	timeout := p.targetTimeout
	if timeout <= 0 {
		timeout = DefaultTargetTimeout
	}
	results := make([]result, len(sends))
	sem := make(chan struct{}, MaxParallelTargets)
	var wg sync.WaitGroup
	for i, send := range sends {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			tctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			results[i] = send(tctx)
		}()
	}
	wg.Wait()
	return results
}

// webSends are the pushes to the web subscriptions not yet reached. A
// non-nil error (the content cannot be encoded) ends the send before any
// push. A gone subscription that cannot be removed is a transient outcome
// of its target: the other targets are still sent and reported.
func (p *Provider) webSends(m *channel.Message, done map[string]bool) ([]func(context.Context) result, error) {
	n := m.Notification
	var msg webpush.Message
	var sends []func(context.Context) result
	for _, s := range m.Profile.PushSubscriptions {
		if done[s.ID] {
			continue
		}
		if len(sends) == 0 {
			// Never dropped for its size: shortened to fit, the link given up first.
			body, _, err := catalog.FitPush(catalog.PushPayload{ID: n.ID, Title: m.Content.Title, Body: m.Content.Body, URL: m.Content.URL}, webpush.MaxPlaintextSize)
			if err != nil {
				return nil, &channel.ProviderError{Reason: domain.ReasonNotApplicable, Code: "encode", Err: err}
			}
			msg = webpush.Message{Payload: body, TTL: p.ttl(n), Urgency: urgency(n.Priority), Topic: webpush.TopicFor(n.ID)}
		}
		sends = append(sends, func(ctx context.Context) result {
			return p.sendWeb(ctx, n.Recipient.UserID, s, msg)
		})
	}
	return sends, nil
}

// sendWeb pushes msg to one subscription.
func (p *Provider) sendWeb(ctx context.Context, userID string, s domain.PushSubscription, msg webpush.Message) result {
	r := result{target: s.ID}
	res, err := p.sender.Send(ctx, webpush.Subscription{Endpoint: s.Endpoint, P256dh: s.P256dh, Auth: s.Auth}, msg)
	var pe *webpush.ProviderError
	switch {
	case err == nil:
		r.messageID = res.MessageID
		if r.messageID == "" {
			r.messageID = fmt.Sprintf("push-%d", res.StatusCode)
		}
	case errors.Is(err, webpush.ErrSubscriptionGone), errors.Is(err, webpush.ErrInvalidSubscription):
		// Gone, or never sendable: an endpoint off the allow-list (or
		// resolving to a non-public address) is never contacted again.
		r.gone = true
		if derr := p.subs.DeletePushSubscription(ctx, userID, s.ID); derr != nil && !errors.Is(derr, domain.ErrNotFound) {
			// Retried (the retry finds it gone again).
			r.transient = &channel.ProviderError{Transient: true, Code: "delete_subscription", Err: derr}
		}
	case errors.As(err, &pe) && pe.Transient && pe.StatusCode == 0 && errors.Is(err, context.DeadlineExceeded):
		r.transient = &channel.ProviderError{Transient: true, Code: "timeout", Err: pe}
	case errors.As(err, &pe) && pe.Transient:
		r.transient = &channel.ProviderError{Transient: true, RetryAfter: pe.RetryAfter, Code: fmt.Sprintf("http_%d", pe.StatusCode), Err: pe}
	case errors.As(err, &pe) && (pe.StatusCode == http.StatusUnauthorized || pe.StatusCode == http.StatusForbidden):
		// The push service refuses the stack's VAPID credentials (RFC 8292:
		// a key pair changed or lost): every subscription fails alike, by
		// no recipient's fault. The delivery waits for the keys to be
		// restored (retried, then parked) and the operator is alerted.
		r.transient = &channel.ProviderError{Transient: true, Alert: true, Code: fmt.Sprintf("http_%d", pe.StatusCode), Err: pe}
	case errors.As(err, &pe):
		r.permanent = &channel.ProviderError{Reason: domain.ReasonRejected, Code: fmt.Sprintf("http_%d", pe.StatusCode), Err: pe}
	default:
		r.permanent = &channel.ProviderError{Reason: domain.ReasonRejected, Code: "push_rejected", Err: err}
	}
	return r
}

// mobileSends are the publishes to the devices not yet reached.
func (p *Provider) mobileSends(m *channel.Message, done map[string]bool) []func(context.Context) result {
	n := m.Notification
	var sends []func(context.Context) result
	for _, d := range m.Profile.Devices {
		if done[d.ID] {
			continue
		}
		sends = append(sends, func(ctx context.Context) result { return p.sendMobile(ctx, n, m.Content, d) })
	}
	return sends
}

// sendMobile publishes to one device. A gone device that cannot be removed
// is a transient outcome, as for a web subscription.
func (p *Provider) sendMobile(ctx context.Context, n *domain.Notification, c catalog.Content, d domain.Device) result {
	r := result{target: d.ID}
	if p.mobile == nil {
		r.permanent = &channel.ProviderError{Reason: domain.ReasonRejected, Code: "mobile_not_configured", Err: ErrNoMobile}
		return r
	}
	msg, err := BuildMobile(d.Platform, MobileContent{
		Payload: catalog.PushPayload{ID: n.ID, Title: c.Title, Body: c.Body, URL: c.URL},
		Type:    n.Type, Priority: n.Priority, TTL: p.ttl(n),
	})
	if err != nil {
		r.permanent = &channel.ProviderError{Reason: domain.ReasonNotApplicable, Code: "encode", Err: err}
		return r
	}
	id, err := p.mobile.Publish(ctx, d.EndpointARN, msg)
	var me *MobileError
	switch {
	case err == nil:
		r.messageID = id
	case errors.As(err, &me) && me.Kind == MobileGone:
		// The platform refused the token (SNS disabled the endpoint):
		// the endpoint and the device go, as a 410 removes a web
		// subscription. The endpoint first: a failure leaves the device,
		// and the retry finds the endpoint disabled (or gone) again.
		r.gone = true
		if derr := p.mobile.DeleteEndpoint(ctx, d.EndpointARN); derr != nil {
			r.transient = &channel.ProviderError{Transient: true, Code: "delete_endpoint", Err: derr}
		} else if derr := p.devices.DeleteDevice(ctx, n.Recipient.UserID, d.ID); derr != nil && !errors.Is(derr, domain.ErrNotFound) {
			r.transient = &channel.ProviderError{Transient: true, Code: "delete_device", Err: derr}
		}
	case errors.As(err, &me) && me.Kind == MobileRejected:
		r.permanent = &channel.ProviderError{Reason: domain.ReasonRejected, Code: me.Code, Alert: me.Alert, Err: me}
	case errors.As(err, &me):
		r.transient = &channel.ProviderError{Transient: true, Code: me.Code, Alert: me.Alert, Err: me}
	default:
		r.transient = &channel.ProviderError{Transient: true, Code: "transport", Err: err}
	}
	return r
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
