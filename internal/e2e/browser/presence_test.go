package browser

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/dynamo"
)

// TestVisibleInboxSuppressesThePush: while the console's <herald-inbox> is
// visible, the kit reports presence (its live socket's lease) and a
// comment.mentioned push is skipped (active_in_app); once the page is hidden
// the kit closes the socket, which ends the lease, and a mention three
// minutes later is pushed.
//
// Headless Chromium keeps its one tab visible, so "hidden" is the Page
// Visibility API's state as a backgrounded tab has it: document.hidden and
// visibilityState overridden, then the visibilitychange event the browser
// fires.
func TestVisibleInboxSuppressesThePush(t *testing.T) {
	st := stacktest.Stack(t)
	exe := chromium(t)
	ctx := context.Background()
	c := stacktest.Client(t, "browser-test")
	user := stacktest.UniqueID("seen")
	localID, sub, err := st.Push.NewSubscription("")
	if err != nil {
		t.Fatal(err)
	}
	var ps client.PushSubscription
	ps.Endpoint, ps.Keys.P256dh, ps.Keys.Auth = sub.Endpoint, sub.P256dh, sub.Auth
	if _, err := c.CreatePushSubscription(ctx, user, ps); err != nil {
		t.Fatal(err)
	}
	mention := func() string {
		t.Helper()
		a, err := c.Send(ctx, client.Notification{Type: "comment.mentioned", Recipient: client.Recipient{UserID: user},
			Data: map[string]string{"actorLabel": "Ann", "url": "https://example.com/c/1"}, Channels: []string{"push"}})
		if err != nil {
			t.Fatal(err)
		}
		return a.ID
	}
	pushOutcome := func(id string) string {
		var out string
		stacktest.Eventually(t, 30*time.Second, "the push outcome of "+id, func() bool {
			n, err := c.GetNotification(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			d := n.Deliveries["push"]
			out = d.Status + ": " + d.Reason
			return d.Status == "skipped" || d.Status == "sent" || d.Status == "dropped" || d.Status == "failed"
		})
		return out
	}

	bctx := newBrowser(t, exe, 2*time.Minute)
	run := func(what string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(bctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	shadow := shadowRootOf("herald-inbox")
	var visibility string
	run("open the inbox",
		chromedp.Navigate(st.APIURL+"/_dev/?user="+user),
		chromedp.WaitVisible(`#inbox-row`),
		chromedp.Poll(`!!`+shadow+`.querySelector('.badge') && !!document.querySelector('herald-inbox').tokenProvider`, nil,
			chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Evaluate(`document.visibilityState`, &visibility),
	)
	if visibility != "visible" {
		t.Fatalf("the page is %q, want visible", visibility)
	}
	// The kit reports presence as the page opens: wait until the table has
	// it (a fixed pause is a race on a loaded machine).
	table := stacktest.NewStores(dynamo.New(dynamodb.NewFromConfig(st.AWS), st.Resources.Table))
	stacktest.Eventually(t, 30*time.Second, "the kit's presence in the table", func() bool {
		p, err := table.GetRecipientProfile(ctx, user)
		if err != nil {
			t.Fatal(err)
		}
		return !p.LastSeenAt.IsZero()
	})
	if got := pushOutcome(mention()); got != "skipped: active_in_app" {
		t.Fatalf("push with the inbox visible: %s, want skipped: active_in_app", got)
	}
	if n := len(st.Push.MessagesFor(localID)); n != 0 {
		t.Fatalf("%d pushes with the inbox visible", n)
	}

	run("hide the page", chromedp.Evaluate(`Object.defineProperty(document, 'hidden', {configurable: true, get: () => true});
		Object.defineProperty(document, 'visibilityState', {configurable: true, get: () => 'hidden'});
		document.dispatchEvent(new Event('visibilitychange')); true`, nil))
	// The hidden page closes its live socket; the $disconnect of the user's
	// last connection ends the presence lease and records the app seen
	// then. Move the clock only once it has (or the disconnect would be
	// seen at the later time).
	var closedAt time.Time
	stacktest.Eventually(t, 30*time.Second, "the live socket's disconnect ending the presence lease", func() bool {
		p, err := table.GetRecipientProfile(ctx, user)
		if err != nil {
			t.Fatal(err)
		}
		closedAt = p.LastSeenAt
		return p.PresentUntil.IsZero()
	})
	st.Clock.Advance(closedAt.Add(3 * time.Minute).Sub(st.Clock.Now()))
	time.Sleep(5 * time.Second) // more than two of the page's 2 s polls, had it kept polling
	id := mention()
	if got := pushOutcome(id); got != "sent: " {
		t.Fatalf("push with the inbox hidden: %s, want sent", got)
	}
	if n := len(st.Push.MessagesFor(localID)); n != 1 {
		t.Fatalf("%d pushes with the inbox hidden, want 1", n)
	}
}
