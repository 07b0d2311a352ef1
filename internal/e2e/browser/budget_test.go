package browser

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

// TestPreferenceCenterSetsTheBudget: in <herald-preferences> the user sets
// their notification budget to 2 an hour (an out-of-bounds value first: the
// field's bounds, the API's, hold the form; more an hour than a day, the
// API refuses and the form marks the field); the relay honours it: the
// third NORMAL notification's email waits (deferred: budget), while the
// first two go.
func TestPreferenceCenterSetsTheBudget(t *testing.T) {
	st := stacktest.Stack(t)
	exe := chromium(t)
	ctx := context.Background()
	c := stacktest.Client(t, "browser-test")
	user := stacktest.UniqueID("budget")
	if _, err := c.PutUser(ctx, user, client.User{Email: user + "@example.com"}); err != nil {
		t.Fatal(err)
	}
	bctx := newBrowser(t, exe, 2*time.Minute)
	run := func(what string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(bctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	form := shadowRootOf("herald-preferences") + `.querySelector('form[data-budget]')`
	field := func(name string) string { return form + `.elements[` + jsString(name) + `]` }
	set := func(perHour, perDay string) chromedp.Action {
		return chromedp.Evaluate(`(f => { f.elements.perHour.value = `+jsString(perHour)+`; f.elements.perDay.value = `+jsString(perDay)+`;
			f.querySelector('[data-budget-save]').click(); return true; })(`+form+`)`, nil)
	}
	app := serveApp(t, appOriginListener())
	var source, after string
	var overflow bool
	run("open the preference center and try 30 an hour",
		chromedp.Navigate(app+"/preferences?"+url.Values{"api": {st.APIURL}, "token": {st.Token(user, time.Hour)}}.Encode()),
		chromedp.Poll(`!!`+form+` && !`+form+`.hidden`, nil, chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Evaluate(form+`.querySelector('[data-budget-source]').dataset.budgetSource`, &source),
		set("30", "40"),
		chromedp.Evaluate(field("perHour")+`.validity.rangeOverflow`, &overflow),
		chromedp.Sleep(300*time.Millisecond), // what a save would take to show, had it started
		chromedp.Evaluate(form+`.querySelector('[data-budget-source]').dataset.budgetSource`, &after),
	)
	// The field's bounds are the API's (budget.max): the browser holds the
	// form; the API refuses the same (422 invalid_budget, internal/api).
	if source != "catalog" || !overflow || after != "catalog" {
		t.Errorf("before: source %q; 30 an hour: rangeOverflow %v, source after %q", source, overflow, after)
	}
	// More an hour than a day: within each field's bounds, refused by the
	// API (422 invalid_budget, pointer /budget/perHour), which the form marks.
	run("try 6 an hour, 5 a day",
		set("6", "5"),
		chromedp.Poll(field("perHour")+`.getAttribute('aria-invalid') === 'true'`, nil, chromedp.WithPollingTimeout(10*time.Second)),
	)
	run("set 2 an hour, 10 a day",
		set("2", "10"),
		chromedp.Poll(form+`.querySelector('[data-budget-source]').dataset.budgetSource === 'user'`, nil, chromedp.WithPollingTimeout(10*time.Second)),
	)

	send := func() string {
		t.Helper()
		a, err := c.Send(ctx, client.Notification{Type: "reservation.approved", Recipient: client.Recipient{UserID: user},
			Data: map[string]string{"reservationUrl": "https://example.com/r/1"}, Channels: []string{"email"}})
		if err != nil {
			t.Fatal(err)
		}
		return a.ID
	}
	var ids []string
	for range 3 {
		ids = append(ids, send())
	}
	for _, id := range ids[:2] {
		if got := emailOutcome(t, c, id); !strings.HasPrefix(got, "sent") && !strings.HasPrefix(got, "delivered") {
			t.Errorf("email %s within the budget: %s", id, got)
		}
	}
	if got := emailOutcome(t, c, ids[2]); got != "deferred: budget" {
		t.Errorf("the third email: %s, want deferred: budget", got)
	}
}
