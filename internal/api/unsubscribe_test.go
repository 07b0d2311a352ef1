package api

import (
	"context"
	"encoding/json"
	"errors"
	htmltemplate "html/template"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/unsubscribe"
)

type prefCall struct {
	user, typ string
	channel   domain.Channel
	enabled   bool
}

type fakePrefs struct {
	calls []prefCall
	err   error
}

func (f *fakePrefs) SetPreference(_ context.Context, user, typ string, c domain.Channel, enabled bool) error {
	f.calls = append(f.calls, prefCall{user, typ, c, enabled})
	return f.err
}

type tokens struct{ s *unsubscribe.Signer }

func (t tokens) Verify(_ context.Context, tok string) (unsubscribe.Claims, error) {
	return t.s.Verify(tok)
}

func TestUnsubscribeRoutes(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	signer, err := unsubscribe.NewSigner([]byte(strings.Repeat("k", 32)), time.Hour, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	old, _ := unsubscribe.NewSigner([]byte(strings.Repeat("k", 32)), time.Hour, func() time.Time { return now.Add(-2 * time.Hour) })
	good := signer.Token("u1", "reservation.approved")
	tests := []struct {
		name, method, token string
		storeErr            error
		status              int
		code                string
		wantCall            bool
		page                string
	}{
		{"GET confirms and changes nothing", http.MethodGet, good, nil, 200, "", false, "<form method=\"post\">"},
		{"POST unsubscribes", http.MethodPost, good, nil, 200, "", true, "no longer receive emails about <b>reservation.approved</b>"},
		{"no token", http.MethodPost, "", nil, 400, "unsubscribe_token_invalid", false, ""},
		{"tampered", http.MethodPost, good + "x", nil, 400, "unsubscribe_token_invalid", false, ""},
		{"expired", http.MethodPost, old.Token("u1", "reservation.approved"), nil, 410, "unsubscribe_token_expired", false, ""},
		{"mandatory type", http.MethodPost, signer.Token("u1", "security.login_alert"), nil, 422, "type_not_unsubscribable", false, ""},
		{"unknown type", http.MethodGet, signer.Token("u1", "gone.type"), nil, 422, "type_not_unsubscribable", false, ""},
		{"store failure", http.MethodPost, good, errors.New("boom"), 500, "internal", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &fakePrefs{err: tt.storeErr}
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			h := New(Deps{Log: log, Unsubscribe: NewUnsubscribe(UnsubscribeDeps{Store: store, Tokens: tokens{signer}, Catalog: catalog.MustLoad(), Log: log})})
			ev := events.APIGatewayV2HTTPRequest{RouteKey: tt.method + " /v1/unsubscribe"}
			if tt.method == http.MethodPost {
				ev.Body, ev.Headers = "List-Unsubscribe=One-Click", map[string]string{"content-type": "application/x-www-form-urlencoded"}
			}
			if tt.token != "" {
				ev.QueryStringParameters = map[string]string{"token": tt.token}
			}
			// No authorizer: the route is public (Auth: NONE).
			resp, err := h.Handle(context.Background(), ev)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, resp.Body)
			}
			if tt.code != "" {
				var p Problem
				if err := json.Unmarshal([]byte(resp.Body), &p); err != nil || p.Code != tt.code || resp.Headers["Content-Type"] != "application/problem+json" {
					t.Fatalf("problem %s (%v), want code %s", resp.Body, err, tt.code)
				}
			}
			if tt.page != "" && (!strings.Contains(resp.Body, tt.page) || !strings.HasPrefix(resp.Headers["Content-Type"], "text/html")) {
				t.Fatalf("page %q (%s), want it to contain %q", resp.Body, resp.Headers["Content-Type"], tt.page)
			}
			if got := len(store.calls) == 1; got != tt.wantCall {
				t.Fatalf("store calls %v", store.calls)
			}
			if tt.wantCall && store.calls[0] != (prefCall{"u1", "reservation.approved", domain.ChannelEmail, false}) {
				t.Fatalf("store call %+v", store.calls[0])
			}
		})
	}
}

