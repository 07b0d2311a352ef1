package api

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/metrics"
)

// NotificationsHandler serves the notification routes (service): intake,
// batch intake, status and cancel, and a recipient's history.
type NotificationsHandler struct {
	responder
	notifications NotificationStore
	history       HistoryStore
	campaigns     CampaignStore
	campaignQueue CampaignQueue
	catalog       *catalog.Catalog
	now           func() time.Time
	newID         func() string
	metrics       metrics.Recorder
}

// NotificationsDeps are the notification routes' collaborators. Notifications,
// Catalog, Now, NewID and Log are required.
type NotificationsDeps struct {
	Notifications NotificationStore
	// History reads a recipient's history (GET /v1/users/{userId}/notifications).
	History HistoryStore
	// Campaigns and CampaignQueue fan a topic send out: it is a campaign
	// whose audience is the topic's subscribers.
	Campaigns     CampaignStore
	CampaignQueue CampaignQueue
	Catalog       *catalog.Catalog
	Now           func() time.Time
	// NewID is the id of a notification without a dedupe key.
	NewID func() string
	Log   *slog.Logger
	// Metrics counts intake outcomes (Accepted, Replayed, Rejected batch
	// items): the router's recorder, which flushes them per invocation; nil
	// records nothing.
	Metrics metrics.Recorder
}

// NewNotifications wires the notification routes.
func NewNotifications(d NotificationsDeps) *NotificationsHandler {
	h := &NotificationsHandler{responder: responder{log: d.Log}, notifications: d.Notifications, history: d.History, campaigns: d.Campaigns,
		campaignQueue: d.CampaignQueue, catalog: d.Catalog,
		now: d.Now, newID: d.NewID, metrics: d.Metrics}
	if h.metrics == nil {
		h.metrics = metrics.Nop{}
	}
	return h
}

// NotificationStore is what the notification routes need from the table.
type NotificationStore interface {
	CreateNotification(ctx context.Context, n *domain.Notification) (*domain.Notification, error)
	GetNotificationWithDeliveries(ctx context.Context, id string) (*domain.Notification, []domain.Delivery, error)
	CancelNotification(ctx context.Context, id, caller string) (*domain.Notification, error)
	Transition(ctx context.Context, id string, ch domain.Channel, c domain.Change) (*domain.Delivery, error)
	// CreateDelivery writes d unless its delivery exists (then it returns
	// the existing one with domain.ErrConflict): the cancel's dropped item
	// for a channel no worker has claimed.
	CreateDelivery(ctx context.Context, d *domain.Delivery) (*domain.Delivery, error)
}

// notificationRequest is the body of POST /v1/notifications. Times stay
// strings until validation so that a bad one is reported with its pointer;
// data stays raw so that its size is measured as sent.
type notificationRequest struct {
	Type       string          `json:"type"`
	Recipient  recipientBody   `json:"recipient"`
	Data       json.RawMessage `json:"data,omitempty"`
	Priority   string          `json:"priority,omitempty"`
	Channels   []string        `json:"channels,omitempty"`
	ResourceID string          `json:"resourceId,omitempty"`
	BatchKey   string          `json:"batchKey,omitempty"`
	SendAt     string          `json:"sendAt,omitempty"`
	ExpiresAt  string          `json:"expiresAt,omitempty"`
	// Exclude are users a topic send leaves out (the actor).
	Exclude []string `json:"exclude,omitempty"`
}

// recipientBody is one user (userId, with optional contacts), or a topic:
// every subscriber of it.
type recipientBody struct {
	UserID string `json:"userId,omitempty"`
	Topic  string `json:"topic,omitempty"`
	Email  string `json:"email,omitempty"`
	Phone  string `json:"phone,omitempty"`
	Locale string `json:"locale,omitempty"`
}

// acceptedBody is the 202 body; a replay returns the same one.
type acceptedBody struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	CreatedAt string `json:"createdAt"`
}

const (
	maxBodyBytes = 64 << 10
	// replayedHeader marks a response replayed from an earlier request.
	replayedHeader = "Idempotent-Replayed"
)

func (h *NotificationsHandler) createNotification(ctx context.Context, req *request) response {
	body, p := readBody(req)
	if p != nil {
		return problemResponse(p)
	}
	key, hasKey, p := idempotencyKey(req)
	if p != nil {
		return problemResponse(p)
	}
	var nr notificationRequest
	if p := decodeNotificationRequest(body, &nr, nil); p != nil {
		return problemResponse(p)
	}
	if nr.Recipient.Topic != "" {
		return h.sendTopic(ctx, req.caller, key, hasKey, &nr)
	}
	return h.accept(ctx, req.caller, key, hasKey, &nr, "")
}

// reusedProblem answers a dedupe key (the Idempotency-Key, else the
// resourceId) that names an earlier, different request.
func reusedProblem(hasKey bool, pointerPrefix string) *Problem {
	if !hasKey {
		return &Problem{Status: http.StatusUnprocessableEntity, Code: "resource_id_reused", Pointer: pointerPrefix + "/resourceId",
			Detail: "a different notification of this type for this user and resourceId was already accepted"}
	}
	p := &Problem{Status: http.StatusUnprocessableEntity, Code: "idempotency_key_reused",
		Detail: "this idempotency key was already used with a different request"}
	if pointerPrefix != "" {
		p.Pointer = pointerPrefix + "/idempotencyKey"
	} else {
		p.Header = "Idempotency-Key"
	}
	return p
}

