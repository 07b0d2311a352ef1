package intake

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
)

type userView struct {
	UserID          string `json:"userId"`
	Email           string `json:"email"`
	Phone           string `json:"phone"`
	Locale          string `json:"locale"`
	Timezone        string `json:"timezone"`
	QuietHours      *domain.QuietHours
	DigestMinutes   int  `json:"digestMinutes"`
	EmailSuppressed bool `json:"emailSuppressed"`
}

func putUser(t *testing.T, user, body string) userView {
	t.Helper()
	resp := stacktest.Do(t, http.MethodPut, "/v1/users/"+user, body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT user = %d %s", resp.StatusCode, resp.Body)
	}
	var v userView
	resp.JSON(t, &v)
	return v
}

func TestUserRoundTrip(t *testing.T) {
	user := stacktest.UniqueID("user")
	mustProblem(t, stacktest.Do(t, http.MethodGet, "/v1/users/"+user, nil), http.StatusNotFound, "user_not_found")
	putUser(t, user, `{"email":"ann@example.com","phone":"+819012345678","locale":"ja-JP","timezone":"Asia/Tokyo",
		"quietHours":{"start":"22:00","end":"07:00"},"digestMinutes":15}`)
	get := stacktest.Do(t, http.MethodGet, "/v1/users/"+user, nil)
	var v userView
	get.JSON(t, &v)
	if v.UserID != user || v.Email != "ann@example.com" || v.Phone != "+819012345678" || v.Locale != "ja-JP" ||
		v.Timezone != "Asia/Tokyo" || v.QuietHours == nil || v.QuietHours.End != "07:00" || v.DigestMinutes != 15 || v.EmailSuppressed {
		t.Fatalf("GET = %s", get.Body)
	}
	// The relay and workers read the same profile.
	st := stacktest.Store(t)
	p, err := st.GetRecipientProfile(context.Background(), user)
	if err != nil || p.User == nil || p.User.Timezone != "Asia/Tokyo" || p.User.QuietHours.Start != "22:00" {
		t.Fatalf("profile = %+v, %v", p, err)
	}
	mustProblem(t, stacktest.Do(t, http.MethodPut, "/v1/users/"+user, `{"timezone":"Asia/Atlantis"}`), http.StatusBadRequest, "invalid_timezone")
	// A refused PUT changed nothing.
	get.JSON(t, &v)
	if again := stacktest.Do(t, http.MethodGet, "/v1/users/"+user, nil); string(again.Body) != string(get.Body) {
		t.Fatalf("profile changed by a refused PUT: %s", again.Body)
	}
}

func TestChangingEmailLiftsSuppression(t *testing.T) {
	user := stacktest.UniqueID("suppressed")
	st := stacktest.Store(t)
	ctx := context.Background()
	// What email feedback records after a hard bounce.
	if err := st.PutUser(ctx, &domain.User{ID: user, Email: "old@example.com", SuppressedEmail: "old@example.com"}); err != nil {
		t.Fatal(err)
	}
	if v := putUser(t, user, `{"email":"old@example.com","locale":"en"}`); !v.EmailSuppressed {
		t.Fatal("suppression lifted without an email change")
	}
	if v := putUser(t, user, `{"email":"new@example.com"}`); v.EmailSuppressed {
		t.Fatal("suppression kept after the email changed")
	}
	u, err := st.GetUser(ctx, user)
	if err != nil || u.SuppressedEmail != "" {
		t.Fatalf("stored = %+v, %v", u, err)
	}
	// Back to the old address: it is no longer suppressed (the change lifted it).
	if v := putUser(t, user, `{"email":"old@example.com"}`); v.EmailSuppressed {
		t.Fatal("suppression came back")
	}
}

func TestPushSubscriptionRoundTrip(t *testing.T) {
	user := stacktest.UniqueID("push")
	// A browser-like subscription from the local push service.
	var sub struct {
		ID             string          `json:"id"`
		Endpoint       string          `json:"endpoint"`
		ExpirationTime *int64          `json:"expirationTime"`
		Keys           json.RawMessage `json:"keys"`
	}
	stacktest.Do(t, http.MethodPost, "/_dev/push-subscriptions", nil).JSON(t, &sub)
	// What PushSubscription.toJSON() gives the page (the sink's own id is not part of it).
	body := fmt.Sprintf(`{"endpoint":%q,"expirationTime":null,"keys":%s}`, sub.Endpoint, sub.Keys)
	path := "/v1/users/" + user + "/push-subscriptions"
	created := stacktest.Do(t, http.MethodPost, path, body)
	if created.StatusCode != http.StatusCreated {
		t.Fatalf("POST = %d %s (the runner allows loopback http for the API function)", created.StatusCode, created.Body)
	}
	var v struct{ ID string }
	created.JSON(t, &v)
	if created.Header.Get("Location") != path+"/"+v.ID {
		t.Errorf("Location = %q", created.Header.Get("Location"))
	}
	if again := stacktest.Do(t, http.MethodPost, path, body); again.StatusCode != http.StatusOK || !strings.Contains(string(again.Body), v.ID) {
		t.Fatalf("re-register = %d %s", again.StatusCode, again.Body)
	}
	// A push reaches it.
	resp := stacktest.Do(t, http.MethodPost, "/v1/notifications", fmt.Sprintf(
		`{"type":"comment.created","recipient":{"userId":%q},"data":{"actorLabel":"A","url":"https://example.com/c/1"}}`, user), caller("svc-a"))
	var a accepted
	resp.JSON(t, &a)
	waitDeliveries(t, a.ID, "svc-a", 1, func(d map[string]delivery) bool { return d["push"].Status == "sent" })
	if n := stacktest.Stack(t).Push.ReceivedCount(sub.ID); n != 1 {
		t.Errorf("push service received %d messages", n)
	}
	if r := stacktest.Do(t, http.MethodDelete, path+"/"+v.ID, nil); r.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE = %d %s", r.StatusCode, r.Body)
	}
	mustProblem(t, stacktest.Do(t, http.MethodDelete, path+"/"+v.ID, nil), http.StatusNotFound, "subscription_not_found")
	// Without a subscription the next push is skipped.
	resp = stacktest.Do(t, http.MethodPost, "/v1/notifications", fmt.Sprintf(
		`{"type":"comment.created","recipient":{"userId":%q},"data":{"actorLabel":"A","url":"https://example.com/c/2"}}`, user), caller("svc-a"))
	resp.JSON(t, &a)
	waitDeliveries(t, a.ID, "svc-a", 1, func(d map[string]delivery) bool { return d["push"].Status == "skipped" })
}

