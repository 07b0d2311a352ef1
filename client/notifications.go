package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Notification is a request to notify one user (POST /v1/notifications).
type Notification struct {
	// Type is a catalog type, e.g. "invoice.payment_failed".
	Type      string    `json:"type"`
	Recipient Recipient `json:"recipient"`
	// Data holds the type's template variables.
	Data map[string]string `json:"data,omitempty"`
	// Priority is "high", "normal" (default) or "low".
	Priority string `json:"priority,omitempty"`
	// Channels narrows delivery to some of the type's channels
	// ("email", "sms", "push").
	Channels []string `json:"channels,omitempty"`
	// ResourceID deduplicates on (caller, user, type, resourceId) when no
	// idempotency key is given.
	ResourceID string `json:"resourceId,omitempty"`
	// BatchKey lets notifications of a digestible type collapse into one.
	BatchKey  string     `json:"batchKey,omitempty"`
	SendAt    *time.Time `json:"sendAt,omitempty"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// IdempotencyKey makes the request safe to repeat: the same key and
	// payload answer the first response again. Send generates one when both
	// it and ResourceID are empty, and keeps it across its own retries; give
	// your own to retry safely after Send returned an error. SendBatch
	// generates one when it is empty and writes it into the caller's slice.
	IdempotencyKey string `json:"-"`
}

// Recipient is the user a notification is for; Email, Phone and Locale
// override the user's profile for this notification.
type Recipient struct {
	UserID string `json:"userId"`
	Email  string `json:"email,omitempty"`
	Phone  string `json:"phone,omitempty"`
	Locale string `json:"locale,omitempty"`
}

// Accepted is Herald's answer to an accepted notification.
type Accepted struct {
	ID        string    `json:"id"`
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"createdAt"`
	// Replayed is true when this answers an earlier request with the same
	// idempotency key (this request created nothing).
	Replayed bool `json:"-"`
	// IdempotencyKey is the key sent (the caller's or the generated one).
	IdempotencyKey string `json:"-"`
}

// Send asks Herald to notify one user and returns once the notification is
// stored; delivery follows asynchronously (see GetNotification).
func (c *Client) Send(ctx context.Context, n Notification) (*Accepted, error) {
	if n.IdempotencyKey == "" && n.ResourceID == "" {
		n.IdempotencyKey = c.newKey()
	}
	var a Accepted
	replayed, err := c.notify(ctx, n, n.IdempotencyKey, &a)
	if err != nil {
		return nil, err
	}
	a.Replayed, a.IdempotencyKey = replayed, n.IdempotencyKey
	return &a, nil
}

// notify posts body to /v1/notifications under key (none: empty) and
// decodes the 202 into out; replayed: the answer repeats an earlier request.
func (c *Client) notify(ctx context.Context, body any, key string, out any) (replayed bool, err error) {
	res, err := c.do(ctx, call{method: http.MethodPost, path: "/v1/notifications", body: body,
		idempotencyKey: key, ok: []int{http.StatusAccepted}, out: out})
	if err != nil {
		return false, err
	}
	return res.header.Get("Idempotent-Replayed") == "true", nil
}

// BatchResult is one item's outcome in a batch, in request order.
type BatchResult struct {
	Index          int       `json:"index"`
	Status         int       `json:"status"`
	IdempotencyKey string    `json:"idempotencyKey"`
	ID             string    `json:"id"`
	CreatedAt      time.Time `json:"createdAt"`
	Location       string    `json:"location"`
	Replayed       bool      `json:"replayed"`
	Problem        *problem  `json:"problem"`
}

// Err is the item's error (an *Error), or nil when it was accepted.
func (r BatchResult) Err() error {
	if r.Status == http.StatusAccepted {
		return nil
	}
	if r.Problem == nil {
		return &Error{Status: r.Status}
	}
	return r.Problem.err(r.Status)
}

// Retryable reports whether the item failed in a way that sending it again
// with the same idempotency key can fix: a 5xx (503 "timeout": the request
// had no time left to store it; 500: storing it failed) or a 429. A 4xx
// problem is the item's own and fails again.
func (r BatchResult) Retryable() bool {
	return retryableStatus(r.Status)
}

type batchItem struct {
	Notification
	IdempotencyKey string `json:"idempotencyKey"`
}

// MaxBatch is the most notifications one SendBatch call takes.
const MaxBatch = 100

