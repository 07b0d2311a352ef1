package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

// NotificationStore is what the notification routes need from the table.
type NotificationStore interface {
	CreateNotification(ctx context.Context, n *domain.Notification) (*domain.Notification, error)
}

func (h *Handler) notificationRoutes() map[string]route {
	return map[string]route{
		"POST /v1/notifications": h.createNotification,
	}
}

// notificationRequest is the body of POST /v1/notifications.
type notificationRequest struct {
	Type       string         `json:"type"`
	Recipient  recipientBody  `json:"recipient"`
	Data       map[string]any `json:"data,omitempty"`
	Priority   string         `json:"priority,omitempty"`
	Channels   []string       `json:"channels,omitempty"`
	ResourceID string         `json:"resourceId,omitempty"`
	BatchKey   string         `json:"batchKey,omitempty"`
	SendAt     *time.Time     `json:"sendAt,omitempty"`
	ExpiresAt  *time.Time     `json:"expiresAt,omitempty"`
}

type recipientBody struct {
	UserID string `json:"userId"`
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

const maxBodyBytes = 64 << 10

func (h *Handler) createNotification(ctx context.Context, req *request) response {
	body, p := readBody(req)
	if p != nil {
		return problemResponse(p)
	}
	key, hasKey := header(req, "Idempotency-Key")
	if hasKey {
		if p := validateIdempotencyKey(key); p != nil {
			return problemResponse(p)
		}
	}
	var nr notificationRequest
	if p := decodeJSON(body, &nr); p != nil {
		return problemResponse(p)
	}
	n, p := h.validateNotification(&nr)
	if p != nil {
		return problemResponse(p)
	}
	n.Caller = req.caller
	n.RequestHash = requestHash(&nr)
	switch {
	case hasKey:
		n.DedupeKey = "k\x00" + key
	case nr.ResourceID != "":
		n.DedupeKey = "r\x00" + nr.Recipient.UserID + "\x00" + nr.Type + "\x00" + nr.ResourceID
	}
	if n.DedupeKey != "" {
		n.ID = dedupeID(n.Caller, n.DedupeKey)
	} else {
		n.ID = h.newID()
	}
	stored, err := h.notifications.CreateNotification(ctx, n)
	switch {
	case errors.Is(err, domain.ErrConflict) && stored != nil && stored.Caller == n.Caller && stored.DedupeKey == n.DedupeKey:
		if stored.RequestHash != n.RequestHash {
			return problemResponse(&Problem{Status: http.StatusUnprocessableEntity, Code: "idempotency_key_reused",
				Detail: "this idempotency key was already used with a different request"})
		}
		resp := accepted(stored)
		resp.headers["Idempotent-Replayed"] = "true"
		return resp
	case err != nil:
		return h.internalError(ctx, "create notification", err)
	}
	h.log.InfoContext(ctx, "notification accepted", "notificationId", n.ID, "type", n.Type, "priority", n.Priority, "outcome", "accepted")
	return accepted(n)
}

func accepted(n *domain.Notification) response {
	return response{
		status:  http.StatusAccepted,
		body:    acceptedBody{ID: n.ID, Status: "accepted", CreatedAt: n.CreatedAt.UTC().Format(time.RFC3339Nano)},
		headers: map[string]string{"Location": "/v1/notifications/" + n.ID},
	}
}

// dedupeID derives the notification id from the caller-scoped dedupe key, so
// that the table's conditional put on the id is the deduplication: one write,
// no lock, no read-then-write.
func dedupeID(caller, dedupeKey string) string {
	sum := sha256.Sum256([]byte(caller + "\x00" + dedupeKey))
	return "n" + idEncoding.EncodeToString(sum[:16])
}

var idEncoding = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

// NewRandomID returns a random notification id shaped like dedupe ids.
func NewRandomID(random []byte) string { return "n" + idEncoding.EncodeToString(random[:16]) }

// requestHash is a canonical hash of the decoded request: encoding/json writes
// struct fields in a fixed order and map keys sorted, so equal requests hash
// equally whatever their whitespace or key order.
func requestHash(nr *notificationRequest) string {
	b, _ := json.Marshal(nr)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func readBody(req *request) ([]byte, *Problem) {
	body := []byte(req.Body)
	if req.IsBase64Encoded {
		var err error
		if body, err = decodeBase64(req.Body); err != nil {
			return nil, &Problem{Status: http.StatusBadRequest, Code: "invalid_body", Detail: "body is not valid base64"}
		}
	}
	if len(body) > maxBodyBytes {
		return nil, &Problem{Status: http.StatusRequestEntityTooLarge, Code: "body_too_large", Detail: "body exceeds 64 KiB"}
	}
	return body, nil
}

func decodeJSON(body []byte, v any) *Problem {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonProblem(err)
	}
	if dec.More() {
		return &Problem{Status: http.StatusBadRequest, Code: "invalid_json", Detail: "body must be a single JSON object"}
	}
	return nil
}

func header(req *request, name string) (string, bool) {
	for k, v := range req.Headers {
		if http.CanonicalHeaderKey(k) == http.CanonicalHeaderKey(name) {
			return v, true
		}
	}
	return "", false
}