// RFC 8058: the one-click POST carries List-Unsubscribe=One-Click; anything
// else changes nothing (a scanner or a stray form post must not unsubscribe).
func TestUnsubscribePostRequiresOneClickBody(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	signer, err := unsubscribe.NewSigner([]byte(strings.Repeat("k", 32)), time.Hour, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	good := signer.Token("u1", "reservation.approved")
	const form = "application/x-www-form-urlencoded"
	for _, tc := range []struct {
		name, body, contentType string
		status                  int
		code                    string
	}{
		{"one-click", "List-Unsubscribe=One-Click", form, 200, ""},
		{"one-click with charset", "List-Unsubscribe=One-Click", form + "; charset=utf-8", 200, ""},
		{"one-click among other fields", "a=b&List-Unsubscribe=One-Click", form, 200, ""},
		{"no body", "", "", 400, "one_click_required"},
		{"other value", "List-Unsubscribe=Yes", form, 400, "one_click_required"},
		{"other field", "unsubscribe=1", form, 400, "one_click_required"},
		{"JSON body", `{"List-Unsubscribe":"One-Click"}`, "application/json", 415, "unsupported_media_type"},
		{"form without its media type", "List-Unsubscribe=One-Click", "text/plain", 415, "unsupported_media_type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &fakePrefs{}
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			h := New(Deps{Log: log, Unsubscribe: NewUnsubscribe(UnsubscribeDeps{Store: store, Tokens: tokens{signer}, Catalog: catalog.MustLoad(), Log: log})})
			ev := events.APIGatewayV2HTTPRequest{RouteKey: "POST /v1/unsubscribe", Body: tc.body,
				QueryStringParameters: map[string]string{"token": good}, Headers: map[string]string{}}
			if tc.contentType != "" {
				ev.Headers["content-type"] = tc.contentType
			}
			resp, err := h.Handle(context.Background(), ev)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, resp.Body)
			}
			if tc.code != "" {
				var p Problem
				if err := json.Unmarshal([]byte(resp.Body), &p); err != nil || p.Code != tc.code {
					t.Fatalf("problem %s, want code %s", resp.Body, tc.code)
				}
			}
			if changed := len(store.calls) > 0; changed != (tc.status == 200) {
				t.Fatalf("store calls %v", store.calls)
			}
		})
	}
}

// TestOtherRoutesStillRequireAuth: the public exception is exactly the
// unsubscribe routes.
func TestOtherRoutesStillRequireAuth(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := New(Deps{Log: log, Unsubscribe: NewUnsubscribe(UnsubscribeDeps{Catalog: catalog.MustLoad(), Log: log})})
	resp, _ := h.Handle(context.Background(), events.APIGatewayV2HTTPRequest{RouteKey: "POST /v1/notifications", Body: "{}"})
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401", resp.StatusCode)
	}
	resp, _ = h.Handle(context.Background(), events.APIGatewayV2HTTPRequest{RouteKey: "GET /v1/unsubscribe"})
	if resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("unconfigured unsubscribe: status %d, want 500", resp.StatusCode)
	}
}

// The page assembled by hand is byte for byte what the html/template it
// replaced rendered, for every type name that can reach it (a type of the
// catalog), and escapes any other name.
func TestUnsubscribePageMatchesTheTemplate(t *testing.T) {
	old := htmltemplate.Must(htmltemplate.New("unsubscribe").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<meta name="robots" content="noindex"><title>Unsubscribe</title></head><body>
{{if .Confirm}}<p>Stop emails about <b>{{.Type}}</b>?</p>
<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click"><button type="submit">Unsubscribe</button></form>
{{else}}<p>You will no longer receive emails about <b>{{.Type}}</b>. You can turn them back on in your notification settings.</p>{{end}}
</body></html>
`))
	for _, name := range catalog.MustLoad().Names() {
		for _, confirm := range []bool{true, false} {
			page := unsubscribePage{Type: name, Confirm: confirm}
			var want strings.Builder
			if err := old.Execute(&want, page); err != nil {
				t.Fatal(err)
			}
			if got := string(page.render()); got != want.String() {
				t.Errorf("%s confirm=%v:\n got %q\nwant %q", name, confirm, got, want.String())
			}
		}
	}
	got := string(unsubscribePage{Type: `<script>"x'&`}.render())
	if !strings.Contains(got, "<b>&lt;script&gt;&#34;x&#39;&amp;</b>") {
		t.Errorf("name not escaped: %q", got)
	}
}
