package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/policy"

	jsonv2 "github.com/go-json-experiment/json"
)

const (
	maxDataBytes   = 16 << 10
	maxKeyLength   = 255 // resourceId, batchKey, Idempotency-Key
	sendAtPastSlop = time.Minute
)

// validateNotification checks a decoded request against the catalog and the
// limits, and builds the notification to store with its decoded data. The
// checks run in a fixed order, so one request always gets the same problem.
func (h *NotificationsHandler) validateNotification(nr *notificationRequest) (*domain.Notification, map[string]any, *Problem) {
	now := h.now()
	typ, p := lookupType(h.catalog, nr.Type)
	if p != nil {
		return nil, nil, p
	}
	r := nr.Recipient
	if r.Topic != "" || nr.Exclude != nil {
		return nil, nil, fieldProblem(http.StatusBadRequest, "topic_not_here", "/recipient/topic",
			"a topic send is a request of its own: POST /v1/notifications with one topic recipient")
	}
	if p := validateUserID(r.UserID, "/recipient/userId"); p != nil {
		return nil, nil, p
	}
	if p := validateContacts(r.Email, r.Phone, r.Locale, "/recipient"); p != nil {
		return nil, nil, p
	}
	n := &domain.Notification{
		Type: nr.Type, Recipient: domain.Recipient{UserID: r.UserID, Email: r.Email, Phone: r.Phone, Locale: r.Locale}, ResourceID: nr.ResourceID, BatchKey: nr.BatchKey,
		CreatedAt: now, Status: domain.NotificationAccepted,
	}
	data, p := validateContent(nr, typ, n, now)
	if p != nil {
		return nil, nil, p
	}
	n.LastDue = policy.LatestDue(n, typ) // kept until then plus the retention
	return n, data, nil
}

// lookupType finds a request's notification type in the catalog (a
// notification's or a campaign's).
func lookupType(c *catalog.Catalog, name string) (*catalog.Type, *Problem) {
	if name == "" {
		return nil, fieldProblem(http.StatusBadRequest, "missing_field", "/type", "type is required")
	}
	typ, ok := c.Lookup(name)
	if !ok {
		return nil, fieldProblem(http.StatusUnprocessableEntity, "unknown_type", "/type", "type is not in the catalog")
	}
	return typ, nil
}

// validateContent checks what a notification and a campaign share (priority,
// channels, keys, data, sendAt, expiresAt) against typ and sets them on n.
func validateContent(nr *notificationRequest, typ *catalog.Type, n *domain.Notification, now time.Time) (map[string]any, *Problem) {
	n.Priority = typ.Priority
	if nr.Priority != "" {
		p, err := domain.ParsePriority(nr.Priority)
		if err != nil {
			return nil, fieldProblem(http.StatusBadRequest, "invalid_priority", "/priority", "priority must be high, normal or low")
		}
		n.Priority = p
	}
	channels, p := validateChannels(nr.Channels, typ)
	if p != nil {
		return nil, p
	}
	n.Channels = channels
	if p := validateKey(nr.ResourceID, "/resourceId"); p != nil {
		return nil, p
	}
	if p := validateKey(nr.BatchKey, "/batchKey"); p != nil {
		return nil, p
	}
	data, p := decodeData(nr.Data)
	if p != nil {
		return nil, p
	}
	if err := typ.ValidateData(data); err != nil {
		return nil, dataProblem(err)
	}
	n.Data = data
	if n.SendAt, n.ExpiresAt, p = validateSchedule(nr.SendAt, nr.ExpiresAt, typ, now); p != nil {
		return nil, p
	}
	return data, nil
}

// validateChannels parses the requested channels: none given means the
// type's; given, each must be known, listed once and have a template.
func validateChannels(requested []string, typ *catalog.Type) ([]domain.Channel, *Problem) {
	if requested != nil && len(requested) == 0 {
		return nil, fieldProblem(http.StatusBadRequest, "invalid_channel", "/channels", "channels must list at least one channel when given")
	}
	var channels []domain.Channel
	for i, s := range requested {
		ptr := func() string { return "/channels/" + strconv.Itoa(i) } // built only for a problem
		c, err := domain.ParseChannel(s)
		switch {
		case err != nil:
			return nil, fieldProblem(http.StatusBadRequest, "invalid_channel", ptr(), "channel must be email, sms or push")
		case slices.Contains(channels, c):
			return nil, fieldProblem(http.StatusBadRequest, "duplicate_channel", ptr(), "channel listed twice")
		case !typ.HasChannel(c):
			return nil, fieldProblem(http.StatusUnprocessableEntity, "unsupported_channel", ptr(), "the type has no template for this channel")
		}
		channels = append(channels, c)
	}
	return channels, nil
}

