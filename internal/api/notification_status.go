package api

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/policy"
)

// notificationView is GET /v1/notifications/{id}: the notification as
// accepted (without its data and contact overrides) and its delivery on
// each channel.
type notificationView struct {
	ID          string                  `json:"id"`
	Type        string                  `json:"type"`
	Status      string                  `json:"status"`
	Overall     domain.Overall          `json:"overall"` // from the deliveries (domain.OverallOf)
	Recipient   viewRecipient           `json:"recipient"`
	Priority    string                  `json:"priority"`
	Channels    []string                `json:"channels,omitempty"`
	ResourceID  string                  `json:"resourceId,omitempty"`
	BatchKey    string                  `json:"batchKey,omitempty"`
	SendAt      *string                 `json:"sendAt"`
	ExpiresAt   *string                 `json:"expiresAt"`
	CreatedAt   string                  `json:"createdAt"`
	CancelledAt *string                 `json:"cancelledAt"`
	Deliveries  map[string]deliveryView `json:"deliveries"`
}

type viewRecipient struct {
	UserID string `json:"userId"`
}

// deliveryView is one channel's progress. Reason and dueAt are null when
// they do not apply.
type deliveryView struct {
	Status    string  `json:"status"`
	Reason    *string `json:"reason"`
	Attempts  int     `json:"attempts"`
	UpdatedAt string  `json:"updatedAt"`
	DueAt     *string `json:"dueAt"`
	// Provider names the provider of the latest attempt (ses:<region>,
	// sns, sms-voice); absent before one and for push.
	Provider string `json:"provider,omitempty"`
	// TargetsReached: push only, the browsers and devices whose provider
	// accepted the notification.
	TargetsReached int `json:"targetsReached,omitempty"`
	// Decision is the policy's decision that skipped, dropped or deferred
	// it, readable ("deferred: quiet_hours until …"); empty otherwise.
	Decision string `json:"decision,omitempty"`
	// The times it was queued (released or accepted), sent, and reached
	// its end after sent (delivered, bounced, complained), from the trail.
	QueuedAt   *string `json:"queuedAt,omitempty"`
	SentAt     *string `json:"sentAt,omitempty"`
	FeedbackAt *string `json:"feedbackAt,omitempty"`
	// Trail: every step the relay, the scheduler, the workers and the
	// feedback took, oldest first (decision trail).
	Trail []stepView `json:"trail"`
}

// stepView is one step of a decision trail.
type stepView struct {
	At     string  `json:"at"`
	Status string  `json:"status"`
	Reason string  `json:"reason,omitempty"`
	DueAt  *string `json:"dueAt,omitempty"`
	Error  string  `json:"error,omitempty"`
	Note   string  `json:"note,omitempty"`
}

// deliveryViewOf shows d; accepted is its notification's creation, when a
// channel sent at once was queued.
func deliveryViewOf(d domain.Delivery, accepted time.Time) deliveryView {
	dv := deliveryView{Status: string(d.Status), Attempts: d.Attempts, UpdatedAt: formatTime(d.UpdatedAt), DueAt: timePtr(d.DueAt),
		Provider: d.Provider, TargetsReached: len(d.SentTargets), Trail: make([]stepView, 0, len(d.Trail))}
	if d.Reason != domain.ReasonNone {
		r := string(d.Reason)
		dv.Reason = &r
	}
	var queued, sent, feedback time.Time
	for i, st := range d.Trail {
		dv.Trail = append(dv.Trail, stepView{At: formatTime(st.At), Status: string(st.Status), Reason: string(st.Reason),
			DueAt: timePtr(st.DueAt), Error: st.Error, Note: st.Note})
		switch st.Status {
		case domain.StatusQueued:
			queued = st.At
		case domain.StatusSending:
			switch {
			case i == 0: // sent at once: queued since it was accepted
				queued = accepted
			case queued.IsZero() && d.Trail[i-1].Status == domain.StatusPlanned:
				// Released, and claimed before the scheduler's queued
				// write (which then lost): queued when released.
				queued = d.Trail[i-1].At
			}
		case domain.StatusSent:
			sent = st.At
		case domain.StatusDelivered, domain.StatusBounced, domain.StatusComplained:
			feedback = st.At
		}
	}
	dv.QueuedAt, dv.SentAt, dv.FeedbackAt = timePtr(queued), timePtr(sent), timePtr(feedback)
	switch d.Status {
	case domain.StatusSkipped, domain.StatusDropped:
		dv.Decision = string(d.Status) + ": " + string(d.Reason)
	case domain.StatusDeferred:
		if d.DueAt.IsZero() && d.DigestID != "" {
			// A digest's member has no due time of its own: it goes (as
			// digested) when its leader does.
			dv.Decision = "deferred: " + string(d.Reason) + ", in the digest of " + d.DigestID
			break
		}
		dv.Decision = "deferred: " + string(d.Reason) + " until " + formatTime(d.DueAt)
	}
	return dv
}

