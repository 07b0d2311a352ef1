package api

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/webpush"
)

// PushSubscriptionStore is what the push subscription routes need.
type PushSubscriptionStore interface {
	// SavePushSubscription stores sub, replacing one with the same id, and
	// reports whether it is new.
	SavePushSubscription(ctx context.Context, userID string, sub domain.PushSubscription) (created bool, err error)
	DeletePushSubscription(ctx context.Context, userID, subID string) error
	// ListPushSubscriptions reads the user's subscriptions, oldest first.
	ListPushSubscriptions(ctx context.Context, userID string) ([]domain.PushSubscription, error)
}

// subscriptionRequest is the browser's PushSubscription.toJSON().
type subscriptionRequest struct {
	Endpoint       string   `json:"endpoint"`
	ExpirationTime *float64 `json:"expirationTime"` // accepted as browsers send it; not used
	Keys           struct {
		P256dh string `json:"p256dh"`
		Auth   string `json:"auth"`
	} `json:"keys"`
}

type subscriptionView struct {
	ID        string `json:"id"`
	CreatedAt string `json:"createdAt"`
}

const maxEndpointLength = 2048

// createPushSubscription registers a browser's subscription. Its id derives
// from the endpoint, so a browser that registers again (e.g. after rotating
// its keys) replaces its subscription: 201 the first time, 200 after. The
// user's subscriptions are bounded by domain.MaxPushSubscriptionsPerUser: a
// new one beyond it evicts the oldest.
func (h *UsersHandler) createPushSubscription(ctx context.Context, req *request) response {
	var sr subscriptionRequest
	userID, p := decodeUserBody(req, &sr)
	if p != nil {
		return problemResponse(p)
	}
	if len(sr.Endpoint) > maxEndpointLength {
		return problemResponse(fieldProblem(http.StatusBadRequest, "invalid_endpoint", "/endpoint", "endpoint is longer than 2048 characters"))
	}
	sub := webpush.Subscription{Endpoint: sr.Endpoint, P256dh: sr.Keys.P256dh, Auth: sr.Keys.Auth}
	if err := webpush.ValidateSubscription(sub, webpush.ValidationOptions{Hosts: h.pushHosts, AllowInsecureLoopback: h.pushLoopback}); err != nil {
		return problemResponse(subscriptionProblem(err))
	}
	existing, err := h.pushSubscriptions.ListPushSubscriptions(ctx, userID)
	if err != nil {
		return h.storeError(ctx, "list push subscriptions", err, nil)
	}
	stored := domain.PushSubscription{ID: subscriptionID(sr.Endpoint), Endpoint: sub.Endpoint, P256dh: sub.P256dh, Auth: sub.Auth, CreatedAt: h.now()}
	created, err := h.pushSubscriptions.SavePushSubscription(ctx, userID, stored)
	if err != nil {
		return h.storeError(ctx, "save push subscription", err, nil)
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		h.evictOldestSubscriptions(ctx, userID, existing, stored.ID)
	}
	h.log.InfoContext(ctx, "push subscription saved", "userId", userID, "subscriptionId", stored.ID, "outcome", http.StatusText(status))
	return response{
		status:  status,
		body:    &subscriptionView{ID: stored.ID, CreatedAt: formatTime(stored.CreatedAt)},
		headers: map[string]string{"Location": "/v1/users/" + userID + "/push-subscriptions/" + stored.ID},
	}
}

// evictOldestSubscriptions removes the user's oldest subscriptions (existing
// is oldest first, read before the new one, kept, was saved) beyond
// domain.MaxPushSubscriptionsPerUser. Best effort: the new subscription is
// saved already; a failure leaves one too many until the next registration.
func (h *UsersHandler) evictOldestSubscriptions(ctx context.Context, userID string, existing []domain.PushSubscription, kept string) {
	existing = slices.DeleteFunc(existing, func(s domain.PushSubscription) bool { return s.ID == kept })
	for _, s := range existing[:max(len(existing)+1-domain.MaxPushSubscriptionsPerUser, 0)] {
		if err := h.pushSubscriptions.DeletePushSubscription(ctx, userID, s.ID); err != nil && !errors.Is(err, domain.ErrNotFound) {
			h.log.WarnContext(ctx, "evict push subscription failed", "userId", userID, "subscriptionId", s.ID, "error", err)
			return
		}
		h.log.InfoContext(ctx, "push subscription evicted", "userId", userID, "subscriptionId", s.ID, "outcome", "evicted")
	}
}

// subscriptionProblem names the field webpush found unusable.
func subscriptionProblem(err error) *Problem {
	var se *webpush.SubscriptionError
	if !errors.As(err, &se) {
		return fieldProblem(http.StatusBadRequest, "invalid_subscription", "", "not a usable push subscription")
	}
	switch {
	case errors.Is(err, webpush.ErrEndpointNotAllowed):
		return fieldProblem(http.StatusUnprocessableEntity, "endpoint_not_allowed", "/endpoint", "endpoint "+se.Reason)
	case errors.Is(err, webpush.ErrInvalidEndpoint):
		return fieldProblem(http.StatusBadRequest, "invalid_endpoint", "/endpoint", "endpoint "+se.Reason)
	case errors.Is(err, webpush.ErrInvalidP256dh):
		return fieldProblem(http.StatusBadRequest, "invalid_p256dh", "/keys/p256dh", "keys.p256dh "+se.Reason)
	default:
		return fieldProblem(http.StatusBadRequest, "invalid_auth", "/keys/auth", "keys.auth "+se.Reason)
	}
}

func (h *UsersHandler) deletePushSubscription(ctx context.Context, req *request) response {
	userID, p := pathUserID(req)
	if p != nil {
		return problemResponse(p)
	}
	notFound := func() *Problem {
		return &Problem{Status: http.StatusNotFound, Code: "subscription_not_found", Parameter: "subscriptionId",
			Detail: "this user has no push subscription with this id"}
	}
	subID := req.PathParameters["subscriptionId"]
	if !validSubscriptionID(subID) {
		return problemResponse(notFound())
	}
	if err := h.pushSubscriptions.DeletePushSubscription(ctx, userID, subID); err != nil {
		return h.storeError(ctx, "delete push subscription", err, notFound)
	}
	h.log.InfoContext(ctx, "push subscription deleted", "userId", userID, "subscriptionId", subID, "outcome", "deleted")
	return response{status: http.StatusNoContent}
}
