package browser

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

// TestMarkReadInAnotherTabUpdatesThisOne: two tabs of the app's page (an
// origin other than the API's), each with the same user's live inbox. A
// notification arrives in both; the user marks it read in the second tab
// with the item's own "Mark read" button; the first tab's item turns read
// and its badge goes to zero without a reload, carried by the socket's
// inbox.updated message: the first tab made no unread-count request in
// between. Within 2 s of the click (the bound; it held on the
// loaded 2-core machine, where the update took well under a second); the
// poll waits 10 s so that a slow update fails with its time.
func TestMarkReadInAnotherTabUpdatesThisOne(t *testing.T) {
	st := stacktest.Stack(t)
	exe := chromium(t)
	ctx := context.Background()
	user := stacktest.UniqueID("tabs")
	token := st.Token(user, time.Hour)
	// Other tests' announcements are in every inbox, and the poster's and
	// the API's caches of them may differ for a while: read them first.
	readActiveAnnouncements(t, user, token)

	tab1 := newBrowser(t, exe, 2*time.Minute)
	tab2, cancelTab2 := chromedp.NewContext(tab1) // a second tab of the same browser
	defer cancelTab2()

	app := serveApp(t, appOriginListener())
	q := url.Values{"api": {st.APIURL}, "user": {user}, "token": {token}, "live": {st.WebSocketURL}, "poll": {"1"}}.Encode()
	for i, tab := range []context.Context{tab1, tab2} {
		var visible string
		if err := chromedp.Run(tab,
			chromedp.Navigate(app+"/?"+q),
			chromedp.Poll(`window.liveStates.includes('open')`, nil, chromedp.WithPollingTimeout(30*time.Second)),
			chromedp.Evaluate(`document.visibilityState`, &visible),
		); err != nil {
			t.Fatalf("tab %d: the live socket did not open: %v", i+1, err)
		}
		t.Logf("tab %d: %s", i+1, visible)
	}

	title := "tabs " + user
	if _, err := stacktest.Client(t, "browser-test").Send(ctx, client.Notification{Type: "comment.created", Recipient: client.Recipient{UserID: user},
		Data: map[string]string{"actorLabel": title, "url": "https://example.com/c/3"}}); err != nil {
		t.Fatal(err)
	}
	// Other tests' announcements may be in the inbox too: the item is found
	// by its title and the badge is expected one lower than it was.
	root := `document.querySelector('herald-inbox').shadowRoot`
	item := `[...` + root + `.querySelectorAll('li.item')].find((li) => li.textContent.includes(` + jsString(title) + `))`
	unreadShown := `(` + item + `)?.classList.contains('unread') === true`
	var counts [2]int
	for i, tab := range []context.Context{tab1, tab2} {
		if err := chromedp.Run(tab,
			chromedp.Poll(unreadShown, nil, chromedp.WithPollingTimeout(30*time.Second)),
			chromedp.Poll(`document.querySelector('herald-inbox').count > 0`, nil, chromedp.WithPollingTimeout(10*time.Second)),
			chromedp.Evaluate(`document.querySelector('herald-inbox').count`, &counts[i]),
		); err != nil {
			var state any
			_ = chromedp.Run(tab, chromedp.Evaluate(`({badge: `+root+`.querySelector('.badge').textContent, items: `+root+`.querySelectorAll('li.item').length,
				live: window.liveStates, errors: window.inboxErrors, requests: window.requests.length})`, &state))
			t.Fatalf("tab %d: the unread item and badge did not appear: %v (%v)", i+1, err, state)
		}
	}
	if counts[0] != counts[1] {
		t.Logf("unread counts before the click: tab 1 %d, tab 2 %d", counts[0], counts[1])
	}
	want := counts[0] - 1
	badgeShows := fmt.Sprintf(`(() => { const b = %s.querySelector('.badge'); return document.querySelector('herald-inbox').count === %d && (%d === 0 ? b.hidden : !b.hidden && b.textContent === '%d'); })()`, root, want, want, want)

	countRequests := `window.requests.filter((u) => u.includes('unread-count')).length`
	var before int
	if err := chromedp.Run(tab1, chromedp.Evaluate(countRequests, &before)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var clicked bool
	if err := chromedp.Run(tab2,
		chromedp.Evaluate(`(() => { const b = (`+item+`)?.querySelector('button.mark-read'); if (!b) return false; b.click(); return true; })()`, &clicked),
	); err != nil || !clicked {
		t.Fatalf("tab 2: no Mark read button to click (%v)", err)
	}
	readShown := `(` + item + `)?.classList.contains('unread') === false && ` + badgeShows
	if err := chromedp.Run(tab1,
		chromedp.Poll(readShown, nil, chromedp.WithPollingTimeout(10*time.Second), chromedp.WithPollingInterval(50*time.Millisecond)),
	); err != nil {
		t.Fatalf("tab 1: the item did not turn read and the badge did not go one lower within 10 s of the click in tab 2: %v", err)
	}
	took := time.Since(start)
	t.Logf("tab 1 showed the item read %s after the click in tab 2", took.Round(time.Millisecond))
	if took > 2*time.Second {
		t.Errorf("tab 1 took %s to show the item read, want at most 2 s", took.Round(time.Millisecond))
	}
	var after int
	if err := chromedp.Run(tab1, chromedp.Evaluate(countRequests, &after)); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("tab 1 made %d unread-count requests while its socket was open, want none", after-before)
	}
}

// appOriginListener listens on the listed app origin's address again (a
// test that served it before closed it), or returns appListener itself if
// no test has served it yet. Every test serving the app origin takes its
// listener from here, so the tests' order (file names) does not matter.
func appOriginListener() net.Listener {
	l, err := net.Listen("tcp", appListener.Addr().String())
	if err != nil {
		return appListener
	}
	return l
}
