package api

import (
	"context"
	"net/http"
	"testing"

	"github.com/heraldhq/herald/internal/domain"
)

type myPrefs struct {
	UserID      string                               `json:"userId"`
	Preferences map[string]map[string]preferenceCell `json:"preferences"`
	Locale      string                               `json:"locale"`
	Types       map[string]typeLabel                 `json:"types"`
	Timezone    string                               `json:"timezone"`
	QuietHours  *domain.QuietHours                   `json:"quietHours"`
	Digest      int                                  `json:"digestMinutes"`
}

func TestMyPreferences(t *testing.T) {
	ta := newTestAPI(t)
	if err := ta.store.PutUser(context.Background(), &domain.User{ID: "u1", Locale: "ja-JP", Timezone: "Asia/Tokyo",
		QuietHours: &domain.QuietHours{Start: "22:00", End: "07:00"}, DigestMinutes: 30}); err != nil {
		t.Fatal(err)
	}
	resp := ta.do(t, apiCall{route: "GET /v1/me/preferences", jwtSub: "u1"})
	if resp.StatusCode != 200 {
		t.Fatalf("GET = %d %s", resp.StatusCode, resp.Body)
	}
	v := decodeBody[myPrefs](t, resp.Body)
	if v.UserID != "u1" || v.Timezone != "Asia/Tokyo" || v.QuietHours == nil || v.QuietHours.Start != "22:00" || v.Digest != 30 || v.Locale != "ja-JP" {
		t.Errorf("profile part = %+v", v)
	}
	if l := v.Types["security.login_alert"]; l.Label != "ログイン通知" || !l.Mandatory {
		t.Errorf("label = %+v", l)
	}
	if c := v.Preferences["security.login_alert"]["email"]; c != (preferenceCell{Enabled: true, Source: "mandatory"}) {
		t.Errorf("mandatory cell = %+v", c)
	}

	// Turning email off for a type: stored for the token's user, seen by the
	// service route.
	resp = ta.do(t, apiCall{route: "PUT /v1/me/preferences", jwtSub: "u1", body: `{"preferences":{"invoice.payment_failed":{"email":false}}}`})
	if resp.StatusCode != 200 {
		t.Fatalf("PUT = %d %s", resp.StatusCode, resp.Body)
	}
	if v := decodeBody[myPrefs](t, resp.Body); v.Preferences["invoice.payment_failed"]["email"] != (preferenceCell{Enabled: false, Source: "user"}) || v.Types == nil {
		t.Errorf("PUT answered %+v", v)
	}
	svc := decodeBody[prefsView](t, ta.do(t, apiCall{route: "GET /v1/users/{userId}/preferences", params: map[string]string{"userId": "u1"}, caller: "svc"}).Body)
	if svc.Preferences["invoice.payment_failed"]["email"].Enabled {
		t.Error("the service route does not see the user's change")
	}
	// Another user's token sees only its own matrix.
	v = decodeBody[myPrefs](t, ta.do(t, apiCall{route: "GET /v1/me/preferences", jwtSub: "u2"}).Body)
	if v.UserID != "u2" || !v.Preferences["invoice.payment_failed"]["email"].Enabled || v.Locale != "en" || v.Types["security.login_alert"].Label != "Sign-in alerts" {
		t.Errorf("u2 = %+v", v)
	}
}

func TestMyPreferencesRefusals(t *testing.T) {
	ta := newTestAPI(t)
	for _, c := range []struct {
		name, route, body, sub, caller string
		status                         int
		code, pointer                  string
	}{
		{"mandatory off", "PUT", `{"preferences":{"security.login_alert":{"email":false}}}`, "u1", "", 422, "mandatory_type", "/preferences/security.login_alert/email"},
		{"mandatory off among others", "PUT", `{"preferences":{"comment.created":{"push":false},"otp.code":{"sms":false}}}`, "u1", "", 422, "mandatory_type", "/preferences/otp.code/sms"},
		{"unknown type", "PUT", `{"preferences":{"nope.nope":{"push":false}}}`, "u1", "", 422, "unknown_type", "/preferences/nope.nope"},
		{"unknown channel", "PUT", `{"preferences":{"comment.created":{"fax":false}}}`, "u1", "", 400, "invalid_channel", "/preferences/comment.created/fax"},
		{"channel the type lacks", "PUT", `{"preferences":{"comment.created":{"email":false}}}`, "u1", "", 422, "unsupported_channel", "/preferences/comment.created/email"},
		{"missing", "PUT", `{}`, "u1", "", 400, "missing_field", "/preferences"},
		{"a userId in the body", "PUT", `{"userId":"u2","preferences":{}}`, "u1", "", 400, "unknown_field", "/userId"},
		{"no token", "GET", ``, "", "", 401, "unauthenticated", ""},
		{"an IAM caller has no me", "GET", ``, "", "svc", 401, "unauthenticated", ""},
		{"an IAM caller cannot write", "PUT", `{"preferences":{}}`, "", "svc", 401, "unauthenticated", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := ta.do(t, apiCall{route: c.route + " /v1/me/preferences", body: c.body, jwtSub: c.sub, caller: c.caller})
			p := decodeProblem(t, resp)
			if resp.StatusCode != c.status || p.Code != c.code || p.Pointer != c.pointer {
				t.Errorf("= %d %s", resp.StatusCode, resp.Body)
			}
		})
	}
	if n := ta.store.writeCount(); n != 0 {
		t.Errorf("refused requests wrote %d times", n)
	}
	// Turning a mandatory type on, or back to its default, is harmless.
	resp := ta.do(t, apiCall{route: "PUT /v1/me/preferences", jwtSub: "u1", body: `{"preferences":{"security.login_alert":{"email":true,"sms":null}}}`})
	if resp.StatusCode != http.StatusOK {
		t.Errorf("mandatory on = %d %s", resp.StatusCode, resp.Body)
	}
}
