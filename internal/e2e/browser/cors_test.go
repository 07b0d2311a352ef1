package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

// appListener and strangerListener are two more loopback ports, opened
// before the stack starts: the first is the app's origin, listed in
// CorsAllowedOrigins (TestMain), the second is not.
var appListener, strangerListener net.Listener

// openAppOrigins opens both listeners; it returns the app's origin.
func openAppOrigins() (string, error) {
	var err error
	if appListener, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return "", err
	}
	if strangerListener, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return "", err
	}
	return "http://" + appListener.Addr().String(), nil
}

// appPage is an application's page embedding the browser kit: the kit's
// script is the app's own copy (same origin as the page), the API is
// Herald's (another origin), so every kit call is cross-origin with an
// Authorization header: the browser sends a preflight first.
const appPage = `<!doctype html><meta charset="utf-8"><title>app</title><body>
<script type="module">
import '/kit/herald-inbox.js';
const q = new URLSearchParams(location.search);
window.inboxErrors = [];
// Every request the kit makes, for tests that count them.
window.requests = [];
// And when each started and was answered (performance.now()).
window.answered = [];
const realFetch = window.fetch;
window.fetch = (u, o) => {
  window.requests.push(String(u));
  const started = performance.now();
  return realFetch(u, o).then((r) => { window.answered.push({ url: String(u), started, at: performance.now() }); return r; });
};
window.liveStates = [];
const inbox = document.createElement('herald-inbox');
inbox.setAttribute('api-base', q.get('api'));
inbox.setAttribute('user-id', q.get('user'));
if (q.get('live')) inbox.setAttribute('live-url', q.get('live'));
if (q.get('catchup')) inbox.setAttribute('catch-up-seconds', q.get('catchup'));
inbox.addEventListener('herald-inbox-live', (e) => {
  window.liveStates.push(e.detail.state);
  if (e.detail.state === 'open') window.liveOpenedAt = performance.now();
});
inbox.setAttribute('poll-seconds', q.get('poll') || '0');
inbox.setAttribute('presence-seconds', '0');
inbox.tokenProvider = async () => q.get('token');
inbox.addEventListener('herald-inbox-error', (e) => window.inboxErrors.push(e.detail));
document.body.append(inbox);
</script>`

// prefsPage is the same application's preference page: the kit's
// <herald-preferences> with the API on Herald's origin and the user's token
// from the query.
const prefsPage = `<!doctype html><meta charset="utf-8"><title>app preferences</title><body>
<script type="module">
import '/kit/herald-preferences.js';
const q = new URLSearchParams(location.search);
window.prefsErrors = [];
const prefs = document.createElement('herald-preferences');
prefs.setAttribute('api-base', q.get('api'));
prefs.addEventListener('herald-preferences-error', (e) => window.prefsErrors.push(e.detail));
prefs.tokenProvider = async () => q.get('token');
document.body.append(prefs);
</script>`

// kitPage only loads the inbox kit: a test builds its element itself.
const kitPage = `<!doctype html><meta charset="utf-8"><title>kit</title><body>
<script type="module">import '/kit/herald-inbox.js'; window.kitLoaded = true;</script>`

// serveApp serves appPage (at /), prefsPage (at /preferences), kitPage (at
// /kit-only) and the kit on l until the test ends.
func serveApp(t *testing.T, l net.Listener) string {
	t.Helper()
	root, err := stacktest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /kit/", http.StripPrefix("/kit/", http.FileServer(http.Dir(filepath.Join(root, "web")))))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, appPage)
	})
	mux.HandleFunc("GET /preferences", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, prefsPage)
	})
	mux.HandleFunc("GET /kit-only", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, kitPage)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + l.Addr().String()
}

// TestKitFromAnotherOrigin: the inbox loads in a page of a listed origin
// (preflight answered from the transformed template's
// x-amazon-apigateway-cors) and fails to load in a page of an origin not
// listed (no CORS headers: the browser refuses the response, the kit
// reports the error and shows no item).
func TestKitFromAnotherOrigin(t *testing.T) {
	st := stacktest.Stack(t)
	exe := chromium(t)
	ctx := context.Background()
	user := stacktest.UniqueID("cors")
	title := "cross-origin " + user
	c := stacktest.Client(t, "browser-test")
	if _, err := c.Send(ctx, client.Notification{Type: "comment.created", Recipient: client.Recipient{UserID: user},
		Data: map[string]string{"actorLabel": title, "url": "https://example.com/c/1"}}); err != nil {
		t.Fatal(err)
	}
	token := st.Token(user, time.Hour)
	stacktest.Eventually(t, 30*time.Second, "the inbox item", func() bool {
		req, _ := http.NewRequest(http.MethodGet, st.APIURL+"/v1/users/"+user+"/inbox", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var body struct{ Items []json.RawMessage }
		return resp.StatusCode == 200 && json.NewDecoder(resp.Body).Decode(&body) == nil && len(body.Items) > 0
	})

	bctx := newBrowser(t, exe, 2*time.Minute)

	q := url.Values{"api": {st.APIURL}, "user": {user}, "token": {token}}.Encode()
	items := `(document.querySelector('herald-inbox')?.shadowRoot?.querySelectorAll('li') || []).length`

	app := serveApp(t, appOriginListener())
	var text string
	if err := chromedp.Run(bctx,
		chromedp.Navigate(app+"/?"+q),
		chromedp.Poll(items+` > 0`, nil, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Evaluate(`document.querySelector('herald-inbox').shadowRoot.textContent`, &text),
	); err != nil {
		t.Fatalf("the inbox on the app's origin %s: %v", app, err)
	}
	if !strings.Contains(text, title) {
		t.Errorf("the inbox on the app's origin shows %q, want the item %q", text, title)
	}

	stranger := serveApp(t, strangerListener)
	var errs []map[string]any
	var n int
	if err := chromedp.Run(bctx,
		chromedp.Navigate(stranger+"/?"+q),
		chromedp.Poll(`window.inboxErrors && window.inboxErrors.length > 0`, nil, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Evaluate(`window.inboxErrors`, &errs),
		chromedp.Evaluate(items, &n),
	); err != nil {
		t.Fatalf("the inbox on an origin not listed %s reported no error: %v", stranger, err)
	}
	if n != 0 {
		t.Errorf("the inbox on an origin not listed shows %d items", n)
	}
	t.Logf("origin not listed: %v", errs)
}
