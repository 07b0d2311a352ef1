package browser

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

// TestLiveInboxUpdatesWithoutPolling: on a page of the app's origin (the API
// on another), with live-url set and polling every second configured as
// the fallback, a notification sent to the user appears in the list and the
// badge goes from none to 1 without a reload, within 2 s of the send's 202
// (the bound), and the kit made no unread-count request between the
// socket's opening and then (a window longer than the poll interval): the
// socket carried the change.
//
// The badge is exact: the user has read every active announcement (other
// tests post them, and every user's inbox shows them) before the page
// opens, so the poster's and the API's announcement caches, however old,
// count none for this user and agree with each other.
func TestLiveInboxUpdatesWithoutPolling(t *testing.T) {
	st := stacktest.Stack(t)
	exe := chromium(t)
	ctx := context.Background()
	user := stacktest.UniqueID("live")
	token := st.Token(user, time.Hour)
	readActiveAnnouncements(t, user, token)

	bctx := newBrowser(t, exe, 2*time.Minute)

	const inbox = `document.querySelector('herald-inbox')`
	const root = inbox + `.shadowRoot`
	shown := func() string {
		var s string
		_ = chromedp.Run(bctx, chromedp.Evaluate(`JSON.stringify({badge: `+root+`.querySelector('.badge').hidden ? 'hidden' : `+root+`.querySelector('.badge').textContent,
			count: `+inbox+`.count, items: [...`+root+`.querySelectorAll('li.item')].map((li) => li.className + ': ' + li.querySelector('.title').textContent),
			live: window.liveStates, errors: window.inboxErrors})`, &s))
		return s
	}
	app := serveApp(t, appOriginListener())
	q := url.Values{"api": {st.APIURL}, "user": {user}, "token": {token}, "live": {st.WebSocketURL}, "poll": {"1"}}.Encode()
	// The socket opens, and the load it triggers (list and count) ends.
	if err := chromedp.Run(bctx,
		chromedp.Navigate(app+"/?"+q),
		chromedp.Poll(`window.liveStates.includes('open') && !`+root+`.querySelector('ul').hasAttribute('aria-busy')`, nil, chromedp.WithPollingTimeout(30*time.Second)),
	); err != nil {
		t.Fatalf("the live socket did not open and load: %v; shown: %s", err, shown())
	}
	var before int
	countRequests := `window.requests.filter((u) => u.includes('unread-count')).length`
	var badgeHidden bool
	if err := chromedp.Run(bctx,
		chromedp.Evaluate(countRequests, &before),
		chromedp.Evaluate(root+`.querySelector('.badge').hidden && `+inbox+`.count === 0`, &badgeHidden),
	); err != nil {
		t.Fatal(err)
	}
	if !badgeHidden {
		t.Fatalf("before the send the badge shows unread items: %s", shown())
	}

	title := "live " + user
	if _, err := stacktest.Client(t, "browser-test").Send(ctx, client.Notification{Type: "comment.created", Recipient: client.Recipient{UserID: user},
		Data: map[string]string{"actorLabel": title, "url": "https://example.com/c/2"}}); err != nil {
		t.Fatal(err)
	}
	accepted := time.Now() // the 202 is in
	arrived := `[...` + root + `.querySelectorAll('li.item.unread')].some((li) => li.textContent.includes(` + jsString(title) + `)) && ` +
		`!` + root + `.querySelector('.badge').hidden && ` + root + `.querySelector('.badge').textContent === '1'`
	if err := chromedp.Run(bctx,
		chromedp.Poll(arrived, nil, chromedp.WithPollingTimeout(10*time.Second), chromedp.WithPollingInterval(20*time.Millisecond)),
	); err != nil {
		t.Fatalf("the item and the badge 1 did not appear within 10 s of the 202: %v; shown: %s", err, shown())
	}
	took := time.Since(accepted)
	t.Logf("item and badge shown %s after the send's 202", took.Round(time.Millisecond))
	if took > 2*time.Second {
		t.Errorf("the item and badge took %s to show, want at most 2 s", took.Round(time.Millisecond))
	}

	// No poll in a window longer than poll-seconds since the socket opened
	// (a kit polling beside the socket would have asked by then).
	var after int
	if err := chromedp.Run(bctx,
		chromedp.Poll(`performance.now() - window.liveOpenedAt > 1500`, nil, chromedp.WithPollingTimeout(5*time.Second)),
		chromedp.Evaluate(countRequests, &after),
	); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("%d unread-count requests while the socket was open, want none", after-before)
	}

	t.Run("older answers do not undo a live message", func(t *testing.T) {
		var got struct {
			Count int
			Badge string
			Items []string
			Left  []string
		}
		if err := chromedp.Run(bctx, // the same tab, on a page with the kit only
			chromedp.Navigate(app+"/kit-only"),
			chromedp.Poll(`window.kitLoaded === true`, nil, chromedp.WithPollingTimeout(10*time.Second)),
			chromedp.Evaluate(staleAnswers, &got, awaitPromise),
		); err != nil {
			t.Fatal(err)
		}
		if got.Count != 1 || got.Badge != "1" || len(got.Items) != 1 || got.Items[0] != "n1" {
			t.Errorf("after the live message and the catch-up's older answers: count %d, badge %q, items %v; want 1, \"1\", [n1]", got.Count, got.Badge, got.Items)
		}
		if len(got.Left) != 0 {
			t.Errorf("requests left unanswered: %v", got.Left)
		}
	})
}