// viewOf shows n's deliveries, and every channel n plans (planned: from its
// type) that has no delivery item yet: a channel sent at once has none
// until a worker's claim creates it, so it is shown queued since the
// notification was accepted — or dropped: cancelled once the notification
// is cancelled (the cancel writes that item; derived here when a failed
// cancel has not written it yet, and the worker creates nothing for a
// cancelled notification).
func viewOf(n *domain.Notification, ds []domain.Delivery, planned []domain.Channel) *notificationView {
	v := &notificationView{
		ID: n.ID, Type: n.Type, Status: string(n.Status), Recipient: viewRecipient{UserID: n.Recipient.UserID},
		Priority: string(n.Priority), ResourceID: n.ResourceID, BatchKey: n.BatchKey,
		SendAt: timePtr(n.SendAt), ExpiresAt: timePtr(n.ExpiresAt), CreatedAt: formatTime(n.CreatedAt),
		CancelledAt: timePtr(n.CancelledAt), Deliveries: make(map[string]deliveryView, len(ds)),
	}
	for _, c := range n.Channels {
		v.Channels = append(v.Channels, string(c))
	}
	for _, d := range ds {
		v.Deliveries[string(d.Channel)] = deliveryViewOf(d, n.CreatedAt)
	}
	for _, c := range planned {
		if _, ok := v.Deliveries[string(c)]; ok {
			continue
		}
		// Queued since acceptance (its trail's one step), or dropped.
		d := domain.Delivery{Channel: c, Status: domain.Absent, UpdatedAt: n.CreatedAt}
		if n.Status == domain.NotificationCancelled {
			d.Status, d.Reason, d.UpdatedAt = domain.StatusDropped, domain.ReasonCancelled, n.CancelledAt
		}
		d.Trail = domain.TrailAtCreation(&d)
		v.Deliveries[string(c)] = deliveryViewOf(d, n.CreatedAt)
	}
	states := make([]domain.Status, 0, len(v.Deliveries))
	for _, dv := range v.Deliveries {
		states = append(states, domain.Status(dv.Status))
	}
	v.Overall = domain.OverallOf(n.Status, states)
	return v
}