// validateSchedule parses sendAt and expiresAt (UTC). Without expiresAt the
// type's default expiry counts from the send time (now, or sendAt when later).
func validateSchedule(sendAtText, expiresAtText string, typ *catalog.Type, now time.Time) (sendAt, expiresAt time.Time, _ *Problem) {
	if sendAtText != "" {
		t, p := parseTime(sendAtText, "/sendAt")
		if p != nil {
			return time.Time{}, time.Time{}, p
		}
		if t.Before(now.Add(-sendAtPastSlop)) || t.After(now.AddDate(1, 0, 0)) {
			return time.Time{}, time.Time{}, fieldProblem(http.StatusBadRequest, "send_at_out_of_range", "/sendAt", "sendAt must be between one minute ago and one year ahead")
		}
		sendAt = t.UTC()
	}
	start := now
	if sendAt.After(now) {
		start = sendAt
	}
	if expiresAtText != "" {
		t, p := parseTime(expiresAtText, "/expiresAt")
		if p != nil {
			return time.Time{}, time.Time{}, p
		}
		switch {
		case !sendAt.IsZero() && !t.After(sendAt):
			return time.Time{}, time.Time{}, fieldProblem(http.StatusBadRequest, "expires_before_send_at", "/expiresAt", "expiresAt must be after sendAt")
		case !t.After(now):
			return time.Time{}, time.Time{}, fieldProblem(http.StatusBadRequest, "expires_in_past", "/expiresAt", "expiresAt must be in the future")
		}
		expiresAt = t.UTC()
	} else if typ.DefaultExpiry > 0 {
		expiresAt = start.Add(typ.DefaultExpiry)
	}
	return sendAt, expiresAt, nil
}

func validateUserID(id, pointer string) *Problem {
	if id == "" {
		return fieldProblem(http.StatusBadRequest, "missing_field", pointer, "userId is required")
	}
	if !validUserID(id) {
		return fieldProblem(http.StatusBadRequest, "invalid_user_id", pointer, "userId must be 1-128 characters of letters, digits and ._:|- (not an email address)")
	}
	return nil
}

// validateContacts checks the optional email, phone and locale found under
// base (a JSON pointer).
func validateContacts(email, phone, locale, base string) *Problem {
	if email != "" && !validEmail(email) {
		return fieldProblem(http.StatusBadRequest, "invalid_email", base+"/email", "email must be a plain address like name@example.com")
	}
	if phone != "" && !validE164(phone) {
		return fieldProblem(http.StatusBadRequest, "invalid_phone", base+"/phone", "phone must be E.164, like +15551234567")
	}
	if locale != "" && !validLocale(locale) {
		return fieldProblem(http.StatusBadRequest, "invalid_locale", base+"/locale", "locale must be a BCP 47 tag like ja-JP")
	}
	return nil
}

func validateKey(v, pointer string) *Problem {
	if len(v) > maxKeyLength || !plainText(v) {
		return fieldProblem(http.StatusBadRequest, "invalid_string", pointer, "must be at most 255 bytes without control or bidirectional formatting characters")
	}
	return nil
}

// decodeData decodes the data object, enforcing its size limit and that its
// keys and string values carry no control characters.
func decodeData(raw json.RawMessage) (map[string]any, *Problem) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if len(raw) > maxDataBytes {
		return nil, fieldProblem(http.StatusRequestEntityTooLarge, "data_too_large", "/data", "data exceeds 16 KiB")
	}
	if raw[0] != '{' {
		return nil, fieldProblem(http.StatusBadRequest, "invalid_type", "/data", "data must be an object")
	}
	var data map[string]any // values of any type: the catalog names the odd one
	if err := jsonv2.Unmarshal(raw, &data, strictOptions); err != nil {
		return nil, fieldProblem(http.StatusBadRequest, "invalid_type", "/data", "data must be an object")
	}
	for k, v := range data {
		if !plainText(k) {
			return nil, fieldProblem(http.StatusBadRequest, "invalid_string", "/data/"+escapePointer(k), "keys must not contain control or bidirectional formatting characters")
		}
		if s, ok := v.(string); ok && hasControl(s) {
			// Bidirectional formatting in a value: the catalog's rule for
			// the variable's kind (every declared one refuses it).
			return nil, fieldProblem(http.StatusBadRequest, "invalid_string", "/data/"+escapePointer(k), "values must not contain control characters")
		}
	}
	return data, nil
}

// dataProblem turns a catalog data error into a 422 naming the variable.
func dataProblem(err error) *Problem {
	var de *catalog.DataError
	if !errors.As(err, &de) {
		return fieldProblem(http.StatusUnprocessableEntity, "invalid_variable", "/data", err.Error())
	}
	code := "invalid_variable"
	switch {
	case de.Problem == "missing":
		code = "missing_variable"
	case de.Problem == "undeclared":
		code = "undeclared_variable"
	case errors.Is(de, catalog.ErrLinkNotAllowed):
		code = "link_not_allowed"
	}
	return fieldProblem(http.StatusUnprocessableEntity, code, "/data/"+escapePointer(de.Variable), err.Error())
}

func parseTime(s, pointer string) (time.Time, *Problem) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fieldProblem(http.StatusBadRequest, "invalid_time", pointer, "must be an RFC 3339 time like 2026-12-01T10:00:00Z")
	}
	return t, nil
}

// plainText is the rule for every string a request stores that a person
// may read (keys, labels, names, titles): no control characters, and no
// bidirectional formatting characters, which reorder what a reader sees
// ("inv-\u202egpj.exe" shows as "inv-exe.jpg").
func plainText(s string) bool {
	return !hasControl(s) && !domain.HasBidiControl(s)
}

func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c >= 0x80 {
			// Slow path only for non-ASCII (C1 controls are multi-byte).
			return strings.IndexFunc(s, unicode.IsControl) >= 0
		}
	}
	return false
}

func validateIdempotencyKey(k string) *Problem {
	bad := len(k) < 1 || len(k) > maxKeyLength
	for i := 0; i < len(k) && !bad; i++ {
		bad = k[i] < 0x20 || k[i] > 0x7e
	}
	if bad {
		return &Problem{Status: http.StatusBadRequest, Code: "invalid_idempotency_key", Header: "Idempotency-Key",
			Detail: "Idempotency-Key must be 1-255 printable ASCII characters"}
	}
	return nil
}
