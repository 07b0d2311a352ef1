// Package history holds the end-to-end tests of a recipient's delivery
// history (GET /v1/users/{userId}/notifications) and a delivery's decision
// trail (herald notification explain) on the local stack. It moves the
// stack's clock and sets the email provider's faults, so it has a stack of
// its own and its tests run one after the other.
package history

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/ops"
)

func TestMain(m *testing.M) {
	// A short schedule so a released delivery goes out within a second of
	// the clock passing its due time; retries a second or two apart, three
	// receives at most, so a delivery failing every one fails in seconds.
	stacktest.Main(m, devstack.Config{ScheduleInterval: 250 * time.Millisecond,
		Overrides: map[string]string{"BackoffBase": "1s", "BackoffCap": "2s", "MaxReceiveCount": "3"}})
}

func uniqueUser(t testing.TB) string {
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	return stacktest.UniqueID(name[:min(len(name), 40)])
}

// waitEmail waits until the notification's email delivery is in want and
// returns the notification as the API shows it.
func waitEmail(t *testing.T, c *client.Client, id, want string) *client.NotificationStatus {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second) // a loaded machine takes seconds a step
	for {
		st, err := c.GetNotification(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if st.Deliveries["email"].Status == want {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: email %+v, want %s", id, st.Deliveries["email"], want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// setFault sets the email provider's faults as a developer does (POST
// /_dev/faults): the next `times` sends fail so; off at the test's end.
func setFault(t *testing.T, mode devstack.FaultMode, times int) {
	t.Helper()
	postFault(t, map[string]any{"channel": "email", "mode": mode, "times": times})
	t.Cleanup(func() { postFault(t, map[string]any{"channel": "email", "mode": devstack.FaultOff}) })
}

func postFault(t *testing.T, body map[string]any) {
	t.Helper()
	if r := stacktest.Do(t, http.MethodPost, "/_dev/faults", body); r.StatusCode != http.StatusNoContent {
		t.Fatalf("POST /_dev/faults %v: %d %s", body, r.StatusCode, r.Body)
	}
}

// TestExplainPrintsTheTrailOfADeferredThrottledRetriedSend: an email
// deferred by quiet hours, released when they end, throttled by SES once,
// retried and sent; `herald notification explain` prints each step with its
// time, and the answer of GET /v1/notifications/{id} holds the same trail.
func TestExplainPrintsTheTrailOfADeferredThrottledRetriedSend(t *testing.T) {
	st := stacktest.Stack(t)
	ctx := context.Background()
	user, caller := uniqueUser(t), "explain-svc"
	c := stacktest.Client(t, caller)
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	local := st.Clock.Now().In(tokyo)
	clock := func(t time.Time) string { return t.Format("15:04") }
	if _, err := c.PutUser(ctx, user, client.User{Email: user + "@example.com", Timezone: "Asia/Tokyo",
		QuietHours: &client.QuietHours{Start: clock(local.Add(-time.Hour)), End: clock(local.Add(time.Hour))}}); err != nil {
		t.Fatal(err)
	}
	a, err := c.Send(ctx, client.Notification{Type: "reservation.approved", Recipient: client.Recipient{UserID: user},
		Data: map[string]string{"reservationUrl": "https://example.com/r/1"}, Channels: []string{"email"}})
	if err != nil {
		t.Fatal(err)
	}
	deferred := waitEmail(t, c, a.ID, "deferred")
	setFault(t, devstack.FaultTransient, 1)
	st.Clock.Advance(deferred.Deliveries["email"].DueAt.Sub(st.Clock.Now()) + time.Second)
	sent := waitEmail(t, c, a.ID, "sent")

	var statuses []string
	for _, s := range sent.Deliveries["email"].Trail {
		statuses = append(statuses, s.Status)
	}
	want := []string{"deferred", "planned", "queued", "sending", "retrying", "sending", "sent"}
	if !trailMatches(statuses, want) {
		t.Fatalf("trail %v, want %v", statuses, want)
	}

	// What herald notification explain prints (cmd/herald: the API's
	// answer, printed by ops.PrintTrail).
	var out bytes.Buffer
	ops.PrintTrail(&out, sent)
	t.Logf("herald notification explain:\n%s", out.String())
	steps := []string{`accepted`, `deferred until .* \(quiet_hours\)`, `released`, `queued`, `claimed \(sending\)`,
		`retrying: \w+, retry in [0-9.]+m?s`, `claimed \(sending\)`, `sent`}
	if !slices.Contains(statuses, "queued") { // claimed before its queued write
		steps = slices.DeleteFunc(steps, func(s string) bool { return s == "queued" })
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2+len(steps) {
		t.Fatalf("explain printed %d lines, want a header, the channel and %d steps", len(lines), len(steps))
	}
	stamp := `^  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}Z  `
	for i, s := range steps {
		if !regexp.MustCompile(stamp + s + `$`).MatchString(lines[2+i]) {
			t.Errorf("step %d: %q, want a time and %q", i+1, lines[2+i], s)
		}
	}
}

// expected is what a user's history shows of one channel's delivery: its
// status, reason and policy decision, and its trail (each step as status or
// status/reason), once the stack's clock has passed every due time; pending
// is its status before that ("" when the same).
type expected struct {
	status, reason, decision string
	trail                    []string
	pending                  string
}

// sentAtOnce is a channel sent when accepted: the worker's claim writes its
// first step.
var sentAtOnce = expected{status: "sent", trail: []string{"sending", "sent"}}

// releasedAndSent is a delivery deferred for reason, then released and sent.
func releasedAndSent(reason string) expected {
	return expected{status: "sent", trail: []string{"deferred/" + reason, "planned", "queued", "sending", "sent"}, pending: "deferred"}
}

func skippedFor(reason string) expected {
	return expected{status: "skipped", reason: reason, decision: "skipped: " + reason, trail: []string{"skipped/" + reason}}
}

// historyWant is one notification the test sent, as the history must show it.
type historyWant struct {
	id, typ, campaign string
	deliveries        map[string]expected
}

// statusNow is the status the delivery must have now: before the clock
// passes the due times (released false) or after.
func (e expected) statusNow(released bool) string {
	if !released && e.pending != "" {
		return e.pending
	}
	return e.status
}

func trailOf(d client.Delivery) []string {
	out := make([]string, 0, len(d.Trail))
	for _, s := range d.Trail {
		if s.Reason != "" {
			out = append(out, s.Status+"/"+s.Reason)
		} else {
			out = append(out, s.Status)
		}
	}
	return out
}

// trailMatches: got is want, or want without the queued step after a
// release (planned): a worker may claim the released delivery before the
// scheduler records it queued, and that write then loses.
func trailMatches(got, want []string) bool {
	if slices.Equal(got, want) {
		return true
	}
	i := slices.Index(want, "planned")
	return i >= 0 && i+1 < len(want) && want[i+1] == "queued" && slices.Equal(got, slices.Delete(slices.Clone(want), i+1, i+2))
}

// waitHistory waits until the user's history (one page of 100) shows every
// wanted notification with each channel in its status now, and returns it
// by notification id.
func waitHistory(t *testing.T, c *client.Client, user string, wants []historyWant, released bool) map[string]client.HistoryEntry {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		page, err := c.ListUserNotifications(context.Background(), user, client.HistoryQuery{Page: client.Page{Limit: 100}})
		if err != nil {
			t.Fatal(err)
		}
		byID := map[string]client.HistoryEntry{}
		for _, e := range page.Items {
			byID[e.ID] = e
		}
		missing := ""
		for _, w := range wants {
			for ch, e := range w.deliveries {
				if got := byID[w.id].Deliveries[ch]; got.Status != e.statusNow(released) {
					missing = fmt.Sprintf("%s (%s) %s: %q %q, want %s", w.id, w.typ, ch, got.Status, got.Reason, e.statusNow(released))
				}
			}
		}
		if missing == "" {
			return byID
		}
		if time.Now().After(deadline) {
			t.Fatalf("history: %s", missing)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestHistoryOfAUserInEveryState: a user with 30 notifications of three
// types, each in one of the states the pipeline gives (sent; skipped by a
// preference set through the API; deferred by the user's quiet hours, then
// sent; muted: a topic send to a subscriber who muted it; digested: the
// comments of a thread, one digest; over the catalog's budget: deferred
// into the budget digest, then its leader sent and the other digested;
// dropped: cancelled; deferred: scheduled; failed after its retries), every
// state reached through the API, the faults route and the stack's clock.
// The history pages them newest first, ten a page with one query each, each
// entry with every channel's status, reason, decision and trail; every
// filter selects what it names; another caller sees none of them.
func TestHistoryOfAUserInEveryState(t *testing.T) {
	st := stacktest.Stack(t)
	ctx := context.Background()
	user, caller := uniqueUser(t), "history-svc"
	c := stacktest.Client(t, caller)
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	local := st.Clock.Now().In(tokyo)
	hhmm := func(t time.Time) string { return t.Format("15:04") }
	profile := client.User{Email: user + "@example.com", Timezone: "Asia/Tokyo"}
	quiet := profile
	quiet.QuietHours = &client.QuietHours{Start: hhmm(local.Add(-time.Hour)), End: hhmm(local.Add(time.Hour))}
	if _, err := c.PutUser(ctx, user, quiet); err != nil {
		t.Fatal(err)
	}
	_, browser, err := st.Push.NewSubscription("")
	if err != nil {
		t.Fatal(err)
	}
	var sub client.PushSubscription
	sub.Endpoint, sub.Keys.P256dh, sub.Keys.Auth = browser.Endpoint, browser.P256dh, browser.Auth
	if _, err := c.CreatePushSubscription(ctx, user, sub); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdatePreferences(ctx, user, map[string]map[string]*bool{"reservation.approved": {"push": client.Disable}}); err != nil {
		t.Fatal(err)
	}
	topic := "thread:" + user
	if _, err := c.Subscribe(ctx, topic, []string{user}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.MuteTopic(ctx, user, topic, true); err != nil {
		t.Fatal(err)
	}

	var wants []historyWant // oldest first
	send := func(n client.Notification, deliveries map[string]expected) string {
		t.Helper()
		n.Recipient.UserID = user
		a, err := c.Send(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		wants = append(wants, historyWant{id: a.ID, typ: n.Type, deliveries: deliveries})
		st.Clock.Advance(time.Millisecond) // distinct creation times
		return a.ID
	}
	invoice := func(channels ...string) client.Notification {
		return client.Notification{Type: "invoice.payment_failed", Channels: channels, Data: map[string]string{"invoiceUrl": "https://example.com/i/9"}}
	}
	reservation := func(channel string) client.Notification {
		return client.Notification{Type: "reservation.approved", Channels: []string{channel}, Data: map[string]string{"reservationUrl": "https://example.com/r/1"}}
	}
	comment := func(priority, batchKey string) client.Notification {
		return client.Notification{Type: "comment.created", Priority: priority, BatchKey: batchKey,
			Data: map[string]string{"actorLabel": "Someone", "url": "https://example.com/c/" + user}}
	}

	// In the user's quiet hours: high priority goes at once, a preference
	// skips, normal waits for the hours' end, a muted topic is skipped.
	for range 2 {
		send(invoice("email", "push"), map[string]expected{"email": sentAtOnce, "push": sentAtOnce})
	}
	for range 4 {
		send(invoice("email"), map[string]expected{"email": sentAtOnce})
	}
	for range 2 {
		send(reservation("push"), map[string]expected{"push": skippedFor("preference")})
	}
	for range 2 {
		send(reservation("email"), map[string]expected{"email": releasedAndSent("quiet_hours")})
	}
	fanout, err := c.NotifyTopic(ctx, client.TopicNotification{Type: "reservation.approved", Topic: topic, Priority: "low", Channels: []string{"email"},
		Data: map[string]string{"reservationUrl": "https://example.com/r/2"}})
	if err != nil {
		t.Fatal(err)
	}
	muted := domain.CampaignNotificationID(fanout.ID, user)
	stacktest.Eventually(t, 20*time.Second, "the topic send's notification", func() bool {
		_, err := c.GetNotification(ctx, muted)
		return err == nil
	})
	wants = append(wants, historyWant{id: muted, typ: "reservation.approved", campaign: fanout.ID, deliveries: map[string]expected{"email": skippedFor("muted")}})
	st.Clock.Advance(time.Millisecond)
	waitHistory(t, c, user, wants, false)

	// Quiet hours over (the two deferred wait for their end all the same),
	// and a new rate-limit window: the thread's comments become one digest,
	// the 6th and 7th NORMAL of the hour (the quiet-hours two counted) go
	// into the budget digest, cancels drop, a sendAt waits.
	if _, err := c.PutUser(ctx, user, profile); err != nil {
		t.Fatal(err)
	}
	st.Clock.Advance(time.Minute)
	for range 4 {
		send(comment("high", ""), map[string]expected{"push": sentAtOnce})
	}
	thread := "thread-" + user
	leader := send(comment("", thread), map[string]expected{"push": releasedAndSent("digest")})
	for range 4 {
		send(comment("", thread), map[string]expected{"push": skippedFor("digested")})
	}
	for range 3 {
		send(reservation("email"), map[string]expected{"email": sentAtOnce})
	}
	budgetLeader := send(reservation("email"), map[string]expected{"email": releasedAndSent("budget")})
	budgetMember := send(reservation("email"), map[string]expected{"email": {status: "skipped", reason: "digested", decision: "skipped: digested",
		trail: []string{"deferred/budget", "skipped/digested"}, pending: "deferred"}})
	later := st.Clock.Now().Add(48 * time.Hour).UTC().Truncate(time.Millisecond)
	var cancels []string
	for range 2 {
		n := invoice("email")
		n.SendAt = &later
		cancels = append(cancels, send(n, map[string]expected{"email": {status: "dropped", reason: "cancelled", decision: "dropped: cancelled",
			trail: []string{"deferred/scheduled", "dropped/cancelled"}, pending: "deferred"}}))
	}
	n := invoice("email")
	n.SendAt = &later
	send(n, map[string]expected{"email": {status: "deferred", reason: "scheduled", decision: "deferred: scheduled until " + later.Format(time.RFC3339Nano),
		trail: []string{"deferred/scheduled"}}})
	held := waitHistory(t, c, user, wants, false)
	// Every deferred delivery's decision says until when, or what it waits for.
	for _, h := range []struct{ id, channel, decision string }{
		{leader, "push", "deferred: digest until "},
		{budgetLeader, "email", "deferred: budget until "},
		{budgetMember, "email", "deferred: budget, in the digest of " + budgetLeader},
	} {
		d := held[h.id].Deliveries[h.channel]
		want := h.decision
		if strings.HasSuffix(want, "until ") && d.DueAt != nil {
			want += d.DueAt.UTC().Format(time.RFC3339Nano)
		}
		if d.Decision != want {
			t.Errorf("%s %s while held: decision %q, want %q", h.id, h.channel, d.Decision, want)
		}
	}
	for _, id := range cancels {
		if _, err := c.CancelNotification(ctx, id); err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(wants, func(w historyWant) bool { return w.id == id })
		e := wants[i].deliveries["email"]
		e.pending = "" // dropped now
		wants[i].deliveries["email"] = e
	}

	// Two invoices fail on every one of their receives (MaxReceiveCount 3).
	setFault(t, devstack.FaultTransient, 6)
	for range 2 {
		send(invoice("email"), map[string]expected{"email": {status: "failed", reason: "exhausted",
			trail: []string{"sending", "retrying", "sending", "retrying", "sending", "failed/exhausted"}}})
	}
	waitHistory(t, c, user, wants, false)
	postFault(t, map[string]any{"channel": "email", "mode": devstack.FaultOff})

	// Past the quiet hours' end, the digest's window and the budget's hour.
	var due time.Time
	for _, e := range held {
		for _, d := range e.Deliveries {
			if d.DueAt != nil && d.DueAt.Before(later) && d.DueAt.After(due) {
				due = *d.DueAt
			}
		}
	}
	st.Clock.Advance(due.Sub(st.Clock.Now()) + time.Second)
	waitHistory(t, c, user, wants, true)
	if len(wants) != 30 {
		t.Fatalf("%d notifications sent, want 30", len(wants))
	}

	// Three pages of ten, one query each, newest first.
	st.StoreFaults.Begin(user)
	var got []client.HistoryEntry
	q := client.HistoryQuery{Page: client.Page{Limit: 10}}
	for pages := 1; ; pages++ {
		before := historyQueries(st)
		page, err := c.ListUserNotifications(ctx, user, q)
		if err != nil {
			t.Fatal(err)
		}
		if n := historyQueries(st) - before; n != 1 {
			t.Errorf("page %d: %d queries, want 1", pages, n)
		}
		if len(page.Items) != 10 {
			t.Errorf("page %d: %d entries, want 10", pages, len(page.Items))
		}
		got = append(got, page.Items...)
		if page.NextCursor == "" || pages == 4 {
			if pages != 3 {
				t.Errorf("%d pages, want 3", pages)
			}
			break
		}
		q.Cursor = page.NextCursor
	}
	if len(got) != len(wants) {
		t.Fatalf("%d entries, want %d", len(got), len(wants))
	}
	for i, e := range got {
		w := wants[len(wants)-1-i]
		if e.ID != w.id || e.Type != w.typ || e.CampaignID != w.campaign || !strings.HasSuffix(e.Caller, "/"+caller) {
			t.Errorf("entry %d: %s %s (campaign %q) by %s, want %s %s (campaign %q) by %s", i, e.ID, e.Type, e.CampaignID, e.Caller, w.id, w.typ, w.campaign, caller)
			continue
		}
		if len(e.Deliveries) != len(w.deliveries) {
			t.Errorf("entry %d (%s): deliveries %v, want %d", i, e.ID, slices.Collect(maps.Keys(e.Deliveries)), len(w.deliveries))
		}
		for ch, want := range w.deliveries {
			d := e.Deliveries[ch]
			if d.Status != want.status || d.Reason != want.reason || d.Decision != want.decision || !trailMatches(trailOf(d), want.trail) {
				t.Errorf("entry %d (%s %s) %s: %s %q, decision %q, trail %v; want %s %q, decision %q, trail %v", i, e.ID, e.Type, ch,
					d.Status, d.Reason, d.Decision, trailOf(d), want.status, want.reason, want.decision, want.trail)
			}
			if want.status == "sent" && (d.SentAt == nil || d.QueuedAt == nil) {
				t.Errorf("entry %d %s: sent without its times: %+v", i, ch, d)
			}
			if want.status == "failed" && d.Attempts != 3 {
				t.Errorf("entry %d %s: failed after %d attempts, want 3", i, ch, d.Attempts)
			}
		}
	}

	// Each filter selects exactly the entries it names.
	newestFirst := func(keep func(historyWant) bool) []string {
		var ids []string
		for i := len(wants) - 1; i >= 0; i-- {
			if keep(wants[i]) {
				ids = append(ids, wants[i].id)
			}
		}
		return ids
	}
	has := func(channel, status string) func(historyWant) bool {
		return func(w historyWant) bool {
			for ch, e := range w.deliveries {
				if (channel == "" || ch == channel) && (status == "" || e.status == status) {
					return true
				}
			}
			return false
		}
	}
	at := func(i int) time.Time { return got[i].CreatedAt }  // got is newest first
	createdIn := func(from, to int) func(historyWant) bool { // wants[from:to]
		return func(w historyWant) bool {
			i := slices.IndexFunc(wants, func(x historyWant) bool { return x.id == w.id })
			return i >= from && i < to
		}
	}
	filters := []struct {
		name string
		q    client.HistoryQuery
		keep func(historyWant) bool
	}{
		{"type comment.created", client.HistoryQuery{Type: "comment.created"}, func(w historyWant) bool { return w.typ == "comment.created" }},
		{"type invoice.payment_failed", client.HistoryQuery{Type: "invoice.payment_failed"}, func(w historyWant) bool { return w.typ == "invoice.payment_failed" }},
		{"channel push", client.HistoryQuery{Channel: "push"}, has("push", "")},
		{"status failed", client.HistoryQuery{Status: "failed"}, has("", "failed")},
		{"status dropped", client.HistoryQuery{Status: "dropped"}, has("", "dropped")},
		{"status deferred", client.HistoryQuery{Status: "deferred"}, has("", "deferred")},
		{"status skipped on email", client.HistoryQuery{Status: "skipped", Channel: "email"}, has("email", "skipped")},
		{"status sent on push", client.HistoryQuery{Status: "sent", Channel: "push"}, has("push", "sent")},
		{"since the 10th newest", client.HistoryQuery{Since: at(9)}, createdIn(len(wants)-10, len(wants))},
		{"until the 21st newest", client.HistoryQuery{Until: at(20)}, createdIn(0, len(wants)-21)},
		{"from the 21st newest until the 10th", client.HistoryQuery{Since: at(20), Until: at(9)}, createdIn(len(wants)-21, len(wants)-10)},
	}
	for _, f := range filters {
		f.q.Limit = 100
		page, err := c.ListUserNotifications(ctx, user, f.q)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, e := range page.Items {
			ids = append(ids, e.ID)
		}
		if want := newestFirst(f.keep); len(want) == 0 || !slices.Equal(ids, want) {
			t.Errorf("%s: %v, want %v", f.name, ids, want)
		}
	}
	other, err := stacktest.Client(t, "another-svc").ListUserNotifications(ctx, user, client.HistoryQuery{})
	if err != nil || len(other.Items) != 0 {
		t.Errorf("another caller: %+v, %v; want none", other, err)
	}
	if resp := stacktest.Do(t, http.MethodGet, "/v1/users/"+user+"/notifications?status=nope", nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a bad status filter: %d, want 400", resp.StatusCode)
	}
}

// historyQueries counts the API function's queries that named the run's
// user (its history partition) since the run began.
func historyQueries(st *devstack.Stack) int {
	n := 0
	for _, c := range st.StoreFaults.Calls() {
		if c.Function == "ApiFunction" && c.Operation == "DynamoDB.Query" && c.Keyed {
			n++
		}
	}
	return n
}
