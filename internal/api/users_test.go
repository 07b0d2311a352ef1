package api

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"testing"

	"time"
	_ "time/tzdata" // as in the api function: zones must not depend on the host

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/webpush"
)

func TestUserRoundTrip(t *testing.T) {
	ta := newTestAPI(t)
	u1 := map[string]string{"userId": "u1"}
	body := `{"email":"ann@example.com","phone":"+819012345678","locale":"ja-JP","timezone":"Asia/Tokyo","quietHours":{"start":"22:00","end":"07:30"},"digestMinutes":30}`
	resp := ta.do(t, apiCall{route: "PUT /v1/users/{userId}", params: u1, body: body, caller: "svc"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT = %d %s", resp.StatusCode, resp.Body)
	}
	got := ta.do(t, apiCall{route: "GET /v1/users/{userId}", params: u1, caller: "svc"})
	v := decodeBody[userView](t, got.Body)
	if got.StatusCode != 200 || v.UserID != "u1" || v.Email != "ann@example.com" || v.Phone != "+819012345678" || v.Locale != "ja-JP" ||
		v.Timezone != "Asia/Tokyo" || v.QuietHours == nil || *v.QuietHours != (domain.QuietHours{Start: "22:00", End: "07:30"}) ||
		v.DigestMinutes != 30 || v.EmailSuppressed || v.UpdatedAt == "" {
		t.Fatalf("GET = %d %s", got.StatusCode, got.Body)
	}
	if got.Body != resp.Body {
		t.Errorf("PUT answered %s, GET %s", resp.Body, got.Body)
	}
	// PUT replaces: what is left out is cleared.
	ta.do(t, apiCall{route: "PUT /v1/users/{userId}", params: u1, body: `{"email":"ann@example.com"}`, caller: "svc"})
	v = decodeBody[userView](t, ta.do(t, apiCall{route: "GET /v1/users/{userId}", params: u1, caller: "svc"}).Body)
	if v.Phone != "" || v.QuietHours != nil || v.Timezone != "" || v.DigestMinutes != 0 {
		t.Fatalf("after replace: %+v", v)
	}
}

func TestUserEmailSuppression(t *testing.T) {
	ta := newTestAPI(t)
	ta.store.users["u1"] = &domain.User{ID: "u1", Email: "ann@example.com", SuppressedEmail: "ann@example.com"}
	u1 := map[string]string{"userId": "u1"}
	// The same address stays suppressed.
	v := decodeBody[userView](t, ta.do(t, apiCall{route: "PUT /v1/users/{userId}", params: u1, body: `{"email":"ann@example.com","locale":"en"}`, caller: "svc"}).Body)
	if !v.EmailSuppressed {
		t.Fatalf("suppression lost without an email change: %+v", v)
	}
	// A new address lifts it.
	v = decodeBody[userView](t, ta.do(t, apiCall{route: "PUT /v1/users/{userId}", params: u1, body: `{"email":"ann@example.org"}`, caller: "svc"}).Body)
	if v.EmailSuppressed || ta.store.users["u1"].SuppressedEmail != "" {
		t.Fatalf("suppression kept after an email change: %+v", ta.store.users["u1"])
	}
}

func TestTimezones(t *testing.T) {
	for _, tz := range []string{"UTC", "Asia/Tokyo", "America/Argentina/Buenos_Aires", "Etc/GMT+9", "Europe/London"} {
		if !validTimezone(tz) {
			t.Errorf("%s rejected", tz)
		}
	}
	for _, tz := range []string{"Local", "Asia/Atlantis", "../UTC", "Asia//Tokyo", "/etc/localtime", "Asia/Tokyo ", "JST+9"} {
		if validTimezone(tz) {
			t.Errorf("%q accepted", tz)
		}
	}
}

func pushSubscriptionBody(t testing.TB, endpoint string) string {
	return fmt.Sprintf(`{"endpoint":%q,"expirationTime":null,"keys":{"p256dh":%q,"auth":%q}}`,
		endpoint, p256dhKey(t), base64.RawURLEncoding.EncodeToString([]byte("0123456789abcdef")))
}

func TestPushSubscriptions(t *testing.T) {
	ta := newTestAPI(t)
	u1 := map[string]string{"userId": "u1"}
	body := pushSubscriptionBody(t, "https://fcm.googleapis.com/fcm/send/abc")
	resp := ta.do(t, apiCall{route: "POST /v1/users/{userId}/push-subscriptions", params: u1, body: body, caller: "svc"})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST = %d %s", resp.StatusCode, resp.Body)
	}
	v := decodeBody[subscriptionView](t, resp.Body)
	if !validSubscriptionID(v.ID) || resp.Headers["Location"] != "/v1/users/u1/push-subscriptions/"+v.ID {
		t.Fatalf("created %s %v", resp.Body, resp.Headers)
	}
	stored := ta.store.subs["u1"][v.ID]
	if stored.Endpoint != "https://fcm.googleapis.com/fcm/send/abc" || stored.P256dh == "" || stored.Auth == "" {
		t.Fatalf("stored %+v", stored)
	}
	// The same browser registering again (new keys) replaces it: 200, same id.
	again := ta.do(t, apiCall{route: "POST /v1/users/{userId}/push-subscriptions", params: u1, caller: "svc",
		body: pushSubscriptionBody(t, "https://fcm.googleapis.com/fcm/send/abc")})
	if again.StatusCode != http.StatusOK || decodeBody[subscriptionView](t, again.Body).ID != v.ID || len(ta.store.subs["u1"]) != 1 {
		t.Fatalf("re-register = %d %s", again.StatusCode, again.Body)
	}
	del := apiCall{route: "DELETE /v1/users/{userId}/push-subscriptions/{subscriptionId}", params: map[string]string{"userId": "u1", "subscriptionId": v.ID}, caller: "svc"}
	if resp := ta.do(t, del); resp.StatusCode != http.StatusNoContent || resp.Body != "" {
		t.Fatalf("DELETE = %d %s", resp.StatusCode, resp.Body)
	}
	if resp := ta.do(t, del); resp.StatusCode != http.StatusNotFound || decodeProblem(t, resp).Code != "subscription_not_found" {
		t.Fatalf("second DELETE = %d %s", resp.StatusCode, resp.Body)
	}
}