// SendBatch sends up to MaxBatch notifications in one request and returns
// one result per item, in request order. Each item is accepted or rejected on
// its own (see BatchResult.Err); the error is for the request as a whole.
//
// Items without an IdempotencyKey get a generated one, written into ns, so
// that sending the same ns again (after an error, or for items still
// Retryable) replays instead of duplicating. The whole request is retried as
// a single call is; then items answered Retryable (such as 503 "timeout",
// which a batch answers for the items its invocation had no time left for)
// are sent again on their own, with their keys, under the same retry policy.
// Items still Retryable when the attempts run out keep that result: send
// ns[r.Index] again later.
func (c *Client) SendBatch(ctx context.Context, ns []Notification) ([]BatchResult, error) {
	if len(ns) == 0 || len(ns) > MaxBatch {
		return nil, fmt.Errorf("herald client: a batch holds 1 to %d notifications, not %d", MaxBatch, len(ns))
	}
	for i := range ns {
		if ns[i].IdempotencyKey == "" {
			ns[i].IdempotencyKey = c.newKey()
		}
	}
	all := make([]int, len(ns))
	for i := range all {
		all[i] = i
	}
	results, err := c.sendBatchItems(ctx, ns, all)
	if err != nil {
		return nil, err
	}
	for round := 1; round < c.retry.MaxAttempts; round++ {
		var again []int
		for i, r := range results {
			if r.Retryable() {
				again = append(again, i)
			}
		}
		if len(again) == 0 || c.sleep(ctx, c.backoff(round, 0)) != nil {
			break
		}
		retried, err := c.sendBatchItems(ctx, ns, again)
		if err != nil {
			break // the items keep their Retryable results
		}
		for _, r := range retried {
			results[r.Index] = r
		}
	}
	return results, nil
}

// sendBatchItems sends ns[i] for each i of idx as one batch request and
// returns the results with Index (and problem pointers) naming positions in
// ns, not in the request.
func (c *Client) sendBatchItems(ctx context.Context, ns []Notification, idx []int) ([]BatchResult, error) {
	items := make([]batchItem, len(idx))
	for j, i := range idx {
		items[j] = batchItem{Notification: ns[i], IdempotencyKey: ns[i].IdempotencyKey}
	}
	var out struct {
		Results []BatchResult `json:"results"`
	}
	_, err := c.do(ctx, call{method: http.MethodPost, path: "/v1/notifications/batch",
		body: map[string]any{"notifications": items}, ok: []int{http.StatusMultiStatus}, out: &out})
	if err != nil {
		return nil, err
	}
	if len(out.Results) != len(idx) {
		return nil, fmt.Errorf("herald client: batch of %d answered %d results", len(idx), len(out.Results))
	}
	for j := range out.Results {
		r := &out.Results[j]
		if r.Index < 0 || r.Index >= len(idx) {
			return nil, fmt.Errorf("herald client: batch result index %d out of range", r.Index)
		}
		sent := r.Index
		r.Index = idx[sent]
		if r.Problem != nil && sent != r.Index {
			from := "/notifications/" + strconv.Itoa(sent)
			if rest, ok := strings.CutPrefix(r.Problem.Pointer, from); ok && (rest == "" || rest[0] == '/') {
				r.Problem.Pointer = "/notifications/" + strconv.Itoa(r.Index) + rest
			}
		}
	}
	return out.Results, nil
}

// Delivery is a notification's state on one channel.
type Delivery struct {
	// Status is planned, queued, sending, sent, retrying, deferred, skipped,
	// dropped, failed, delivered, bounced or complained.
	Status string `json:"status"`
	// Reason says why it is skipped, dropped, deferred or failed.
	Reason    string     `json:"reason"`
	Attempts  int        `json:"attempts"`
	UpdatedAt time.Time  `json:"updatedAt"`
	DueAt     *time.Time `json:"dueAt"`
	// TargetsReached is, for push, how many browsers and devices the push
	// reached so far.
	TargetsReached int `json:"targetsReached,omitempty"`
	// Provider is who sent it, or was tried last: "ses:<region>", "sns",
	// "sms-voice" (a failover's second provider names its own).
	Provider string `json:"provider,omitempty"`
	// Decision is the policy's decision that skipped, dropped or deferred
	// it ("deferred: quiet_hours until …"); empty otherwise.
	Decision string `json:"decision,omitempty"`
	// When it was queued, sent, and delivered or bounced (from the trail).
	QueuedAt   *time.Time `json:"queuedAt,omitempty"`
	SentAt     *time.Time `json:"sentAt,omitempty"`
	FeedbackAt *time.Time `json:"feedbackAt,omitempty"`
	// Trail is the decision trail, oldest first.
	Trail []TrailStep `json:"trail"`
}