// planned are the channels n plans, from its type (none when the type has
// left the catalog: only stored deliveries are shown then).
func (h *NotificationsHandler) planned(n *domain.Notification) []domain.Channel {
	t, ok := h.catalog.Lookup(n.Type)
	if !ok {
		return nil
	}
	return policy.Channels(n, t)
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func timePtr(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := formatTime(t)
	return &s
}

func notificationNotFound() *Problem {
	return &Problem{Status: http.StatusNotFound, Code: "notification_not_found", Parameter: "id",
		Detail: "no notification with this id was created by this caller"}
}

// getNotification returns the caller's own notification; any other id —
// malformed, unknown or another caller's — is the same 404, so ids of other
// callers cannot be probed.
func (h *NotificationsHandler) getNotification(ctx context.Context, req *request) response {
	id := req.PathParameters["id"]
	if !validNotificationID(id) {
		return problemResponse(notificationNotFound())
	}
	n, ds, err := h.notifications.GetNotificationWithDeliveries(ctx, id)
	switch {
	case err != nil:
		return h.storeError(ctx, "get notification", err, notificationNotFound)
	case n.Caller != req.caller:
		return problemResponse(notificationNotFound())
	}
	return response{status: http.StatusOK, body: viewOf(n, ds, h.planned(n))}
}

// cancellable are the delivery states that have not reached a provider yet.
var cancellable = []domain.Status{domain.StatusPlanned, domain.StatusDeferred, domain.StatusQueued, domain.StatusRetrying}

// cancelNotification cancels the caller's notification: one conditional
// update marks it cancelled, then every delivery item not yet sent moves to
// dropped: cancelled with its own conditional transition, and every channel
// the notification plans that has no item yet (sent at once and unclaimed,
// or not planned by the relay yet) gets a dropped: cancelled item with a
// conditional put (absent only). The worker's claim is conditional on the
// item being absent or claimable, so it loses against that item: a worker
// that read the notification before the cancel cannot send after the
// answer showed the channel dropped. A claim that won first makes the put
// lose instead, and the channel is shown where it is (sending). These writes
// happen only at cancel, never per send (docs/decisions.md). A delivery
// that got further in the meantime keeps its state. Cancelling again answers
// the same and retries the writes, so a crash between the steps heals on
// retry; a failed put answers an error rather than a dropped the channel
// might not keep.
func (h *NotificationsHandler) cancelNotification(ctx context.Context, req *request) response {
	id := req.PathParameters["id"]
	if !validNotificationID(id) {
		return problemResponse(notificationNotFound())
	}
	if _, err := h.notifications.CancelNotification(ctx, id, req.caller); err != nil {
		return h.storeError(ctx, "cancel notification", err, notificationNotFound)
	}
	n, ds, err := h.notifications.GetNotificationWithDeliveries(ctx, id)
	if err != nil {
		return h.storeError(ctx, "read cancelled notification", err, notificationNotFound)
	}
	dropped := 0
	for i, d := range ds {
		if !slices.Contains(cancellable, d.Status) {
			continue
		}
		after, err := h.notifications.Transition(ctx, id, d.Channel, domain.Change{
			To: domain.StatusDropped, From: cancellable, Reason: domain.ReasonCancelled,
		})
		switch {
		case err == nil:
			ds[i] = *after
			dropped++
		case errors.Is(err, domain.ErrConflict):
			if after != nil { // it moved on (e.g. claimed for sending): show where it is
				ds[i] = *after
			}
		default:
			// The notification is cancelled; the worker's recheck drops this
			// delivery at send time. Report its last known state.
			h.log.ErrorContext(ctx, "drop cancelled delivery", "notificationId", id, "channel", d.Channel, "error", err)
		}
	}
	for _, c := range h.planned(n) {
		if slices.ContainsFunc(ds, func(d domain.Delivery) bool { return d.Channel == c }) {
			continue
		}
		tomb := domain.DeliveryOf(n, c)
		tomb.Status, tomb.Reason, tomb.UpdatedAt = domain.StatusDropped, domain.ReasonCancelled, n.CancelledAt
		current, err := h.notifications.CreateDelivery(ctx, tomb)
		switch {
		case err == nil:
			ds = append(ds, *tomb)
			dropped++
		case errors.Is(err, domain.ErrConflict) && current != nil:
			// Created meanwhile (a claim won): drop it if still unsent,
			// otherwise show where it is.
			if slices.Contains(cancellable, current.Status) {
				if after, err := h.notifications.Transition(ctx, id, c, domain.Change{
					To: domain.StatusDropped, From: cancellable, Reason: domain.ReasonCancelled,
				}); err == nil {
					current = after
					dropped++
				} else if after != nil {
					current = after
				}
			}
			ds = append(ds, *current)
		default:
			// A claim could still win for this channel: answering dropped
			// would not hold. The notification is cancelled; retrying the
			// cancel writes what is missing.
			return h.storeError(ctx, "drop unclaimed channel", err, notificationNotFound)
		}
	}
	h.log.InfoContext(ctx, "notification cancelled", "notificationId", id, "droppedDeliveries", dropped, "outcome", "cancelled")
	return response{status: http.StatusOK, body: viewOf(n, ds, h.planned(n))}
}
