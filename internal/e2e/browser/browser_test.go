// Package browser tests the dev console and the browser kit (web/) in a real
// headless Chromium driven over the DevTools protocol: the console shows an
// email sent in the test (sandboxed HTML, text part, headers), an SMS, every
// queue and DLQ of the template with its depths, fault switches that show
// the state just set, and refreshes on its own; the demo inbox
// (<herald-inbox>) shows the unread badge and drops it when an item is marked read
// from the keyboard, the demo's <herald-preferences> beside it turns the
// demo user's invoice email off (a mandatory switch stays locked; without a
// user neither shows), a push Herald sent to the browser's subscription is
// shown as a notification by herald-sw.js (and the inbox refreshes on it),
// "Unsubscribe" removes the subscription at Herald too, and the inbox pages
// with its cursor, lists an announcement, archives, marks all read, and
// shows 99+ once a hundred are unread.
//
// Chromium is Debian's `chromium` (make deps-browser installs it; CI runs it).
// HERALD_CHROMIUM names another binary. Without one the test fails when
// HERALD_REQUIRE_BROWSER is set (.ci/run sets it) and is skipped otherwise.
// HERALD_UPDATE_SCREENSHOTS=1 writes the screenshots to docs/img/.
package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/serviceworker"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

func TestMain(m *testing.M) {
	app, err := openAppOrigins()
	if err != nil {
		fmt.Fprintln(os.Stderr, "browser:", err)
		os.Exit(1)
	}
	// The app's origin (TestKitFromAnotherOrigin) is listed, as
	// HERALD_CORS_ORIGINS lists it for make dev; the console's own origin
	// is added by the runner.
	stacktest.Main(m, devstack.Config{ScheduleInterval: time.Second, Overrides: map[string]string{"CorsAllowedOrigins": app}})
}

// chromium finds the browser or skips (fails under HERALD_REQUIRE_BROWSER).
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("HERALD_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no Chromium found: install it with `make deps-browser` (Debian's chromium package) or set HERALD_CHROMIUM"
	if os.Getenv("HERALD_REQUIRE_BROWSER") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// newBrowser starts Chromium at exe (headless, no sandbox, no GPU, no
// /dev/shm) with opts added, and returns its first tab's context, cancelled
// after timeout; the test's cleanup closes the browser.
func newBrowser(t *testing.T, exe string, timeout time.Duration, opts ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	all := append(append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.Flag("disable-dev-shm-usage", true)), opts...)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), all...)
	tab, cancelBrowser := chromedp.NewContext(alloc, chromedp.WithLogf(t.Logf))
	tab, cancelTimeout := context.WithTimeout(tab, timeout)
	t.Cleanup(func() {
		cancelTimeout()
		cancelBrowser()
		cancelAlloc()
	})
	return tab
}

// shadowRootOf is the JavaScript for the first tag element's shadow root,
// through optional chaining: the element and its root may not exist yet while
// the page loads, and a poll must then read false, not throw.
func shadowRootOf(tag string) string {
	return `document.querySelector('` + tag + `')?.shadowRoot?`
}

// screenshotPath is docs/img/name with HERALD_UPDATE_SCREENSHOTS=1, else a
// temporary file.
func screenshotPath(t *testing.T, name string) string {
	if os.Getenv("HERALD_UPDATE_SCREENSHOTS") == "" {
		return filepath.Join(t.TempDir(), name)
	}
	root, err := stacktest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "docs", "img", name)
}

func awaitPromise(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }

// registrations collects the browser's service worker registrations.
type registrations struct {
	mu   sync.Mutex
	byID map[serviceworker.RegistrationID]string
}

func (r *registrations) find(scope string) (serviceworker.RegistrationID, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, s := range r.byID {
		if s == scope {
			return id, true
		}
	}
	return "", false
}