// TrailStep is one step of a delivery's decision trail: the state the
// relay, the scheduler, a worker or the feedback moved it to.
type TrailStep struct {
	At     time.Time  `json:"at"`
	Status string     `json:"status"`
	Reason string     `json:"reason,omitempty"`
	DueAt  *time.Time `json:"dueAt,omitempty"`
	Error  string     `json:"error,omitempty"` // the provider's classified error
	Note   string     `json:"note,omitempty"`  // e.g. "retry in 4s"
}

// HistoryQuery filters and pages a user's history; zero fields do not
// filter.
type HistoryQuery struct {
	Type    string
	Channel string
	Status  string
	Since   time.Time
	Until   time.Time
	Page
}

// HistoryEntry is one notification of the caller's to the user, with every
// channel's delivery.
type HistoryEntry struct {
	ID         string              `json:"id"`
	Type       string              `json:"type"`
	Priority   string              `json:"priority"`
	Caller     string              `json:"caller"`
	CreatedAt  time.Time           `json:"createdAt"`
	CampaignID string              `json:"campaignId,omitempty"`
	ResourceID string              `json:"resourceId,omitempty"`
	Deliveries map[string]Delivery `json:"deliveries"`
}

// HistoryPage is one page of a user's history, newest first; NextCursor is
// empty on the last page (a page may hold fewer items and still have one).
type HistoryPage struct {
	Items      []HistoryEntry `json:"items"`
	NextCursor string         `json:"nextCursor"`
}

// ListUserNotifications reads one page of the caller's notifications to
// userID, newest first (GET /v1/users/{userId}/notifications).
func (c *Client) ListUserNotifications(ctx context.Context, userID string, q HistoryQuery) (*HistoryPage, error) {
	v := q.query()
	for k, s := range map[string]string{"type": q.Type, "channel": q.Channel, "status": q.Status} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.UTC().Format(time.RFC3339Nano))
	}
	if !q.Until.IsZero() {
		v.Set("until", q.Until.UTC().Format(time.RFC3339Nano))
	}
	var out HistoryPage
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/v1/users/" + url.PathEscape(userID) + "/notifications", query: v, ok: []int{http.StatusOK}, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// NotificationStatus is a notification with its delivery per channel.
type NotificationStatus struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Status string `json:"status"` // accepted or cancelled
	// Overall sums up the deliveries: planning, in_progress, deferred,
	// sent, partly_failed, failed, dropped, skipped or cancelled.
	Overall   string `json:"overall"`
	Recipient struct {
		UserID string `json:"userId"`
	} `json:"recipient"`
	Priority    string     `json:"priority"`
	Channels    []string   `json:"channels"`
	ResourceID  string     `json:"resourceId"`
	BatchKey    string     `json:"batchKey"`
	SendAt      *time.Time `json:"sendAt"`
	ExpiresAt   *time.Time `json:"expiresAt"`
	CreatedAt   time.Time  `json:"createdAt"`
	CancelledAt *time.Time `json:"cancelledAt"`
	// Deliveries is keyed by channel; empty until the relay planned them.
	Deliveries map[string]Delivery `json:"deliveries"`
}

// GetNotification reads one of the caller's notifications.
func (c *Client) GetNotification(ctx context.Context, id string) (*NotificationStatus, error) {
	var st NotificationStatus
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/v1/notifications/" + url.PathEscape(id), ok: []int{http.StatusOK}, out: &st}); err != nil {
		return nil, err
	}
	return &st, nil
}

// CancelNotification cancels what is not sent yet of a notification
// (idempotent) and returns its state.
func (c *Client) CancelNotification(ctx context.Context, id string) (*NotificationStatus, error) {
	var st NotificationStatus
	if _, err := c.do(ctx, call{method: http.MethodDelete, path: "/v1/notifications/" + url.PathEscape(id), ok: []int{http.StatusOK}, out: &st}); err != nil {
		return nil, err
	}
	return &st, nil
}

// errorsAs is errors.As for *Error.
func errorsAs(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
