// Package push is the Web Push provider of the push worker: it encrypts the
// notification for every subscription of the user (RFC 8291), signs with VAPID
// (RFC 8292) and removes subscriptions the push service reports gone.
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

// Provider sends Web Push notifications.
type Provider struct {
	sender Sender
	subs   Subscriptions
	now    func() time.Time
}

var (
	_ channel.Provider      = (*Provider)(nil)
	_ channel.ContentBudget = (*Provider)(nil)
)

// New returns a Web Push provider.
func New(sender Sender, subs Subscriptions, now func() time.Time) *Provider {
	return &Provider{sender: sender, subs: subs, now: now}
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

// Fits reports whether content makes a push within webpush.MaxPlaintextSize;
// the worker renders digests to this budget (fewer items before shortening).
func (p *Provider) Fits(c catalog.Content) bool {
	pl := catalog.PushPayload{ID: strings.Repeat("x", fitIDLength), Title: c.Title, Body: c.Body, URL: c.URL}
	return len(pl.Encode()) <= webpush.MaxPlaintextSize
}

// Send implements channel.Provider: it pushes to every subscription. The
// delivery succeeds if any subscription accepted it; gone subscriptions are
// deleted; if none accepted and one failed transiently, the whole send is
// retried (the Topic makes a repeat replace, not duplicate, on devices that
// already have it).
func (p *Provider) Send(ctx context.Context, m *channel.Message) (string, error) {
	n := m.Notification
	// Never dropped for its size: shortened to fit, the link given up first.
	body, _, err := catalog.FitPush(catalog.PushPayload{ID: n.ID, Title: m.Content.Title, Body: m.Content.Body, URL: m.Content.URL}, webpush.MaxPlaintextSize)
	if err != nil {
		return "", &channel.ProviderError{Reason: domain.ReasonNotApplicable, Code: "encode", Err: err}
	}
	msg := webpush.Message{Payload: body, TTL: p.ttl(n), Urgency: urgency(n.Priority), Topic: webpush.TopicFor(n.ID)}
	var firstID string
	var transient *webpush.ProviderError
	var permanent error
	gone := 0
	for _, s := range m.Profile.PushSubscriptions {
		res, err := p.sender.Send(ctx, webpush.Subscription{Endpoint: s.Endpoint, P256dh: s.P256dh, Auth: s.Auth}, msg)
		var pe *webpush.ProviderError
		switch {
		case err == nil:
			if firstID == "" {
				firstID = res.MessageID
				if firstID == "" {
					firstID = fmt.Sprintf("push-%d", res.StatusCode)
				}
			}
		case errors.Is(err, webpush.ErrSubscriptionGone), errors.Is(err, webpush.ErrInvalidSubscription):
			// Gone, or never sendable: an endpoint off the allow-list (or
			// resolving to a non-public address) is never contacted again.
			gone++
			if derr := p.subs.DeletePushSubscription(ctx, n.Recipient.UserID, s.ID); derr != nil && !errors.Is(derr, domain.ErrNotFound) {
				return "", &channel.ProviderError{Transient: true, Code: "delete_subscription", Err: derr}
			}
		case errors.As(err, &pe) && pe.Transient:
			if transient == nil || pe.RetryAfter > transient.RetryAfter {
				transient = pe
			}
		case errors.As(err, &pe):
			permanent = pe
		default:
			permanent = err
		}
	}
	switch {
	case firstID != "":
		return firstID, nil
	case transient != nil:
		return "", &channel.ProviderError{Transient: true, RetryAfter: transient.RetryAfter, Code: fmt.Sprintf("http_%d", transient.StatusCode), Err: transient}
	case permanent != nil:
		code := "push_rejected"
		var pe *webpush.ProviderError
		if errors.As(permanent, &pe) {
			code = fmt.Sprintf("http_%d", pe.StatusCode)
		}
		return "", &channel.ProviderError{Reason: domain.ReasonRejected, Code: code, Err: permanent}
	case gone > 0:
		return "", &channel.ProviderError{Drop: true, Reason: domain.ReasonNoContact, Code: "subscriptions_gone", Err: webpush.ErrSubscriptionGone}
	}
	return "", &channel.ProviderError{Drop: true, Reason: domain.ReasonNoContact, Code: "no_subscription", Err: errors.New("no push subscription")}
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
