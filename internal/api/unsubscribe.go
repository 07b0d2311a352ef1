package api

import (
	"bytes"
	"context"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"slices"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/unsubscribe"
)

// UnsubscribeStore turns one preference off.
type UnsubscribeStore interface {
	SetPreference(ctx context.Context, userID, notificationType string, c domain.Channel, enabled bool) error
}

// UnsubscribeTokens verifies one-click unsubscribe tokens. It takes a context
// because the secret may be fetched on first use.
type UnsubscribeTokens interface {
	Verify(ctx context.Context, token string) (unsubscribe.Claims, error)
}

// UnsubscribeHandler serves the one-click unsubscribe links of emails
// (public: the signed token is their authentication).
type UnsubscribeHandler struct {
	responder
	store   UnsubscribeStore
	tokens  UnsubscribeTokens
	catalog *catalog.Catalog
}

// UnsubscribeDeps are the unsubscribe routes' collaborators. Catalog and Log
// are required; without Store or Tokens the routes answer 500 and log that
// unsubscribe is not configured.
type UnsubscribeDeps struct {
	Store   UnsubscribeStore
	Tokens  UnsubscribeTokens
	Catalog *catalog.Catalog
	Log     *slog.Logger
}

// NewUnsubscribe wires the unsubscribe routes.
func NewUnsubscribe(d UnsubscribeDeps) *UnsubscribeHandler {
	return &UnsubscribeHandler{responder: responder{log: d.Log}, store: d.Store, tokens: d.Tokens, catalog: d.Catalog}
}

// showUnsubscribe and confirmUnsubscribe serve the List-Unsubscribe link of
// every non-mandatory email (RFC 8058). GET shows a confirmation page and
// changes nothing (link scanners and prefetchers follow GETs); POST — the
// mailbox provider's one-click request with the body
// "List-Unsubscribe=One-Click", or the page's button — turns the type's email
// preference off. Both are idempotent.
func (h *UnsubscribeHandler) showUnsubscribe(ctx context.Context, req *request) response {
	claims, p := h.verifyUnsubscribe(ctx, req)
	if p != nil {
		return problemResponse(p)
	}
	return htmlPage(http.StatusOK, unsubscribePage{Type: claims.Type, Confirm: true})
}

func (h *UnsubscribeHandler) confirmUnsubscribe(ctx context.Context, req *request) response {
	if p := oneClick(req); p != nil {
		return problemResponse(p)
	}
	claims, p := h.verifyUnsubscribe(ctx, req)
	if p != nil {
		return problemResponse(p)
	}
	if err := h.store.SetPreference(ctx, claims.UserID, claims.Type, domain.ChannelEmail, false); err != nil {
		return h.internalError(ctx, "unsubscribe: set preference", err)
	}
	h.log.InfoContext(ctx, "unsubscribed", "userId", claims.UserID, "type", claims.Type, "channel", domain.ChannelEmail)
	return htmlPage(http.StatusOK, unsubscribePage{Type: claims.Type})
}

// oneClick requires the RFC 8058 body, List-Unsubscribe=One-Click (the
// Content-Type, a URL-encoded form, is checked with every body's).
func oneClick(req *request) *Problem {
	body, p := readBodyLimit(req, 4<<10, "4 KiB")
	if p != nil {
		return p
	}
	form, err := url.ParseQuery(string(body))
	if err != nil || !slices.Contains(form["List-Unsubscribe"], "One-Click") {
		return &Problem{Status: http.StatusBadRequest, Code: "one_click_required", Title: "Not a one-click unsubscribe request",
			Detail: "the body must be List-Unsubscribe=One-Click (RFC 8058)"}
	}
	return nil
}

func (h *UnsubscribeHandler) verifyUnsubscribe(ctx context.Context, req *request) (unsubscribe.Claims, *Problem) {
	if h.store == nil || h.tokens == nil {
		h.log.ErrorContext(ctx, "unsubscribe is not configured")
		return unsubscribe.Claims{}, &Problem{Status: http.StatusInternalServerError, Code: "internal", Title: "Internal error"}
	}
	claims, err := h.tokens.Verify(ctx, req.QueryStringParameters["token"])
	switch {
	case errors.Is(err, unsubscribe.ErrExpired):
		return claims, &Problem{Status: http.StatusGone, Code: "unsubscribe_token_expired", Title: "The unsubscribe link has expired",
			Detail: "Change your notification settings in the app instead."}
	case errors.Is(err, unsubscribe.ErrInvalid):
		return claims, &Problem{Status: http.StatusBadRequest, Code: "unsubscribe_token_invalid", Title: "The unsubscribe link is not valid"}
	case err != nil:
		h.log.ErrorContext(ctx, "unsubscribe: verify token", "error", err)
		return claims, &Problem{Status: http.StatusInternalServerError, Code: "internal", Title: "Internal error"}
	}
	t, ok := h.catalog.Lookup(claims.Type)
	if !ok || t.Mandatory {
		return claims, &Problem{Status: http.StatusUnprocessableEntity, Code: "type_not_unsubscribable", Title: "These emails cannot be turned off"}
	}
	return claims, nil
}

type unsubscribePage struct {
	Type    string
	Confirm bool
}

// unsubscribeTemplate is the page; html/template escapes the one value, the
// type's name. The form posts to the page's own URL (with its token).
var unsubscribeTemplate = template.Must(template.New("unsubscribe").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<meta name="robots" content="noindex"><title>Unsubscribe</title></head><body>
{{if .Confirm}}<p>Stop emails about <b>{{.Type}}</b>?</p>
<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click"><button type="submit">Unsubscribe</button></form>
{{else}}<p>You will no longer receive emails about <b>{{.Type}}</b>. You can turn them back on in your notification settings.</p>{{end}}
</body></html>
`))

// render writes the page.
func (p unsubscribePage) render() []byte {
	var b bytes.Buffer
	if err := unsubscribeTemplate.Execute(&b, p); err != nil {
		panic(err) // the template is fixed and its data two plain fields
	}
	return b.Bytes()
}

func htmlPage(status int, page unsubscribePage) response {
	return response{status: status, body: rawBody(page.render()), headers: map[string]string{
		"Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store", "Referrer-Policy": "no-referrer",
	}}
}