// accept validates one notification request and stores it with one
// conditional write. pointerPrefix locates the request inside a batch.
func (h *NotificationsHandler) accept(ctx context.Context, caller, key string, hasKey bool, nr *notificationRequest, pointerPrefix string) response {
	n, data, p := h.validateNotification(nr)
	if p != nil {
		if p.Pointer != "" {
			p.Pointer = pointerPrefix + p.Pointer
		}
		return problemResponse(p)
	}
	n.Caller = caller
	n.RequestHash = requestHash(nr, n, data)
	switch {
	case hasKey:
		n.DedupeKey = "k\x00" + key
	case nr.ResourceID != "":
		n.DedupeKey = "r\x00" + nr.Recipient.UserID + "\x00" + nr.Type + "\x00" + nr.ResourceID
	}
	if n.DedupeKey != "" {
		n.ID = dedupeID(caller, n.DedupeKey)
	} else {
		n.ID = h.newID()
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < deadlineReserve {
		return problemResponse(timeoutProblem())
	}
	stored, err := h.notifications.CreateNotification(ctx, n)
	switch {
	case errors.Is(err, domain.ErrConflict) && stored != nil && stored.Caller == n.Caller && stored.DedupeKey == n.DedupeKey && n.DedupeKey != "":
		if stored.RequestHash != n.RequestHash {
			return problemResponse(reusedProblem(hasKey, pointerPrefix))
		}
		resp := accepted(stored)
		resp.headers[replayedHeader] = "true"
		h.metrics.Add(ctx, metrics.Replayed, metrics.Dims{Priority: stored.Priority}, 1)
		return resp
	case err != nil:
		return h.internalError(ctx, "create notification", err)
	}
	dims := metrics.Dims{Priority: n.Priority}
	h.metrics.Add(ctx, metrics.Accepted, dims, 1)
	attrs := []slog.Attr{slog.String("notificationId", n.ID),
		slog.String("type", n.Type), slog.String("priority", string(n.Priority)), slog.String("outcome", "accepted")}
	if pointerPrefix == "" && h.log.Enabled(ctx, slog.LevelInfo) {
		// A single request's metrics document is its accept line (one JSON
		// line, not two); a batch keeps one document for all its items, and
		// at a level that drops the line the document is written on its own.
		attrs = append(attrs, metrics.Embed(h.metrics, dims)...)
	}
	h.log.LogAttrs(ctx, slog.LevelInfo, "notification accepted", attrs...)
	return accepted(n)
}

// countRejected counts a refused intake request (or batch item) by its
// problem code; server errors are not rejections. The router counts what it
// refuses before the route runs, the batch route its refused items.
func countRejected(ctx context.Context, rec metrics.Recorder, resp response) {
	if p, ok := resp.body.(*Problem); ok && p.Status < http.StatusInternalServerError {
		rec.Add(ctx, metrics.Rejected, metrics.Dims{Code: p.Code}, 1)
	}
}

func accepted(n *domain.Notification) response {
	location := "/v1/notifications/" + n.ID
	return response{
		status:  http.StatusAccepted,
		body:    &acceptedBody{ID: n.ID, Status: "accepted", CreatedAt: n.CreatedAt.UTC().Format(time.RFC3339Nano)},
		headers: map[string]string{"Location": location},
	}
}

// requestHash is a canonical hash of an accepted request: every field as
// given, with times as UTC instants, channels as a set and data keys sorted,
// so equal requests hash equally whatever their whitespace, key order or
// time zone notation. Fields are length-prefixed, so no two different
// requests share an encoding.
func requestHash(nr *notificationRequest, n *domain.Notification, data map[string]any) string {
	buf := make([]byte, 0, 1024)
	put := func(s string) {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	put("v1")
	put(nr.Type)
	put(nr.Recipient.UserID)
	put(nr.Recipient.Email)
	put(nr.Recipient.Phone)
	put(nr.Recipient.Locale)
	put(nr.Priority)
	channels := make([]string, 0, 3)
	for _, c := range nr.Channels {
		if !slices.Contains(channels, c) {
			channels = append(channels, c)
		}
	}
	slices.Sort(channels)
	buf = binary.AppendUvarint(buf, uint64(len(channels)))
	for _, c := range channels {
		put(c)
	}
	put(nr.ResourceID)
	put(nr.BatchKey)
	expiresAt := time.Time{} // as requested, not the type's default
	if nr.ExpiresAt != "" {
		expiresAt = n.ExpiresAt
	}
	for _, t := range []time.Time{n.SendAt, expiresAt} {
		if t.IsZero() {
			buf = append(buf, 0)
			continue
		}
		buf = append(buf, 1)
		buf = binary.AppendVarint(buf, t.UnixNano())
	}
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	buf = binary.AppendUvarint(buf, uint64(len(keys)))
	for _, k := range keys {
		put(k)
		if s, ok := data[k].(string); ok {
			put(s)
		} else { // validation admits only strings; stay total anyway
			raw, _ := json.Marshal(data[k])
			put(string(raw))
		}
	}
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:])
}

// idempotencyKey reads and validates the optional Idempotency-Key header.
func idempotencyKey(req *request) (key string, ok bool, p *Problem) {
	key, ok = header(req, "idempotency-key")
	if ok {
		p = validateIdempotencyKey(key)
	}
	return key, ok, p
}

// header returns a request header. API Gateway (payload 2.0) lower-cases
// header names; the loop covers other spellings without allocating.
func header(req *request, lowerName string) (string, bool) {
	if v, ok := req.Headers[lowerName]; ok {
		return v, true
	}
	for k, v := range req.Headers {
		if strings.EqualFold(k, lowerName) {
			return v, true
		}
	}
	return "", false
}