// staleAnswers drives <herald-inbox> with the page's fetch and WebSocket
// replaced, so that answers arrive in the order a loaded network may give
// them: the socket opens (the kit reloads list and count to catch up), a
// live message says one unread item arrived (and the kit reloads the
// list), then the reload for the message answers first, and the catch-up's
// older answers (count 0, empty list) last. The kit must keep the newer
// state: badge 1 and the item.
const staleAnswers = `(async () => {
  const pending = [];
  window.fetch = (u) => new Promise((resolve) => pending.push({ path: new URL(String(u)).pathname,
    answer: (body) => resolve(new Response(JSON.stringify(body), { status: 200, headers: { 'Content-Type': 'application/json' } })) }));
  const sockets = [];
  window.WebSocket = class { constructor(u) { this.url = String(u); sockets.push(this); } send() {} close() {} };
  const settle = async () => { for (let i = 0; i < 10; i++) await new Promise((r) => setTimeout(r, 0)); };
  const take = (suffix, last) => {
    const all = pending.map((p, i) => [p, i]).filter(([p]) => p.path.endsWith(suffix));
    if (!all.length) throw new Error('no request for ' + suffix + ' among ' + pending.map((p) => p.path));
    const [p, i] = all[last ? all.length - 1 : 0];
    pending.splice(i, 1);
    return p;
  };
  const item = { id: 'n1', kind: 'notification', title: 'Arrived', createdAt: new Date().toISOString() };
  const inbox = document.createElement('herald-inbox');
  for (const [k, v] of Object.entries({ 'api-base': 'http://api.invalid', 'user-id': 'u1', 'live-url': 'ws://live.invalid/live', 'poll-seconds': '0', 'presence-seconds': '0' })) inbox.setAttribute(k, v);
  document.body.append(inbox);
  inbox.tokenProvider = async () => 'token';
  await settle();
  take('/inbox').answer({ items: [] });
  take('/inbox/unread-count').answer({ count: 0, display: '0' });
  await settle();
  if (sockets.length !== 1) throw new Error(sockets.length + ' sockets opened, want 1');
  sockets[0].onopen();
  await settle();
  sockets[0].onmessage({ data: JSON.stringify({ kind: 'inbox.created', id: 'n1', unread: { count: 1, display: '1' } }) });
  await settle();
  take('/inbox', true).answer({ items: [item] });
  await settle();
  take('/inbox/unread-count').answer({ count: 0, display: '0' });
  take('/inbox').answer({ items: [] });
  await settle();
  const root = inbox.shadowRoot;
  return { count: inbox.count, badge: root.querySelector('.badge').hidden ? '' : root.querySelector('.badge').textContent,
    items: [...root.querySelectorAll('li.item')].map((li) => li.dataset.id), left: pending.map((p) => p.path) };
})()`

// readActiveAnnouncements marks every active announcement read for user
// (with the user's token), looking them up in the table through the service
// route rather than in any instance's cache.
func readActiveAnnouncements(t *testing.T, user, token string) {
	t.Helper()
	c := stacktest.Client(t, "browser-test")
	page := client.Page{Limit: 100}
	for {
		p, err := c.ListAnnouncements(context.Background(), page)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range p.Items {
			if a.Status != "active" {
				continue
			}
			if r := stacktest.Do(t, http.MethodPost, "/v1/users/"+url.PathEscape(user)+"/inbox/"+a.ID+"/read", nil, "Authorization: Bearer "+token); r.StatusCode != http.StatusOK {
				t.Fatalf("mark announcement %s read: %d %s", a.ID, r.StatusCode, r.Body)
			}
		}
		if p.NextCursor == "" {
			return
		}
		page.Cursor = p.NextCursor
	}
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
