package browser

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
)

// TestPreferenceCenterMutesATopic: the service subscribes a user to two
// topics; in <herald-preferences> on the app's origin (the API on another)
// the user sees both, each with a mute switch named "Mute <topic>", and
// mutes one from the keyboard (↓ then Space). The next send to that topic
// skips them (skipped: muted) while a send to the other reaches them. A mute
// the API refuses (the service unsubscribed the user meanwhile: 404
// not_subscribed) is shown, and the switch stays as it was. The page's
// console never names the user, a topic or the token.
func TestPreferenceCenterMutesATopic(t *testing.T) {
	t.Parallel()
	st := stacktest.Stack(t)
	exe := chromium(t)
	ctx := context.Background()
	c := stacktest.Client(t, "browser-test")
	user := stacktest.UniqueID("mute")
	// Sorted by key as the API lists them: quiet first, loud second.
	quiet, loud := "thread:"+user+"-a", "thread:"+user+"-b"
	if _, err := c.PutUser(ctx, user, client.User{Email: user + "@example.com"}); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{quiet, loud} {
		if _, err := c.Subscribe(ctx, topic, []string{user}); err != nil {
			t.Fatal(err)
		}
	}
	token := st.Token(user, time.Hour)

	bctx := newBrowser(t, exe, 2*time.Minute)
	var consoleMu sync.Mutex
	var consoleLines []string
	chromedp.ListenTarget(bctx, func(ev any) {
		if e, ok := ev.(*runtime.EventConsoleAPICalled); ok {
			consoleMu.Lock()
			for _, a := range e.Args {
				consoleLines = append(consoleLines, string(e.Type)+": "+string(a.Value)+a.Description)
			}
			consoleMu.Unlock()
		}
	})
	run := func(what string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(bctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	shadow := shadowRootOf("herald-preferences")
	topics := shadow + `.querySelector('[data-topics]')`
	switchOf := func(topic string) string {
		return shadow + `.querySelector('[data-topics] button[role=switch][data-topic=` + jsString(topic) + `]')`
	}
	// The accessible name: the texts aria-labelledby names, in order.
	nameOf := func(sw string) string {
		return `(b => b.getAttribute('aria-labelledby').split(' ').map(id => b.getRootNode().getElementById(id).textContent).join(' '))(` + sw + `)`
	}
	app := serveApp(t, appOriginListener())
	var shown []string
	var name, quietChecked, tabStops string
	run("open the preference center and see the topics",
		chromedp.Navigate(app+"/preferences?"+url.Values{"api": {st.APIURL}, "token": {token}}.Encode()),
		chromedp.Poll(`!!`+topics+` && !`+topics+`.hidden && `+topics+`.querySelectorAll('button[role=switch]').length === 2`, nil,
			chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Evaluate(`[...`+topics+`.querySelectorAll('button[role=switch]')].map(b => b.dataset.topic)`, &shown),
		chromedp.Evaluate(nameOf(switchOf(quiet)), &name),
		chromedp.Evaluate(switchOf(quiet)+`.getAttribute('aria-checked')`, &quietChecked),
		chromedp.Evaluate(`[...`+topics+`.querySelectorAll('button[role=switch]')].map(b => b.tabIndex).join(',')`, &tabStops),
	)
	if strings.Join(shown, ",") != quiet+","+loud || name != "Mute "+quiet || quietChecked != "false" || tabStops != "0,-1" {
		t.Fatalf("topics shown %v, first switch named %q (aria-checked %q), tab stops %s; want [%s %s], %q, false, 0,-1",
			shown, name, quietChecked, tabStops, quiet, loud, "Mute "+quiet)
	}
	// The keyboard: the list is one tab stop; ↓ moves to the loud topic, ↑
	// back, and Space toggles the quiet topic's switch.
	var focusedAfterDown string
	run("mute the quiet topic from the keyboard",
		chromedp.Evaluate(switchOf(quiet)+`.focus()`, nil),
		chromedp.KeyEvent(kb.ArrowDown),
		chromedp.Evaluate(shadow+`.activeElement?.dataset.topic ?? ''`, &focusedAfterDown),
		chromedp.KeyEvent(kb.ArrowUp),
		chromedp.KeyEvent(" "),
		chromedp.Poll(switchOf(quiet)+`?.getAttribute('aria-checked') === 'true' && !`+switchOf(quiet)+`.hasAttribute('aria-busy')`, nil,
			chromedp.WithPollingTimeout(10*time.Second)),
	)
	if focusedAfterDown != loud {
		t.Errorf("after ↓ the focus is on %q, want the loud topic's switch", focusedAfterDown)
	}
	mine, err := c.ListUserTopics(ctx, user, client.Page{})
	if err != nil {
		t.Fatal(err)
	}
	mutes := map[string]bool{}
	for _, tp := range mine.Topics {
		mutes[tp.Topic] = tp.Muted
	}
	if len(mutes) != 2 || !mutes[quiet] || mutes[loud] {
		t.Fatalf("the user's topics at Herald: %v, want %s muted, %s not", mutes, quiet, loud)
	}

	// The next send to each topic: the muted one skips the user, the other
	// reaches them.
	outcome := func(topic string) string {
		t.Helper()
		a, err := c.NotifyTopic(ctx, client.TopicNotification{Topic: topic, Type: "reservation.approved", Channels: []string{"email"},
			Data: map[string]string{"reservationUrl": "https://example.com/r/1"}})
		if err != nil {
			t.Fatal(err)
		}
		id := domain.CampaignNotificationID(a.ID, user)
		var out string
		stacktest.Eventually(t, 60*time.Second, "the email outcome of the send to "+topic, func() bool {
			n, err := c.GetNotification(ctx, id)
			if errors.Is(err, client.ErrNotFound) {
				return false // not fanned out yet
			} else if err != nil {
				t.Fatal(err)
			}
			d := n.Deliveries["email"]
			out = d.Status + ": " + d.Reason
			return d.Status != "" && d.Status != "queued" && d.Status != "sending" && d.Status != "retrying"
		})
		return out
	}
	if got := outcome(quiet); got != "skipped: muted" {
		t.Errorf("the send to the muted topic: email %s, want skipped: muted", got)
	}
	if got := outcome(loud); !strings.HasPrefix(got, "sent") && !strings.HasPrefix(got, "delivered") {
		t.Errorf("the send to the other topic: email %s, want sent", got)
	}

	// The service unsubscribes the user from the loud topic; muting it from
	// the page (still listing it) is refused, and the page says so.
	if err := c.Unsubscribe(ctx, loud, user); err != nil {
		t.Fatal(err)
	}
	var status, loudChecked string
	var errs []map[string]any
	run("mute a topic the user no longer follows",
		chromedp.Evaluate(switchOf(loud)+`.click()`, nil),
		chromedp.Poll(`window.prefsErrors.length > 0`, nil, chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.Evaluate(`window.prefsErrors`, &errs),
		chromedp.Evaluate(shadow+`.querySelector('[role=status]').textContent`, &status),
		chromedp.Evaluate(switchOf(loud)+`.getAttribute('aria-checked')`, &loudChecked),
	)
	if len(errs) != 1 || errs[0]["code"] != "not_subscribed" || !strings.Contains(status, "not_subscribed") || loudChecked != "false" {
		t.Errorf("refused mute: errors %v, status %q, switch aria-checked %q; want one not_subscribed error shown, the switch unchanged", errs, status, loudChecked)
	}

	consoleMu.Lock()
	defer consoleMu.Unlock()
	for _, line := range consoleLines {
		for _, secret := range []string{user, quiet, loud, token} {
			if strings.Contains(line, secret) {
				t.Errorf("the page's console names the user, a topic or the token: %q", line)
			}
		}
	}
}
