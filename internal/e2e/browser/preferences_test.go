package browser

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

// TestPreferenceCenterTurnsEmailOff: in the kit's <herald-preferences> on a
// page of the app's origin (the API on another, so every call is
// cross-origin with a preflight; labels in the profile's locale, ja here, and the quiet hours in the
// user's timezone) the user turns email off for invoice.payment_failed with
// the keyboard; the next notification of that type is skipped for email
// (preference) while push still goes. A mandatory type's switch does not
// turn off, and the API refuses it too (422 mandatory_type).
func TestPreferenceCenterTurnsEmailOff(t *testing.T) {
	st := stacktest.Stack(t)
	exe := chromium(t)
	ctx := context.Background()
	c := stacktest.Client(t, "browser-test")
	user := stacktest.UniqueID("prefs")
	if _, err := c.PutUser(ctx, user, client.User{Email: user + "@example.com", Locale: "ja-JP", Timezone: "Asia/Tokyo",
		QuietHours: &client.QuietHours{Start: "22:00", End: "07:00"}}); err != nil {
		t.Fatal(err)
	}
	invoice := func() string {
		t.Helper()
		a, err := c.Send(ctx, client.Notification{Type: "invoice.payment_failed", Recipient: client.Recipient{UserID: user},
			Data: map[string]string{"invoiceUrl": "https://example.com/i/1"}, Channels: []string{"email"}})
		if err != nil {
			t.Fatal(err)
		}
		return a.ID
	}
	// Email goes before the change: the skip below is the user's doing.
	if got := emailOutcome(t, c, invoice()); got == "skipped: preference" {
		t.Fatalf("email before the change: %s", got)
	}

	bctx := newBrowser(t, exe, 2*time.Minute)
	run := func(what string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(bctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	shadow := shadowRootOf("herald-preferences")
	invoiceEmail := shadow + `.querySelector('button[data-type="invoice.payment_failed"][data-channel="email"]')`
	loginEmail := shadow + `.querySelector('button[data-type="security.login_alert"][data-channel="email"]')`
	token := st.Token(user, time.Hour)
	app := serveApp(t, appOriginListener())
	var heading, label, quiet, checked, locked, reason string
	run("open the preference center on the app's origin "+app,
		chromedp.Navigate(app+"/preferences?"+url.Values{"api": {st.APIURL}, "token": {token}}.Encode()),
		chromedp.Poll(`!!`+invoiceEmail, nil, chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Evaluate(shadow+`.querySelector('h2').textContent`, &heading),
		chromedp.Evaluate(`[...`+shadow+`.querySelectorAll('th[scope=row]')].map(th => th.firstChild.textContent).join('|')`, &label),
		chromedp.Evaluate(shadow+`.querySelector('[data-quiet-hours]').textContent`, &quiet),
		chromedp.Evaluate(invoiceEmail+`.getAttribute('aria-checked')`, &checked),
	)
	if heading != "通知設定" || !strings.Contains(label, "支払いの失敗") || !strings.Contains(label, "ログイン通知") {
		t.Errorf("not localized to ja: heading %q, rows %q", heading, label)
	}
	if !strings.Contains(quiet, "22:00") || !strings.Contains(quiet, "Asia/Tokyo") {
		t.Errorf("quiet hours shown as %q", quiet)
	}
	if checked != "true" {
		t.Fatalf("invoice email starts %q, want true", checked)
	}

	// The keyboard: focus the switch, Space toggles it; the element saves.
	run("turn invoice email off",
		chromedp.Evaluate(invoiceEmail+`.focus(); true`, nil),
		chromedp.KeyEvent(" "),
		chromedp.Poll(invoiceEmail+`.getAttribute('aria-checked') === 'false'`, nil, chromedp.WithPollingTimeout(10*time.Second)),
	)
	if got := emailOutcome(t, c, invoice()); got != "skipped: preference" {
		t.Fatalf("email after the user turned it off: %s, want skipped: preference", got)
	}

	// A mandatory switch: locked with the reason, a click changes nothing,
	// and a PUT with the user's own token (from the app's origin) is refused.
	var refused struct {
		Status int    `json:"status"`
		Code   string `json:"code"`
	}
	run("try the mandatory switch",
		chromedp.Evaluate(loginEmail+`.getAttribute('aria-disabled')`, &locked),
		chromedp.Evaluate(shadow+`.getElementById(`+loginEmail+`.getAttribute('aria-describedby')).textContent`, &reason),
		chromedp.Evaluate(loginEmail+`.click(); true`, nil),
		chromedp.Sleep(300*time.Millisecond), // what a save would take to show, had it started
		chromedp.Evaluate(loginEmail+`.getAttribute('aria-checked')`, &checked),
		chromedp.Evaluate(`(async () => {
			const r = await fetch(`+jsString(st.APIURL+"/v1/me/preferences")+`, {method: 'PUT', headers: {'Content-Type': 'application/json', Authorization: 'Bearer ' + `+jsString(token)+`},
				body: JSON.stringify({preferences: {'security.login_alert': {email: false}}})});
			const b = await r.json();
			return {status: r.status, code: b.code};
		})()`, &refused, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }),
	)
	if locked != "true" || !strings.Contains(reason, "オフにできません") || checked != "true" {
		t.Errorf("mandatory switch: aria-disabled %q, reason %q, aria-checked %q after a click", locked, reason, checked)
	}
	if refused.Status != 422 || refused.Code != "mandatory_type" {
		t.Errorf("PUT mandatory off = %d %q, want 422 mandatory_type", refused.Status, refused.Code)
	}
}