func TestLoopbackPushEndpointsOnlyWhenAllowed(t *testing.T) {
	body := pushSubscriptionBody(t, "http://127.0.0.1:3000/_dev/push/x")
	for _, allow := range []bool{false, true} {
		ta := newTestAPI(t)
		ta.users.pushLoopback = allow
		ta.users.pushHosts = localPushHosts(t)
		resp := ta.do(t, apiCall{route: "POST /v1/users/{userId}/push-subscriptions", params: map[string]string{"userId": "u1"}, body: body, caller: "svc"})
		if want := map[bool]int{false: 422, true: 201}[allow]; resp.StatusCode != want {
			t.Errorf("allow=%v: %d %s", allow, resp.StatusCode, resp.Body)
		}
	}
	// Never a non-loopback http endpoint, even when allowed.
	ta := newTestAPI(t)
	ta.users.pushLoopback = true
	ta.users.pushHosts = localPushHosts(t)
	resp := ta.do(t, apiCall{route: "POST /v1/users/{userId}/push-subscriptions", params: map[string]string{"userId": "u1"}, caller: "svc",
		body: pushSubscriptionBody(t, "http://push.example.com/x")})
	if resp.StatusCode != 400 {
		t.Errorf("http non-loopback = %d", resp.StatusCode)
	}
}

type prefsView = preferencesView

