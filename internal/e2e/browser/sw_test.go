package browser

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

// swHarness runs web/herald-sw.js (argv[1]) in a Node vm with a stand-in
// worker global (registration, clients) and prints, for each case, what the
// worker showed, focused and opened. Headless Chromium cannot click a
// notification, so the click handler is exercised here.
const swHarness = `
const fs = require('fs'), vm = require('vm');
const src = fs.readFileSync(process.argv[1], 'utf8');
async function run(c) {
  const listeners = {}, shown = [], focused = [], opened = [], messages = [];
  let closed = 0;
  const windows = c.windows.map((url) => ({ url, focus() { focused.push(url); return Promise.resolve(this); }, postMessage(m) { messages.push(m); } }));
  const clients = { matchAll: async () => windows, openWindow: async (u) => { opened.push(u); }, claim: async () => {} };
  const self = {
    location: { origin: 'https://app.example' },
    registration: { scope: 'https://app.example/app/', showNotification: async (title, options) => { shown.push({ title, options }); } },
    clients, addEventListener: (type, f) => { listeners[type] = f; }, skipWaiting() {},
  };
  vm.runInNewContext(src, { self, clients, URL, console });
  const waits = [];
  const payload = JSON.stringify(c.push);
  listeners.push({ data: { json: () => JSON.parse(payload), text: () => payload }, waitUntil: (p) => waits.push(p) });
  await Promise.all(waits);
  const n = shown[0];
  listeners.notificationclick({ notification: { data: n.options.data, close() { closed++; } }, waitUntil: (p) => waits.push(p) });
  await Promise.all(waits);
  return { title: n.title, tag: n.options.tag || '', url: n.options.data.url, closed, focused, opened,
    told: messages.map((m) => m.type + ':' + m.notification.id) };
}
(async () => {
  const cases = JSON.parse(process.argv[2]);
  const out = [];
  for (const c of cases) out.push(await run(c));
  process.stdout.write(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
`

// TestServiceWorkerShowsAndOpensOnClick: herald-sw.js shows a push with its
// id as tag, tells open pages, and on click closes the notification and
// focuses the window already at the URL, else opens it; a non-http(s) URL
// opens the worker's scope instead.
func TestServiceWorkerShowsAndOpensOnClick(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (make deps needs it for the emulators)")
	}
	root, err := stacktest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	type push struct {
		ID    string `json:"id"`
		Title string `json:"title"`
		Body  string `json:"body"`
		URL   string `json:"url"`
	}
	type result struct {
		Title, Tag, URL string
		Closed          int
		Focused, Opened []string
		Told            []string
	}
	tests := []struct {
		name    string
		windows []string
		push    push
		want    result
	}{
		{"focuses the open window", []string{"https://app.example/other", "https://app.example/c/1"},
			push{"n1", "New comment", "Ann replied", "https://app.example/c/1"},
			result{Title: "New comment", Tag: "n1", URL: "https://app.example/c/1", Closed: 1, Focused: []string{"https://app.example/c/1"},
				Told: []string{"herald:push:n1", "herald:push:n1"}}},
		{"opens the URL", []string{"https://app.example/other"},
			push{"n2", "Invoice", "Payment failed", "/invoices/9"},
			result{Title: "Invoice", Tag: "n2", URL: "https://app.example/invoices/9", Closed: 1, Opened: []string{"https://app.example/invoices/9"},
				Told: []string{"herald:push:n2"}}},
		{"refuses a javascript URL", nil,
			push{"n3", "", "x", "javascript:alert(1)"},
			result{Title: "Notification", Tag: "n3", URL: "", Closed: 1, Opened: []string{"https://app.example/app/"}}},
	}
	type harnessCase struct {
		Windows []string `json:"windows"`
		Push    push     `json:"push"`
	}
	var cases []harnessCase
	for _, tt := range tests {
		cases = append(cases, harnessCase{Windows: append([]string{}, tt.windows...), Push: tt.push})
	}
	arg, _ := json.Marshal(cases)
	out, err := exec.Command(node, "-e", swHarness, "--", filepath.Join(root, "web", "herald-sw.js"), string(arg)).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node: %v\n%s", err, stderr)
	}
	var got []result
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(tests) {
		t.Fatalf("harness output %s: %v", out, err)
	}
	for i, tt := range tests {
		g := got[i]
		if g.Title != tt.want.Title || g.Tag != tt.want.Tag || g.URL != tt.want.URL || g.Closed != tt.want.Closed ||
			!slices.Equal(g.Focused, tt.want.Focused) || !slices.Equal(g.Opened, tt.want.Opened) || !slices.Equal(g.Told, tt.want.Told) {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.name, g, tt.want)
		}
	}
}