type prefsView struct {
	Preferences map[string]map[string]struct {
		Enabled bool   `json:"enabled"`
		Source  string `json:"source"`
	} `json:"preferences"`
}

func TestPreferencesRoundTrip(t *testing.T) {
	user := stacktest.UniqueID("prefs")
	path := "/v1/users/" + user + "/preferences"
	var v prefsView
	stacktest.Do(t, http.MethodGet, path, nil).JSON(t, &v)
	if c := v.Preferences["invoice.payment_failed"]["email"]; !c.Enabled || c.Source != "default" {
		t.Fatalf("default = %+v", c)
	}
	put := stacktest.Do(t, http.MethodPut, path, `{"preferences":{"invoice.payment_failed":{"email":false},"security.login_alert":{"sms":false}}}`)
	if put.StatusCode != http.StatusOK {
		t.Fatalf("PUT = %d %s", put.StatusCode, put.Body)
	}
	put.JSON(t, &v)
	if c := v.Preferences["invoice.payment_failed"]["email"]; c.Enabled || c.Source != "user" {
		t.Errorf("override = %+v", c)
	}
	if c := v.Preferences["security.login_alert"]["sms"]; !c.Enabled || c.Source != "mandatory" {
		t.Errorf("mandatory = %+v", c)
	}
	// Merge, not replace.
	stacktest.Do(t, http.MethodPut, path, `{"preferences":{"invoice.payment_failed":{"push":false}}}`).JSON(t, &v)
	if c := v.Preferences["invoice.payment_failed"]["email"]; c.Enabled || c.Source != "user" {
		t.Errorf("merge lost the email override: %+v", c)
	}
	// The relay applies the stored preference: email is skipped.
	putUser(t, user, fmt.Sprintf(`{"email":"%s@example.com"}`, user))
	resp := stacktest.Do(t, http.MethodPost, "/v1/notifications", fmt.Sprintf(
		`{"type":"invoice.payment_failed","recipient":{"userId":%q},"data":{"invoiceUrl":"https://example.com/i/2"}}`, user), caller("svc-a"))
	var a accepted
	resp.JSON(t, &a)
	// Until the relay runs, GET derives every planned channel queued.
	s := waitDeliveries(t, a.ID, "svc-a", 2, func(d map[string]delivery) bool { return d["email"].Status != "queued" })
	if e := s.Deliveries["email"]; e.Status != "skipped" || e.Reason == nil || *e.Reason != "preference" {
		t.Errorf("email = %+v", e)
	}
	// null restores the default.
	stacktest.Do(t, http.MethodPut, path, `{"preferences":{"invoice.payment_failed":{"email":null}}}`).JSON(t, &v)
	if c := v.Preferences["invoice.payment_failed"]["email"]; !c.Enabled || c.Source != "default" {
		t.Errorf("after null = %+v", c)
	}
}

// TestConcurrentPreferenceMerges: merges that race on the one preferences
// item all land (optimistic locking retries the losers).
func TestConcurrentPreferenceMerges(t *testing.T) {
	stacktest.Stack(t) // skips here, not in the goroutines, without a stack
	user := stacktest.UniqueID("prefs-race")
	path := "/v1/users/" + user + "/preferences"
	changes := []string{
		`{"preferences":{"invoice.payment_failed":{"email":false}}}`,
		`{"preferences":{"invoice.payment_failed":{"push":false}}}`,
		`{"preferences":{"reservation.approved":{"email":false}}}`,
		`{"preferences":{"reservation.approved":{"push":false}}}`,
		`{"preferences":{"comment.created":{"push":false}}}`,
	}
	var wg sync.WaitGroup
	for _, c := range changes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := stacktest.Do(t, http.MethodPut, path, c); r.StatusCode != http.StatusOK {
				t.Errorf("PUT %s = %d %s", c, r.StatusCode, r.Body)
			}
		}()
	}
	wg.Wait()
	var v prefsView
	stacktest.Do(t, http.MethodGet, path, nil).JSON(t, &v)
	for _, tc := range [][2]string{{"invoice.payment_failed", "email"}, {"invoice.payment_failed", "push"},
		{"reservation.approved", "email"}, {"reservation.approved", "push"}, {"comment.created", "push"}} {
		if c := v.Preferences[tc[0]][tc[1]]; c.Enabled || c.Source != "user" {
			t.Errorf("%s/%s = %+v: a concurrent merge was lost", tc[0], tc[1], c)
		}
	}
}
