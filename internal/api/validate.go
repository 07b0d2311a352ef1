package api

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/mail"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
)

var (
	e164        = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)
	userIDShape = regexp.MustCompile(`^[A-Za-z0-9._:@|-]{1,128}$`)
)

const maxDataBytes = 16 << 10

func (h *Handler) validateNotification(nr *notificationRequest) (*domain.Notification, *Problem) {
	now := h.now()
	if nr.Type == "" {
		return nil, fieldProblem(http.StatusBadRequest, "missing_field", "/type", "type is required")
	}
	typ, ok := h.catalog.Lookup(nr.Type)
	if !ok {
		return nil, fieldProblem(http.StatusUnprocessableEntity, "unknown_type", "/type", fmt.Sprintf("type %q is not in the catalog", nr.Type))
	}
	r := nr.Recipient
	if r.UserID == "" {
		return nil, fieldProblem(http.StatusBadRequest, "missing_field", "/recipient/userId", "recipient.userId is required")
	}
	if !userIDShape.MatchString(r.UserID) {
		return nil, fieldProblem(http.StatusBadRequest, "invalid_user_id", "/recipient/userId", "userId must be 1-128 characters of letters, digits and ._:@|-")
	}
	if r.Email != "" && !validEmail(r.Email) {
		return nil, fieldProblem(http.StatusBadRequest, "invalid_email", "/recipient/email", "email must be a plain address like name@example.com")
	}
	if r.Phone != "" && !e164.MatchString(r.Phone) {
		return nil, fieldProblem(http.StatusBadRequest, "invalid_phone", "/recipient/phone", "phone must be E.164, like +15551234567")
	}
	if r.Locale != "" && !validLocale(r.Locale) {
		return nil, fieldProblem(http.StatusBadRequest, "invalid_locale", "/recipient/locale", "locale must be a BCP 47 tag like ja-JP")
	}
	n := &domain.Notification{
		Type: nr.Type, Recipient: domain.Recipient(r), Data: nr.Data, Priority: typ.Priority,
		ResourceID: nr.ResourceID, BatchKey: nr.BatchKey, CreatedAt: now, Status: domain.NotificationAccepted,
	}
	if nr.Priority != "" {
		p, err := domain.ParsePriority(nr.Priority)
		if err != nil {
			return nil, fieldProblem(http.StatusBadRequest, "invalid_priority", "/priority", "priority must be high, normal or low")
		}
		n.Priority = p
	}
	for i, s := range nr.Channels {
		c, err := domain.ParseChannel(s)
		if err != nil {
			return nil, fieldProblem(http.StatusBadRequest, "invalid_channel", fmt.Sprintf("/channels/%d", i), "channel must be email, sms or push")
		}
		n.Channels = append(n.Channels, c)
	}
	for _, f := range []struct{ v, ptr string }{{nr.ResourceID, "/resourceId"}, {nr.BatchKey, "/batchKey"}} {
		if len(f.v) > 255 || hasControl(f.v) {
			return nil, fieldProblem(http.StatusBadRequest, "invalid_string", f.ptr, "must be at most 255 characters without control characters")
		}
	}
	if raw, _ := json.Marshal(nr.Data); len(raw) > maxDataBytes {
		return nil, fieldProblem(http.StatusRequestEntityTooLarge, "data_too_large", "/data", "data exceeds 16 KiB")
	}
	if err := typ.ValidateData(nr.Data); err != nil {
		var de *catalog.DataError
		if errors.As(err, &de) {
			code := "invalid_variable"
			switch de.Problem {
			case "missing":
				code = "missing_variable"
			case "undeclared":
				code = "undeclared_variable"
			}
			return nil, fieldProblem(http.StatusUnprocessableEntity, code, "/data/"+escapePointer(de.Variable), err.Error())
		}
		return nil, fieldProblem(http.StatusUnprocessableEntity, "invalid_variable", "/data", err.Error())
	}
	if nr.SendAt != nil {
		if nr.SendAt.Before(now.Add(-time.Minute)) || nr.SendAt.After(now.AddDate(1, 0, 0)) {
			return nil, fieldProblem(http.StatusBadRequest, "invalid_send_at", "/sendAt", "sendAt must be between one minute ago and one year ahead")
		}
		n.SendAt = nr.SendAt.UTC()
	}
	if nr.ExpiresAt != nil {
		earliest := now
		if nr.SendAt != nil {
			earliest = *nr.SendAt
		}
		if !nr.ExpiresAt.After(earliest) {
			return nil, fieldProblem(http.StatusBadRequest, "invalid_expires_at", "/expiresAt", "expiresAt must be after sendAt and in the future")
		}
		n.ExpiresAt = nr.ExpiresAt.UTC()
	} else if typ.DefaultExpiry > 0 {
		start := now
		if !n.SendAt.IsZero() && n.SendAt.After(now) {
			start = n.SendAt
		}
		n.ExpiresAt = start.Add(typ.DefaultExpiry)
	}
	return n, nil
}

func validEmail(s string) bool {
	if len(s) > 254 || hasControl(s) {
		return false
	}
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address == s && a.Name == "" && strings.Contains(s[strings.LastIndexByte(s, '@'):], ".")
}

var localeShape = regexp.MustCompile(`^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$`)

func validLocale(s string) bool { return len(s) <= 35 && localeShape.MatchString(s) }

func hasControl(s string) bool {
	return strings.IndexFunc(s, unicode.IsControl) >= 0
}

func validateIdempotencyKey(k string) *Problem {
	if len(k) < 1 || len(k) > 255 {
		return fieldProblem(http.StatusBadRequest, "invalid_idempotency_key", "", "Idempotency-Key must be 1-255 printable ASCII characters")
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return fieldProblem(http.StatusBadRequest, "invalid_idempotency_key", "", "Idempotency-Key must be 1-255 printable ASCII characters")
		}
	}
	return nil
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func decodeBase64(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }

// jsonProblem turns a decoding error into a 400 naming the field where possible.
func jsonProblem(err error) *Problem {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var tim *time.ParseError
	switch {
	case errors.As(err, &syn):
		return &Problem{Status: http.StatusBadRequest, Code: "invalid_json", Detail: "body is not valid JSON"}
	case errors.As(err, &typ):
		ptr := "/" + strings.ReplaceAll(typ.Field, ".", "/")
		return fieldProblem(http.StatusBadRequest, "invalid_type", ptr, fmt.Sprintf("%s must be %s", typ.Field, typ.Type))
	case errors.As(err, &tim):
		return &Problem{Status: http.StatusBadRequest, Code: "invalid_time", Detail: "times must be RFC 3339, like 2026-12-01T10:00:00Z"}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return fieldProblem(http.StatusBadRequest, "unknown_field", "/"+name, fmt.Sprintf("unknown field %q", name))
	case errors.Is(err, io.EOF):
		return &Problem{Status: http.StatusBadRequest, Code: "invalid_json", Detail: "body is empty"}
	}
	return &Problem{Status: http.StatusBadRequest, Code: "invalid_json", Detail: "body is not valid JSON"}
}
