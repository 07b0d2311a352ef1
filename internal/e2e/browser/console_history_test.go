package browser

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
)

// TestConsoleUserHistoryInChromium: a user gets five notifications from
// one caller, one in each state — email sent, email skipped by the user's
// preference, email deferred to its sendAt, email dropped by a cancel, SMS
// failed by the provider — and the console's user view, opened from the
// user id in the recent notifications table and again by typing it, shows
// the same entries as GET /v1/users/{userId}/notifications for that caller,
// each channel with its status and reason, the sent email's provider and
// times, and its decision trail on click. The console's events are one line
// each, in a box of bounded height after the DLQs and fault switches; a
// click shows an event's detail, which stays open across a refresh.
func TestConsoleUserHistoryInChromium(t *testing.T) {
	t.Parallel()
	st := stacktest.Stack(t)
	exe := chromium(t)
	ctx := context.Background()
	const caller = "console-history"
	c := stacktest.Client(t, caller)
	user := stacktest.UniqueID("hist")
	if _, err := c.PutUser(ctx, user, client.User{Email: user + "@example.com", Phone: fmt.Sprintf("+1555%07d", time.Now().UnixNano()%10_000_000)}); err != nil {
		t.Fatal(err)
	}
	off := false
	if _, err := c.UpdatePreferences(ctx, user, map[string]map[string]*bool{"invoice.payment_failed": {"email": &off}}); err != nil {
		t.Fatal(err)
	}
	send := func(n client.Notification) string {
		t.Helper()
		n.Recipient = client.Recipient{UserID: user}
		a, err := c.Send(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		return a.ID
	}
	reservation := map[string]string{"reservationUrl": "https://example.com/r/1"}
	later := time.Now().Add(time.Hour)
	// The SMS provider refuses the next SMS for good (only this test sends
	// SMS while it runs: the package's other tests are done or send email).
	if err := st.Faults.Set(domain.ChannelSMS, devstack.FaultPermanent, 1); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{ // id → "channel: status (reason)"
		send(client.Notification{Type: "reservation.approved", Channels: []string{"email"}, Data: reservation}):                                                  "email: sent",
		send(client.Notification{Type: "invoice.payment_failed", Channels: []string{"email"}, Data: map[string]string{"invoiceUrl": "https://example.com/i/1"}}): "email: skipped (preference)",
		send(client.Notification{Type: "reservation.approved", Channels: []string{"email"}, Data: reservation, SendAt: &later}):                                  "email: deferred (scheduled)",
		send(client.Notification{Type: "otp.code", Data: map[string]string{"code": "135790"}}):                                                                   "sms: failed",
	}
	cancelled := send(client.Notification{Type: "reservation.approved", Channels: []string{"email"}, Data: reservation, SendAt: &later})
	if _, err := c.CancelNotification(ctx, cancelled); err != nil {
		t.Fatal(err)
	}
	want[cancelled] = "email: dropped (cancelled)"

	// Each notification reaches its state at Herald first; a sent email may
	// already be delivered (the emulator's feedback).
	shownAs := func(ch string, d client.Delivery) string {
		s := ch + ": " + d.Status
		if d.Status == "delivered" {
			s = ch + ": sent"
		}
		if d.Reason != "" && d.Status != "failed" {
			s += " (" + d.Reason + ")"
		}
		return s
	}
	var entries []client.HistoryEntry
	stacktest.Eventually(t, 60*time.Second, "the five notifications in their states", func() bool {
		page, err := c.ListUserNotifications(ctx, user, client.HistoryQuery{})
		if err != nil {
			t.Fatal(err)
		}
		entries = page.Items
		for _, e := range entries {
			if len(e.Deliveries) != 1 {
				return false // a channel sent at once shows when claimed
			}
			for ch, d := range e.Deliveries {
				if shownAs(ch, d) != want[e.ID] {
					return false
				}
			}
		}
		return len(entries) == len(want)
	})
	var sentID string
	var apiIDs []string
	for _, e := range entries {
		apiIDs = append(apiIDs, e.ID)
		if want[e.ID] == "email: sent" {
			sentID = e.ID
		}
	}
	// The sent email's provider and trail, as the route answers them (the
	// Go client has no provider field).
	var raw struct {
		Items []struct {
			ID         string
			Deliveries map[string]struct {
				Provider string
				Trail    []struct{ Status string }
			}
		}
	}
	stacktest.Do(t, http.MethodGet, "/v1/users/"+user+"/notifications?type=reservation.approved", nil,
		devstack.DevCallerHeader+": "+caller).JSON(t, &raw)
	var provider string
	var wantSteps []string
	for _, e := range raw.Items {
		if e.ID == sentID {
			provider = e.Deliveries["email"].Provider
			for _, s := range e.Deliveries["email"].Trail {
				wantSteps = append(wantSteps, s.Status)
			}
		}
	}
	if provider == "" || len(wantSteps) < 2 {
		t.Fatalf("the sent email at Herald: provider %q, trail %v; want both", provider, wantSteps)
	}
	// Another caller sees none of them, in the view as in the API.
	if other, err := stacktest.Client(t, "someone-else").ListUserNotifications(ctx, user, client.HistoryQuery{}); err != nil || len(other.Items) != 0 {
		t.Fatalf("another caller's history of the user: %v, %v; want none", other, err)
	}

	bctx := newBrowser(t, exe, 2*time.Minute, chromedp.WindowSize(1280, 1000))
	run := func(what string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(bctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	var at string
	link := fmt.Sprintf(`document.querySelector('#notifications a[data-user=%s]')`, jsString(user))
	run("open the user view from the recent notifications",
		chromedp.Navigate(st.APIURL+"/_dev/"),
		chromedp.Poll(`!!`+link, nil, chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Evaluate(link+`.click()`, nil),
		// A navigation: a selector wait outlives the page's old document, a poll does not.
		chromedp.WaitVisible(`#history-status[data-state=loaded]`, chromedp.ByQuery),
		chromedp.Location(&at),
	)
	type shownRow struct {
		ID         string
		Deliveries []string
		Facts      string
	}
	var view struct {
		Caller string
		Rows   []shownRow
	}
	readView := func(what string) {
		t.Helper()
		run(what, chromedp.Evaluate(`({caller: document.querySelector('#history-caller').textContent,
			rows: [...document.querySelectorAll('#history tbody tr')].map(tr => ({id: tr.dataset.id,
				deliveries: [...tr.querySelectorAll('.pill[data-channel]')].map(p => p.dataset.channel + ': ' + (p.dataset.status === 'delivered' ? 'sent' : p.dataset.status) + (p.dataset.reason && p.dataset.status !== 'failed' ? ' (' + p.dataset.reason + ')' : '')),
				facts: [...tr.querySelectorAll('.facts')].map(f => f.textContent).join(' | ')}))})`, &view))
		var ids []string
		for _, r := range view.Rows {
			ids = append(ids, r.ID)
			if len(r.Deliveries) != 1 || r.Deliveries[0] != want[r.ID] {
				t.Errorf("%s: the view shows %s as %v, want %s", what, r.ID, r.Deliveries, want[r.ID])
			}
			if want[r.ID] == "email: sent" && (!strings.Contains(r.Facts, "provider "+provider) || !strings.Contains(r.Facts, "sent ")) {
				t.Errorf("%s: the sent email's facts %q lack its provider (%s) or sent time", what, r.Facts, provider)
			}
		}
		if view.Caller != caller || !slices.Equal(ids, apiIDs) {
			t.Errorf("%s: the view shows %v from %q; the API answers %v to %s (newest first)", what, ids, view.Caller, apiIDs, caller)
		}
	}
	if !strings.Contains(at, "/_dev/user?id="+user+"&caller="+caller) {
		t.Errorf("the link opened %s, want the user view of %s from %s", at, user, caller)
	}
	readView("the view opened from the link")

	// The sent email's decision trail, on click, step by step as the API has it.
	trail := fmt.Sprintf(`document.querySelector('#history details[data-trail=%s]')`, jsString(sentID+"/email"))
	var closedSteps bool
	var steps []string
	run("open the sent email's trail",
		chromedp.Evaluate(trail+`.querySelector('ol').checkVisibility()`, &closedSteps),
		chromedp.Evaluate(trail+`.querySelector('summary').click()`, nil),
		chromedp.Poll(trail+`.open && `+trail+`.querySelector('ol').checkVisibility()`, nil, chromedp.WithPollingTimeout(5*time.Second)),
		chromedp.Evaluate(`[...`+trail+`.querySelectorAll('li')].map(li => li.dataset.step)`, &steps),
	)
	if closedSteps || !slices.Equal(steps[:min(len(steps), len(wantSteps))], wantSteps) || !slices.Contains(steps, "sent") {
		t.Errorf("trail shown before the click: %v; steps %v, want %v (the API's, feedback after it allowed)", closedSteps, steps, wantSteps)
	}

	// Typed into the console's form: the same view, the caller the newest
	// notification to the user names.
	run("type the user id into the console",
		chromedp.Navigate(st.APIURL+"/_dev/"),
		chromedp.WaitVisible(`#history-form input[name=id]`),
		chromedp.SetValue(`#history-form input[name=id]`, user, chromedp.ByQuery),
		chromedp.Submit(`#history-form`, chromedp.ByQuery),
		chromedp.WaitVisible(`#history-status[data-state=loaded]`, chromedp.ByQuery),
		chromedp.Location(&at),
	)
	if !strings.Contains(at, "/_dev/user?id="+user) {
		t.Errorf("the form opened %s, want the user view of %s", at, user)
	}
	readView("the view opened by typing the user id")

	// The events: one line each, the newest first, in a box no taller than
	// 20rem, below the queues, DLQs and fault switches.
	var ev struct {
		Lines, LineHeight, BoxHeight, EventsTop, DLQTop, FaultsTop float64
		OneLine                                                    bool
	}
	run("see the compact events",
		chromedp.Navigate(st.APIURL+"/_dev/"),
		chromedp.Poll(`document.querySelectorAll('#events details[data-event-id]').length >= 2`, nil, chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Evaluate(`(() => {
			const top = (s) => document.querySelector(s).closest('section').getBoundingClientRect().top + scrollY;
			const sums = [...document.querySelectorAll('#events details > summary')];
			const h = sums.map(s => s.getBoundingClientRect().height);
			return {lines: sums.length, lineHeight: Math.max(...h), boxHeight: document.querySelector('#events').getBoundingClientRect().height,
				eventsTop: top('#events'), dlqTop: top('#dlqs'), faultsTop: top('#faults'),
				oneLine: sums.every(s => !s.parentElement.open && !s.nextElementSibling.checkVisibility() && /\d/.test(s.querySelector('time').textContent) && s.querySelector('strong').textContent.endsWith('State Change'))};
		})()`, &ev),
	)
	if ev.Lines > 50 || !ev.OneLine || ev.LineHeight > 30 || ev.BoxHeight > 20*16+2 || ev.EventsTop <= ev.DLQTop || ev.EventsTop <= ev.FaultsTop {
		t.Errorf("events: %+v; want at most 50 closed one-line summaries (time, detail-type) under 30 px each, a box at most 20rem high, after the DLQs and faults", ev)
	}
	// The cancelled email's event (the stack publishes failures and drops,
	// DeliveryEvents' default), clicked: its detail, still open after the
	// next refresh.
	event := fmt.Sprintf(`[...document.querySelectorAll('#events details')].find(d => d.querySelector('pre').textContent.includes(%s))`, jsString(cancelled))
	var detail, line string
	run("click an event",
		chromedp.Poll(`!!`+event, nil, chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Evaluate(event+`.querySelector('summary').textContent`, &line),
		chromedp.Evaluate(`window.clickedEvent = `+event+`; clickedEvent.querySelector('summary').click(); true`, nil),
		// Each refresh renders the list anew: a new element, open as the clicked one.
		chromedp.Poll(event+` !== window.clickedEvent`, nil, chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.Evaluate(event+`.open ? `+event+`.querySelector('pre').innerText : ''`, &detail),
	)
	if !strings.Contains(line, "Delivery State Change") || !strings.Contains(line, "email · dropped: cancelled · "+cancelled) || !strings.Contains(detail, `"userId"`) {
		t.Errorf("the event's line %q (want detail-type, channel, status, reason and notification id), its detail after a refresh %q (want open, the whole detail)", line, detail)
	}
}
