package browser

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

// consolePrefs checks the dev console's preference center for the demo user
// whose console page is open (TestConsoleInboxAndPushInChromium): it renders
// in the demo inbox's section beside <herald-inbox>, turning invoice email off
// persists for that user (GET /v1/me/preferences with the user's token),
// and the mandatory security.login_alert email switch is locked: a click on
// it sends nothing. Invoice email is turned back on at the end.
func consolePrefs(t *testing.T, run func(string, ...chromedp.Action), token string, calls *pageRequests) {
	t.Helper()
	const prefs = `document.querySelector('#inbox-demo herald-preferences')`
	const shadow = prefs + `?.shadowRoot`
	const invoiceEmail = shadow + `?.querySelector('button[role=switch][data-type="invoice.payment_failed"][data-channel="email"]')`
	const loginEmail = shadow + `?.querySelector('button[role=switch][data-type="security.login_alert"][data-channel="email"]')`
	var both bool
	run("see the preference center beside the inbox",
		chromedp.Poll(`!!`+invoiceEmail+` && !!`+loginEmail, nil, chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Evaluate(`(() => { const s = document.querySelector('#inbox-demo'), r = (e) => { const b = e.getBoundingClientRect(); return b.width > 0 && b.height > 0 };
			return r(s.querySelector('herald-inbox')) && r(s.querySelector('herald-preferences')) && `+shadow+`.querySelectorAll('button[role=switch]').length > 3 })()`, &both),
	)
	if !both {
		t.Fatal("the demo section does not show both <herald-inbox> and <herald-preferences> with switches")
	}
	emailOf := func(typ string) (enabled bool, source string) {
		t.Helper()
		r := stacktest.Do(t, http.MethodGet, "/v1/me/preferences", nil, "Authorization: Bearer "+token)
		var v struct {
			Preferences map[string]map[string]struct {
				Enabled bool   `json:"enabled"`
				Source  string `json:"source"`
			} `json:"preferences"`
		}
		if r.StatusCode != http.StatusOK {
			t.Fatalf("GET /v1/me/preferences: %d %s", r.StatusCode, r.Body)
		}
		r.JSON(t, &v)
		c, ok := v.Preferences[typ]["email"]
		if !ok {
			t.Fatalf("GET /v1/me/preferences has no %s email cell: %s", typ, r.Body)
		}
		return c.Enabled, c.Source
	}
	if on, _ := emailOf("invoice.payment_failed"); !on {
		t.Fatal("invoice email is off before the demo user turned it off")
	}
	puts := calls.count(http.MethodPut, "/v1/me/preferences")
	run("turn invoice email off in the console",
		chromedp.Evaluate(invoiceEmail+`.click(); true`, nil),
		chromedp.Poll(invoiceEmail+`.getAttribute('aria-checked') === 'false' && !`+invoiceEmail+`.hasAttribute('aria-busy')`, nil, chromedp.WithPollingTimeout(10*time.Second)),
	)
	if on, source := emailOf("invoice.payment_failed"); on || source != "user" {
		t.Errorf("after the console's switch, the user's invoice email is enabled=%v (source %q), want off by the user", on, source)
	}

	var locked, reason, checked string
	run("click the mandatory switch, then turn invoice email back on",
		chromedp.Evaluate(loginEmail+`.getAttribute('aria-disabled')`, &locked),
		chromedp.Evaluate(shadow+`.getElementById(`+loginEmail+`.getAttribute('aria-describedby'))?.textContent ?? ''`, &reason),
		chromedp.Evaluate(loginEmail+`.click(); `+invoiceEmail+`.click(); true`, nil),
		chromedp.Poll(invoiceEmail+`.getAttribute('aria-checked') === 'true' && !`+invoiceEmail+`.hasAttribute('aria-busy')`, nil, chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.Evaluate(loginEmail+`.getAttribute('aria-checked')`, &checked),
	)
	if locked != "true" || !strings.Contains(reason, "cannot be turned off") || checked != "true" {
		t.Errorf("mandatory switch: aria-disabled %q, reason %q, aria-checked %q after a click; want locked, with the reason, on", locked, reason, checked)
	}
	if on, source := emailOf("security.login_alert"); !on || source != "mandatory" {
		t.Errorf("security.login_alert email enabled=%v source %q, want on, mandatory", on, source)
	}
	if on, _ := emailOf("invoice.payment_failed"); !on {
		t.Error("invoice email still off after the console turned it back on")
	}
	// Two saves: off and back on; the mandatory switch sent none.
	if n := calls.count(http.MethodPut, "/v1/me/preferences") - puts; n != 2 {
		t.Errorf("%d PUT /v1/me/preferences from the console's panel, want 2 (invoice email off, on)", n)
	}
}