func TestConsoleInboxAndPushInChromium(t *testing.T) {
	st := stacktest.Stack(t)
	exe := chromium(t)
	ctx := context.Background()
	c := stacktest.Client(t, "browser-test")
	user := stacktest.UniqueID("web")
	addr := user + "@example.com"

	// An email (and an inbox item) and a second inbox item: badge 2.
	if _, err := c.PutUser(ctx, user, client.User{Email: addr}); err != nil {
		t.Fatal(err)
	}
	invoiceURL := "https://example.com/invoices/" + user
	if _, err := c.Send(ctx, client.Notification{Type: "invoice.payment_failed", Recipient: client.Recipient{UserID: user},
		Data: map[string]string{"invoiceUrl": invoiceURL}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(ctx, client.Notification{Type: "comment.created", Recipient: client.Recipient{UserID: user},
		Data: map[string]string{"actorLabel": "Ann", "url": "https://example.com/c/1"}}); err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, 30*time.Second, "the email to be sent", func() bool { return len(stacktest.EmailsTo(t, addr)) == 1 })

	bctx := newBrowser(t, exe, 3*time.Minute, chromedp.WindowSize(1280, 1000))

	regs := &registrations{byID: map[serviceworker.RegistrationID]string{}}
	apiCalls := &pageRequests{}
	chromedp.ListenTarget(bctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			apiCalls.add(e.Request)
		}
		if e, ok := ev.(*serviceworker.EventWorkerRegistrationUpdated); ok {
			regs.mu.Lock()
			for _, r := range e.Registrations {
				if r.IsDeleted {
					delete(regs.byID, r.RegistrationID)
				} else {
					regs.byID[r.RegistrationID] = r.ScopeURL
				}
			}
			regs.mu.Unlock()
		}
	})
	consoleURL := st.APIURL + "/_dev/?user=" + user
	run := func(what string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(bctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// Without a user the demo's inbox and preference center are hidden (no
	// token to load them with); with one, both show (consolePrefs below).
	var demoShown []string
	run("open the console without a user",
		chromedp.Navigate(st.APIURL+"/_dev/"),
		chromedp.WaitVisible(`#user-form`),
		chromedp.Evaluate(`['#inbox-row', '#prefs-box', 'herald-inbox', 'herald-preferences'].filter((s) => document.querySelector(s)?.getClientRects().length > 0)`, &demoShown),
	)
	if len(demoShown) != 0 {
		t.Errorf("the console without a user shows %v of the demo", demoShown)
	}
	run("open the console",
		browser.GrantPermissions([]browser.PermissionType{browser.PermissionTypeNotifications}).WithOrigin(st.APIURL),
		serviceworker.Enable(),
		chromedp.Navigate(consoleURL),
		chromedp.WaitVisible(`#inbox-row`),
	)

	// The email sent above, found by its recipient, rendered in the sandboxed iframe.
	const emailButton = `#emails button[data-message-id] small`
	var textPart, sandbox, srcdoc string
	run("find the email",
		chromedp.Poll(fmt.Sprintf(`[...document.querySelectorAll(%q)].some(s => s.textContent.includes(%q))`, emailButton, addr), nil,
			chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Evaluate(fmt.Sprintf(`[...document.querySelectorAll(%q)].find(s => s.textContent.includes(%q)).parentElement.click()`, emailButton, addr), nil),
		chromedp.WaitVisible(`#email-view iframe`),
		chromedp.Text(`#email-view .text-part`, &textPart),
		chromedp.Evaluate(`document.querySelector('#email-view iframe').getAttribute('sandbox')`, &sandbox),
		chromedp.Evaluate(`document.querySelector('#email-view iframe').srcdoc`, &srcdoc),
	)
	if !strings.Contains(textPart, invoiceURL) || !strings.Contains(srcdoc, invoiceURL) || sandbox != "" {
		t.Fatalf("email view: text %q, sandbox %q, html has the invoice link: %v", textPart, sandbox, strings.Contains(srcdoc, invoiceURL))
	}

	// The recent notifications table shows the email delivery as sent, and
	// the push one as skipped with its reason (the user has no subscription).
	run("see the delivery states",
		chromedp.Poll(`[...document.querySelectorAll('#notifications .pill[data-channel=email]')].some(p => p.dataset.status === 'sent')`, nil,
			chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Poll(fmt.Sprintf(`[...document.querySelectorAll('#notifications tr')].some(tr => tr.textContent.includes(%q) && `+
			`[...tr.querySelectorAll('.pill[data-channel=push]')].some(p => p.dataset.status === 'skipped' && p.textContent.includes('(no_contact)')))`, user), nil,
			chromedp.WithPollingTimeout(20*time.Second)),
	)
	// The invoice's overall state follows its deliveries (email sent, push
	// skipped: sent, not the API's "accepted"), and its creation shows the
	// date as well as the time.
	var overall, created string
	rowOf := fmt.Sprintf(`[...document.querySelectorAll('#notifications tbody tr')].find(tr => tr.textContent.includes(%q) && tr.textContent.includes('invoice.payment_failed'))`, user)
	run("see the overall state",
		chromedp.Poll(rowOf+`.querySelector('[data-overall]').dataset.overall === 'sent'`, nil, chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Evaluate(rowOf+`.querySelector('[data-overall]').dataset.overall`, &overall),
		chromedp.Evaluate(rowOf+`.cells[0].textContent`, &created))
	if overall != "sent" || !strings.Contains(created, fmt.Sprint(time.Now().Year())) {
		t.Errorf("notification row: overall %q, created %q; want sent, and a date with the time", overall, created)
	}
	// One demo-inbox box, not a second one with the user form.
	var inboxHeadings int
	run("count the demo inbox boxes", chromedp.Evaluate(`[...document.querySelectorAll('h2')].filter(h => h.textContent.startsWith('Demo inbox')).length`, &inboxHeadings))
	if inboxHeadings != 1 {
		t.Errorf("%d demo inbox boxes, want 1", inboxHeadings)
	}

	// The email's headers: From, To (the recipient) and Subject, then the
	// captured message's own headers.
	var headerNames []string
	var headerTo string
	run("see the email headers",
		chromedp.Evaluate(`[...document.querySelectorAll('#email-view table.headers th')].map(th => th.textContent)`, &headerNames),
		chromedp.Evaluate(`[...document.querySelectorAll('#email-view table.headers tr')].find(tr => tr.querySelector('th').textContent === 'To').querySelector('td').textContent`, &headerTo),
	)
	if len(headerNames) < 4 || strings.Join(headerNames[:3], ",") != "From,To,Subject" || headerTo != addr {
		t.Errorf("email headers = %v, To %q; want From, To (%s), Subject and the message's headers", headerNames, headerTo, addr)
	}

	// An SMS, listed with its number and text (to another user: an OTP is
	// also an inbox item, and the demo inbox counts below).
	phone := fmt.Sprintf("+1555%07d", time.Now().UnixNano()%10_000_000)
	if _, err := c.Send(ctx, client.Notification{Type: "otp.code", Recipient: client.Recipient{UserID: user + "-sms", Phone: phone},
		Data: map[string]string{"code": "246810"}}); err != nil {
		t.Fatal(err)
	}
	run("see the SMS", chromedp.Poll(fmt.Sprintf(`[...document.querySelectorAll('#sms tbody tr')].some(tr => tr.textContent.includes(%q) && tr.textContent.includes('246810'))`, phone), nil,
		chromedp.WithPollingTimeout(30*time.Second)))

	// Every queue and DLQ of the template, the release and campaign queues
	// among them, with its depths: work queues in one table, DLQs apart.
	var wantQueues, wantDLQs []string
	for id := range st.Resources.Queues {
		if strings.HasSuffix(id, "DLQ") {
			wantDLQs = append(wantDLQs, id)
		} else {
			wantQueues = append(wantQueues, id)
		}
	}
	for _, id := range []string{"ReleaseQueue", "ReleaseDLQ", "CampaignQueue", "CampaignDLQ", "EmailHighQueue", "RelayDLQ", "FeedbackDLQ"} {
		if !slices.Contains(wantQueues, id) && !slices.Contains(wantDLQs, id) {
			t.Fatalf("the stack's queues %v %v lack %s", wantQueues, wantDLQs, id)
		}
	}
	for table, want := range map[string][]string{"#queues": wantQueues, "#dlqs": wantDLQs} {
		var shown []string
		run("see the queues of "+table, chromedp.Poll(fmt.Sprintf(`document.querySelectorAll('%s tbody tr').length === %d`, table, len(want)), nil,
			chromedp.WithPollingTimeout(10*time.Second)),
			chromedp.Evaluate(fmt.Sprintf(`[...document.querySelectorAll('%s tbody tr')].filter(tr => [...tr.cells].slice(1).every(td => /^\d+$/.test(td.textContent))).map(tr => tr.cells[0].textContent)`, table), &shown))
		slices.Sort(want)
		slices.Sort(shown)
		if !slices.Equal(shown, want) {
			t.Errorf("%s shown with depths = %v\nwant %v", table, shown, want)
		}
	}

	// A fault switch set from its form shows at once, and turns off again.
	setFault := func(mode, times string) {
		run("set the sms fault to "+mode,
			chromedp.SetValue(`#faults form[data-channel=sms] select`, mode, chromedp.ByQuery),
			chromedp.SetValue(`#faults form[data-channel=sms] input`, times, chromedp.ByQuery),
			chromedp.Click(`#faults form[data-channel=sms] button`, chromedp.ByQuery))
	}
	const smsFaultNow = `[...document.querySelectorAll('#faults tbody tr')].find(tr => tr.cells[0].textContent === 'sms').cells[1].textContent`
	setFault("transient", "3")
	var faultMode string
	run("see the fault on", chromedp.Poll(smsFaultNow+`.startsWith('transient ×3')`, nil, chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.Evaluate(`fetch('/_dev/faults').then(r => r.json()).then(f => f.sms.mode + ' ' + f.sms.remaining)`, &faultMode, awaitPromise))
	if faultMode != "transient 3" {
		t.Errorf("the runner's sms fault = %q, want transient 3", faultMode)
	}
	setFault("off", "0")
	run("see the fault off", chromedp.Poll(smsFaultNow+`.startsWith('off')`, nil, chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.Evaluate(`fetch('/_dev/faults').then(r => r.json()).then(f => f.sms.mode + ' ' + f.sms.remaining)`, &faultMode, awaitPromise))
	if faultMode != "off 0" {
		t.Errorf("the runner's sms fault = %q, want off", faultMode)
	}

	// Auto-refresh: the page refreshes on its own.
	var refreshed string
	run("auto-refresh", chromedp.Evaluate(`document.body.dataset.refreshed`, &refreshed),
		chromedp.Poll(fmt.Sprintf(`document.querySelector('#auto').checked && document.body.dataset.refreshed !== %q`, refreshed), nil,
			chromedp.WithPollingTimeout(10*time.Second)))

	// The demo inbox: badge 2; the first item marked read with the keyboard; badge 1.
	shadow := shadowRootOf("herald-inbox")
	badge := func() string {
		var s string
		run("read the badge", chromedp.Evaluate(shadow+`.querySelector('.badge').hidden ? '' : `+shadow+`.querySelector('.badge').textContent`, &s))
		return s
	}
	run("see the unread badge", chromedp.Poll(shadow+`.querySelector('.badge').textContent === '2' && `+shadow+`.querySelectorAll('li.unread').length === 2`, nil,
		chromedp.WithPollingTimeout(20*time.Second)))
	var label string
	run("badge label", chromedp.Evaluate(shadow+`.querySelector('.badge').getAttribute('aria-label')`, &label))
	if label != "2 unread" {
		t.Errorf("badge aria-label = %q", label)
	}
	var badges []string
	run("badge text from 100 on", chromedp.Evaluate(`import('/_dev/kit/herald-inbox.js').then(m => [m.badgeText(7), m.badgeText(99), m.badgeText(100), m.badgeText(100, '99+')])`, &badges, awaitPromise))
	if strings.Join(badges, ",") != "7,99,99+,99+" {
		t.Errorf("badge texts = %v", badges)
	}
	consoleShot, inboxShot := screenshotPath(t, "dev-console.png"), screenshotPath(t, "demo-inbox.png")
	run("mark read with the keyboard",
		chromedp.Evaluate(shadow+`.querySelector('li.unread').focus()`, nil),
		chromedp.KeyEvent("r"),
		chromedp.Poll(shadow+`.querySelector('.badge').textContent === '1' && `+shadow+`.querySelectorAll('li.unread').length === 1`, nil,
			chromedp.WithPollingTimeout(20*time.Second)),
	)
	if got := badge(); got != "1" {
		t.Fatalf("badge after marking read = %q, want 1", got)
	}
	var inboxPNG []byte
	run("screenshot the inbox", chromedp.Screenshot(`#inbox-demo`, &inboxPNG, chromedp.ByQuery))

	// Keyboard and screen readers: ↓/↑ move the focus (one item in the tab
	// order at a time); the list, its items and the filter tabs carry roles.
	var focusPath []string
	focused := `(() => { const a = ` + shadow + `.activeElement; return a ? a.dataset.id + ':' + a.tabIndex : '' })()`
	var ids []string
	run("items", chromedp.Evaluate(`[...`+shadow+`.querySelectorAll('li')].map(li => li.dataset.id)`, &ids))
	for _, key := range []string{"", kb.ArrowDown, kb.ArrowUp} {
		var at string
		if key == "" {
			run("focus the first item", chromedp.Evaluate(shadow+`.querySelector('li').focus()`, nil))
		} else {
			run("press "+key, chromedp.KeyEvent(key))
		}
		run("focused item", chromedp.Evaluate(focused, &at))
		focusPath = append(focusPath, at)
	}
	if len(ids) != 2 || strings.Join(focusPath, ",") != ids[0]+":0,"+ids[1]+":0,"+ids[0]+":0" {
		t.Errorf("focus after (focus, ↓, ↑) = %v over items %v; want first, second, first, each tabindex 0", focusPath, ids)
	}
	var roles string
	run("roles", chromedp.Evaluate(`[`+shadow+`.querySelector('ul').getAttribute('role'), `+shadow+`.querySelector('li').getAttribute('role'), `+
		shadow+`.querySelector('[role=tablist]') ? 'tablist' : '', `+shadow+`.querySelectorAll('[role=tab]').length].join(',')`, &roles))
	if roles != "list,listitem,tablist,3" {
		t.Errorf("roles = %q, want list,listitem,tablist,3", roles)
	}

	// The demo page's preference center (<herald-preferences>, beside the
	// inbox, with the same user's token): the demo user turns email off for
	// invoice.payment_failed and the API holds it off for that user; a
	// mandatory type's switch is locked with the reason and a click sends
	// nothing (turning invoice email back on is the only other save).
	consolePrefs(t, run, st.Token(user, time.Hour), apiCalls)

	// Subscribe this browser; Herald's push reaches the local push service;
	// the DevTools protocol delivers it to the service worker, which shows it.
	run("subscribe this browser",
		chromedp.Click(`#subscribe`, chromedp.ByQuery),
		chromedp.Poll(`document.querySelector('#push-status').dataset.state === 'subscribed'`, nil, chromedp.WithPollingTimeout(20*time.Second)),
	)
	var localID string
	run("subscription id", chromedp.Evaluate(`document.querySelector('#push-status').dataset.localId`, &localID))
	if _, err := c.Send(ctx, client.Notification{Type: "comment.created", Recipient: client.Recipient{UserID: user},
		Data: map[string]string{"actorLabel": "Bo", "url": st.APIURL + "/_dev/?user=" + user}}); err != nil {
		t.Fatal(err)
	}
	var payload []byte
	stacktest.Eventually(t, 30*time.Second, "the push at the local push service", func() bool {
		msgs := st.Push.MessagesFor(localID)
		if len(msgs) > 0 {
			payload = msgs[0].Body
		}
		return payload != nil
	})
	var pushed struct{ ID, Title, Body, URL string }
	if err := json.Unmarshal(payload, &pushed); err != nil || pushed.Title == "" {
		t.Fatalf("push payload %s: %v", payload, err)
	}
	var regID serviceworker.RegistrationID
	stacktest.Eventually(t, 10*time.Second, "the service worker registration", func() bool {
		var ok bool
		regID, ok = regs.find(st.APIURL + "/_dev/kit/")
		return ok
	})
	stacktest.Eventually(t, 10*time.Second, "the service worker to be active", func() bool {
		var active bool
		run("worker state", chromedp.Evaluate(`navigator.serviceWorker.getRegistration('/_dev/kit/').then(r => !!(r && r.active && r.active.state === 'activated'))`, &active, awaitPromise))
		return active
	})
	// herald-sw.js reports each notification it showed (showNotification
	// resolved) to the open pages of the origin.
	run("listen to the service worker", chromedp.Evaluate(`window.heraldPushes = [];
		navigator.serviceWorker.addEventListener('message', e => { if (e.data && e.data.type === 'herald:push') window.heraldPushes.push(e.data.notification) }); true`, nil))
	var shown []map[string]string
	run("deliver the push to the service worker", serviceworker.DeliverPushMessage(st.APIURL, regID, string(payload)))
	stacktest.Eventually(t, 20*time.Second, "the notification to be shown", func() bool {
		run("the worker's reports", chromedp.Evaluate(`window.heraldPushes`, &shown))
		return len(shown) > 0
	})
	if len(shown) != 1 || shown[0]["title"] != pushed.Title || shown[0]["body"] != pushed.Body || shown[0]["id"] != pushed.ID || shown[0]["url"] != pushed.URL {
		t.Fatalf("notifications shown = %v, want the push %+v", shown, pushed)
	}

	// The push shows in the console's decrypted pushes too.
	run("see the decrypted push", chromedp.Poll(fmt.Sprintf(`!!document.querySelector('#pushes tr[data-subscription=%q]')`, localID), nil,
		chromedp.WithPollingTimeout(10*time.Second)))

	// The inbox refreshed on the worker's report: the new item and badge 2.
	run("refresh on push", chromedp.Poll(shadow+`.querySelectorAll('li').length === 3 && `+shadow+`.querySelector('.badge').textContent === '2'`, nil,
		chromedp.WithPollingTimeout(10*time.Second)))

	var consolePNG []byte
	// The whole console, its push listed now, every section down to the
	// queues and fault switches, in one viewport as tall as the page:
	// Chromium paints a sandboxed (cross-origin) frame only while it is on
	// screen, and a moment after.
	var pageHeight int64
	run("page height", chromedp.Evaluate(`window.scrollTo(0, 0), document.documentElement.scrollHeight`, &pageHeight))
	run("screenshot the console", chromedp.EmulateViewport(1280, pageHeight), chromedp.Sleep(time.Second),
		chromedp.CaptureScreenshot(&consolePNG), chromedp.EmulateViewport(1280, 1000))

	// Unsubscribe this browser: the kit removes the local subscription and
	// hands it to the app's callback, which deletes it at Herald.
	var heraldSubID string
	run("Herald's subscription id", chromedp.Evaluate(`document.querySelector('#push-status').dataset.subscriptionId || ''`, &heraldSubID))
	if heraldSubID == "" {
		t.Fatal("the console kept no Herald subscription id")
	}
	run("unsubscribe this browser",
		chromedp.Click(`#unsubscribe`, chromedp.ByQuery),
		chromedp.Poll(`document.querySelector('#push-status').dataset.state === 'unsubscribed'`, nil, chromedp.WithPollingTimeout(20*time.Second)),
	)
	if err := c.DeletePushSubscription(ctx, user, heraldSubID); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("after unsubscribing, deleting Herald's subscription %s again: %v, want not found", heraldSubID, err)
	}

	// An announcement, pages of two (cursor paging), archive, read all.
	ann, err := c.CreateAnnouncement(ctx, client.Announcement{Title: "Maintenance " + user, Body: "Tonight", ExpiresAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	const inbox = `document.querySelector('herald-inbox')`
	run("first page of two",
		chromedp.Evaluate(inbox+`.setAttribute('page-size', '2')`, nil),
		chromedp.Poll(shadow+`.querySelectorAll('li').length === 2 && !`+shadow+`.querySelector('.more').hidden`, nil, chromedp.WithPollingTimeout(10*time.Second)),
	)
	var firstKind string
	run("announcement first", chromedp.Evaluate(shadow+`.querySelector('li .kind') ? `+shadow+`.querySelector('li').dataset.id : ''`, &firstKind))
	if firstKind != ann.ID {
		t.Errorf("first item = %q, want the announcement %s", firstKind, ann.ID)
	}
	// The announcement's live broadcast reaches this page's socket at a time
	// of its own, and its inbox.created reloads the first page, which drops
	// a next page still under way (the kit's rule): click again, at most
	// every 2 s, while the first page alone is shown.
	run("next page",
		chromedp.Poll(`(() => {
			const more = `+shadow+`.querySelector('.more');
			if (`+shadow+`.querySelectorAll('li').length === 2 && !more.hidden && !(performance.now() - (window.__moreAt || -1e9) < 2000)) {
				window.__moreAt = performance.now();
				more.click();
			}
			return `+shadow+`.querySelectorAll('li').length === 4 && more.hidden && `+shadow+`.querySelector('.badge').textContent === '3';
		})()`, nil, chromedp.WithPollingTimeout(10*time.Second)),
	)
	run("archive the announcement",
		chromedp.Evaluate(fmt.Sprintf(shadow+`.querySelector('li[data-id=%q] button.archive').click()`, ann.ID), nil),
		chromedp.Poll(fmt.Sprintf(`!`+shadow+`.querySelector('li[data-id=%q]') && `+shadow+`.querySelector('.badge').textContent === '2'`, ann.ID), nil,
			chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.Evaluate(shadow+`.querySelector('[role=tab][data-filter=archived]').click()`, nil),
		chromedp.Poll(fmt.Sprintf(shadow+`.querySelectorAll('li').length === 1 && !!`+shadow+`.querySelector('li[data-id=%q]')`, ann.ID), nil,
			chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.Evaluate(shadow+`.querySelector('[role=tab][data-filter=all]').click()`, nil),
		chromedp.Poll(shadow+`.querySelectorAll('li').length === 2`, nil, chromedp.WithPollingTimeout(10*time.Second)),
	)
	run("mark all read",
		chromedp.Evaluate(shadow+`.querySelector('.read-all').click()`, nil),
		chromedp.Poll(shadow+`.querySelector('.badge').hidden && `+shadow+`.querySelectorAll('li.unread').length === 0`, nil,
			chromedp.WithPollingTimeout(10*time.Second)),
	)
	if got := badge(); got != "" {
		t.Errorf("badge after read all = %q, want hidden", got)
	}

	// A hundred more unread: the badge caps at 99+.
	many := make([]client.Notification, client.MaxBatch)
	for i := range many {
		many[i] = client.Notification{Type: "comment.created", Recipient: client.Recipient{UserID: user},
			Data: map[string]string{"actorLabel": fmt.Sprint("user ", i), "url": "https://example.com/c/2"}}
	}
	results, err := c.SendBatch(ctx, many)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if err := r.Err(); err != nil {
			t.Fatalf("batch item %d: %v", r.Index, err)
		}
	}
	run("badge 99+", chromedp.Poll(shadow+`.querySelector('.badge').textContent === '99+' && `+shadow+`.querySelector('.badge').getAttribute('aria-label') === '99+ unread'`, nil,
		chromedp.WithPollingTimeout(20*time.Second)))

	apiCalls.checkOnlyUserRoutes(t, st.APIURL)

	for path, png := range map[string][]byte{consoleShot: consolePNG, inboxShot: inboxPNG} {
		if len(png) < 1000 {
			t.Fatalf("screenshot %s: %d bytes", path, len(png))
		}
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// pageRequests records the page's requests to Herald's API (/v1/...).
type pageRequests struct {
	mu   sync.Mutex
	seen []apiRequest
}

type apiRequest struct {
	method, url       string
	bearer, devCaller bool
}

// count is how many requests the page made with method to a URL ending in path.
func (p *pageRequests) count(method, path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, r := range p.seen {
		if r.method == method && strings.HasSuffix(strings.SplitN(r.url, "?", 2)[0], path) {
			n++
		}
	}
	return n
}

func (p *pageRequests) add(r *network.Request) {
	if !strings.Contains(r.URL, "/v1/") {
		return
	}
	header := func(name string) string {
		for k, v := range r.Headers {
			if strings.EqualFold(k, name) {
				s, _ := v.(string)
				return s
			}
		}
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, apiRequest{method: r.Method, url: r.URL,
		bearer: strings.HasPrefix(header("Authorization"), "Bearer "), devCaller: header(devstack.DevCallerHeader) != ""})
}

// checkOnlyUserRoutes holds the kit to its promise of never needing a
// service credential: every API request the page made without the console's
// dev caller header is a JWT (user) route of template.yaml and carries the
// user's bearer token. Only the console, playing the app's backend, calls
// service routes, and only to register and remove push subscriptions.
func (p *pageRequests) checkOnlyUserRoutes(t *testing.T, apiURL string) {
	t.Helper()
	tmpl := stacktest.RepoTemplate(t)
	routes := tmpl.Routes()
	p.mu.Lock()
	defer p.mu.Unlock()
	kitRoutes := map[string]bool{}
	for _, r := range p.seen {
		path := strings.TrimPrefix(strings.SplitN(r.url, "?", 2)[0], apiURL)
		var route *devstack.Route
		for i := range routes {
			if routeMatches(routes[i], r.method, path) {
				route = &routes[i]
			}
		}
		switch {
		case route == nil:
			t.Errorf("the page called %s %s, which template.yaml does not route", r.method, path)
		case r.devCaller:
			if route.Auth != "AWS_IAM" || !strings.Contains(route.Path, "/push-subscriptions") {
				t.Errorf("the console called %s with a service caller; only push-subscription registration is the app backend's part", route.Key())
			}
		case route.Auth == "AWS_IAM" || !r.bearer:
			t.Errorf("the kit called %s (auth %s) with bearer token %v: it must only call user routes with the user's token", route.Key(), route.Auth, r.bearer)
		default:
			kitRoutes[route.Key()] = true
		}
	}
	for _, want := range []string{"GET /v1/push/config", "GET /v1/users/{userId}/inbox", "GET /v1/users/{userId}/inbox/unread-count",
		"POST /v1/users/{userId}/inbox/{id}/read", "POST /v1/users/{userId}/inbox/read-all", "POST /v1/users/{userId}/inbox/{id}/archive",
		"GET /v1/me/preferences", "PUT /v1/me/preferences"} {
		if !kitRoutes[want] {
			t.Errorf("the kit never called %s in this test (called: %v)", want, kitRoutes)
		}
	}
}

// routeMatches reports whether method and path fit r, whose {name} segments
// match one non-empty segment.
func routeMatches(r devstack.Route, method, path string) bool {
	rs, ps := strings.Split(r.Path, "/"), strings.Split(path, "/")
	if r.Method != method || len(rs) != len(ps) {
		return false
	}
	for i := range rs {
		if strings.HasPrefix(rs[i], "{") {
			if ps[i] == "" {
				return false
			}
		} else if rs[i] != ps[i] {
			return false
		}
	}
	return true
}