func TestPreferences(t *testing.T) {
	ta := newTestAPI(t)
	u1 := map[string]string{"userId": "u1"}
	get := func() prefsView {
		resp := ta.do(t, apiCall{route: "GET /v1/users/{userId}/preferences", params: u1, caller: "svc"})
		if resp.StatusCode != 200 {
			t.Fatalf("GET = %d %s", resp.StatusCode, resp.Body)
		}
		return decodeBody[prefsView](t, resp.Body)
	}
	v := get()
	if len(v.Preferences) != len(catalog.MustLoad().Names()) || v.UserID != "u1" {
		t.Fatalf("matrix = %+v", v)
	}
	if c := v.Preferences["comment.created"]["push"]; c != (preferenceCell{Enabled: true, Source: "default"}) {
		t.Errorf("default = %+v", c)
	}
	if _, ok := v.Preferences["comment.created"]["email"]; ok {
		t.Error("matrix lists a channel the type does not use")
	}
	if c := v.Preferences["security.login_alert"]["sms"]; c != (preferenceCell{Enabled: true, Source: "mandatory"}) {
		t.Errorf("mandatory = %+v", c)
	}
	put := func(body string) prefsView {
		resp := ta.do(t, apiCall{route: "PUT /v1/users/{userId}/preferences", params: u1, body: body, caller: "svc"})
		if resp.StatusCode != 200 {
			t.Fatalf("PUT %s = %d %s", body, resp.StatusCode, resp.Body)
		}
		return decodeBody[prefsView](t, resp.Body)
	}
	v = put(`{"preferences":{"comment.created":{"push":false},"security.login_alert":{"email":false},"invoice.payment_failed":{"email":false}}}`)
	if c := v.Preferences["comment.created"]["push"]; c != (preferenceCell{Enabled: false, Source: "user"}) {
		t.Errorf("override = %+v", c)
	}
	if c := v.Preferences["security.login_alert"]["email"]; c != (preferenceCell{Enabled: true, Source: "mandatory"}) {
		t.Errorf("overridden mandatory = %+v", c)
	}
	// Merge: a later PUT keeps what it does not mention; null removes.
	v = put(`{"preferences":{"invoice.payment_failed":{"email":null,"push":false}}}`)
	if c := v.Preferences["comment.created"]["push"]; c.Source != "user" || c.Enabled {
		t.Errorf("merge lost an override: %+v", c)
	}
	if c := v.Preferences["invoice.payment_failed"]["email"]; c != (preferenceCell{Enabled: true, Source: "default"}) {
		t.Errorf("null did not restore the default: %+v", c)
	}
	if c := v.Preferences["invoice.payment_failed"]["push"]; c != (preferenceCell{Enabled: false, Source: "user"}) {
		t.Errorf("push = %+v", c)
	}
	if got := get(); fmt.Sprint(got) != fmt.Sprint(v) {
		t.Errorf("GET after PUT = %+v, PUT answered %+v", got, v)
	}
	// An empty merge writes nothing.
	writes := ta.store.writeCount()
	put(`{"preferences":{}}`)
	if ta.store.writeCount() != writes {
		t.Error("empty merge wrote")
	}
}

func TestStoreConflictIs409(t *testing.T) {
	ta := newTestAPI(t)
	ta.store.fail = fmt.Errorf("merge preferences of u1: %w", domain.ErrConflict)
	for _, c := range []apiCall{
		{route: "PUT /v1/users/{userId}", body: `{}`},
		{route: "PUT /v1/users/{userId}/preferences", body: `{"preferences":{"comment.created":{"push":false}}}`},
	} {
		c.params, c.caller = map[string]string{"userId": "u1"}, "svc"
		resp := ta.do(t, c)
		if p := decodeProblem(t, resp); resp.StatusCode != http.StatusConflict || p.Code != "conflict" {
			t.Errorf("%s = %d %s", c.route, resp.StatusCode, resp.Body)
		}
	}
}

func localPushHosts(t *testing.T) webpush.HostList {
	t.Helper()
	l, err := webpush.ParseHostList("127.0.0.1:3000,push.example.com")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A user's browser subscriptions are bounded as devices are: registering one
// more than domain.MaxPushSubscriptionsPerUser evicts the oldest, so a push
// never fans out to an unbounded list (issue 36, 10a).
func TestPushSubscriptionBoundEvictsTheOldest(t *testing.T) {
	ta := newTestAPI(t)
	at := testNow
	ta.users.now = func() time.Time { at = at.Add(time.Second); return at }
	var ids []string
	for i := range domain.MaxPushSubscriptionsPerUser + 2 {
		resp := ta.do(t, apiCall{route: "POST /v1/users/{userId}/push-subscriptions", params: map[string]string{"userId": "u1"}, caller: "svc",
			body: pushSubscriptionBody(t, fmt.Sprintf("https://fcm.googleapis.com/fcm/send/browser-%d", i))})
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("subscription %d: %d %s", i, resp.StatusCode, resp.Body)
		}
		ids = append(ids, decodeBody[subscriptionView](t, resp.Body).ID)
	}
	left := ta.store.subs["u1"]
	if len(left) != domain.MaxPushSubscriptionsPerUser {
		t.Fatalf("%d subscriptions left, want %d", len(left), domain.MaxPushSubscriptionsPerUser)
	}
	for i, id := range ids {
		if _, kept := left[id]; kept != (i >= 2) {
			t.Errorf("subscription %d kept=%v, want the two oldest evicted", i, kept)
		}
	}
	// Registering a kept browser again replaces it and evicts nothing.
	resp := ta.do(t, apiCall{route: "POST /v1/users/{userId}/push-subscriptions", params: map[string]string{"userId": "u1"}, caller: "svc",
		body: pushSubscriptionBody(t, "https://fcm.googleapis.com/fcm/send/browser-2")})
	if resp.StatusCode != http.StatusOK || len(ta.store.subs["u1"]) != domain.MaxPushSubscriptionsPerUser {
		t.Errorf("re-register: %d, %d left", resp.StatusCode, len(ta.store.subs["u1"]))
	}
}
