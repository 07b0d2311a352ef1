// Package history holds the end-to-end tests of a recipient's delivery
// history (GET /v1/users/{userId}/notifications) and a delivery's decision
// trail (herald notification explain) on the local stack. It moves the
// stack's clock and sets the email provider's faults, so it has a stack of
// its own and its tests run one after the other.
package history

import (
	"bytes"
	"context"
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
	// the clock passing its due time; a retry a second after a throttle.
	stacktest.Main(m, devstack.Config{ScheduleInterval: 250 * time.Millisecond})
}

func uniqueUser(t testing.TB) string {
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	return stacktest.UniqueID(name[:min(len(name), 40)])
}

// invoice is an invoice.payment_failed (email, and push: the user has no
// device, so skipped: no_contact) to user.
func invoice(user string) client.Notification {
	return client.Notification{Type: "invoice.payment_failed", Recipient: client.Recipient{UserID: user, Email: user + "@example.com"},
		Data: map[string]string{"invoiceUrl": "https://example.com/i/9"}}
}

// waitEmail waits until the notification's email delivery is in want and
// returns the notification as the API shows it.
func waitEmail(t *testing.T, c *client.Client, id, want string) *client.NotificationStatus {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
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

func setFault(t *testing.T, mode devstack.FaultMode, times int) {
	t.Helper()
	if err := stacktest.Stack(t).Faults.Set(domain.ChannelEmail, mode, times); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stacktest.Stack(t).Faults.Set(domain.ChannelEmail, devstack.FaultOff, 0) })
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
	if !slices.Equal(statuses, want) {
		t.Fatalf("trail %v, want %v", statuses, want)
	}

	// What herald notification explain prints (cmd/herald: the API's
	// answer, printed by ops.PrintTrail).
	var out bytes.Buffer
	ops.PrintTrail(&out, sent)
	t.Logf("herald notification explain:\n%s", out.String())
	steps := []string{`accepted`, `deferred until .* \(quiet_hours\)`, `released`, `queued`, `claimed \(sending\)`,
		`retrying: \w+, retry in [0-9.]+m?s`, `claimed \(sending\)`, `sent`}
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

// TestHistoryPagesTheCallersNotificationsOneQueryEach: a user's
// notifications of three types in several states (sent, skipped: no
// contact, deferred: scheduled, dropped: cancelled, failed: rejected) are
// paged newest first, each page with one query of the API's, each entry
// with its deliveries' states and reasons; the filters select, and another
// caller sees none of them.
func TestHistoryPagesTheCallersNotificationsOneQueryEach(t *testing.T) {
	st := stacktest.Stack(t)
	ctx := context.Background()
	user, caller := uniqueUser(t), "history-svc"
	c := stacktest.Client(t, caller)
	type want struct {
		id, typ, email string
	}
	var wants []want // oldest first
	send := func(n client.Notification, emailState string) string {
		t.Helper()
		a, err := c.Send(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if emailState != "" {
			waitEmail(t, c, a.ID, emailState)
		}
		wants = append(wants, want{a.ID, n.Type, emailState})
		st.Clock.Advance(time.Millisecond) // distinct creation times
		return a.ID
	}
	for range 2 {
		send(invoice(user), "sent")
	}
	send(client.Notification{Type: "reservation.approved", Recipient: client.Recipient{UserID: user, Email: user + "@example.com"},
		Data: map[string]string{"reservationUrl": "https://example.com/r/1"}}, "sent")
	for range 2 {
		n := invoice(user)
		later := st.Clock.Now().Add(24 * time.Hour)
		n.SendAt = &later
		send(n, "deferred")
	}
	for range 2 {
		n := invoice(user)
		later := st.Clock.Now().Add(24 * time.Hour)
		n.SendAt = &later
		id := send(n, "deferred")
		if _, err := c.CancelNotification(ctx, id); err != nil {
			t.Fatal(err)
		}
		wants[len(wants)-1].email = "dropped"
	}
	setFault(t, devstack.FaultPermanent, 2)
	for range 2 {
		send(invoice(user), "failed")
	}
	_ = st.Faults.Set(domain.ChannelEmail, devstack.FaultOff, 0)
	sms := client.Notification{Type: "otp.code", Recipient: client.Recipient{UserID: user, Phone: "+15550100"}, Data: map[string]string{"code": "123456"}}
	smsID := send(sms, "")
	waitState(t, c, smsID, "sms", "sent")
	wants[len(wants)-1].email = ""

	st.StoreFaults.Begin(user)
	var got []client.HistoryEntry
	q := client.HistoryQuery{Page: client.Page{Limit: 4}}
	for pages := 0; ; pages++ {
		before := historyQueries(st)
		page, err := c.ListUserNotifications(ctx, user, q)
		if err != nil {
			t.Fatal(err)
		}
		if n := historyQueries(st) - before; n != 1 {
			t.Errorf("page %d: %d queries, want 1", pages+1, n)
		}
		got = append(got, page.Items...)
		if page.NextCursor == "" || pages > 10 {
			break
		}
		q.Cursor = page.NextCursor
	}
	if len(got) != len(wants) {
		t.Fatalf("%d entries, want %d", len(got), len(wants))
	}
	for i, e := range got {
		w := wants[len(wants)-1-i] // newest first
		if e.ID != w.id || e.Type != w.typ || !strings.HasSuffix(e.Caller, "/"+caller) {
			t.Errorf("entry %d: %s %s by %s, want %s %s by %s", i, e.ID, e.Type, e.Caller, w.id, w.typ, caller)
		}
		if w.email == "" {
			continue
		}
		email := e.Deliveries["email"]
		if email.Status != w.email || len(email.Trail) == 0 {
			t.Errorf("entry %d (%s): email %+v, want %s with its trail", i, e.ID, email, w.email)
		}
		wantReason := map[string]string{"deferred": "scheduled", "dropped": "cancelled", "failed": "rejected"}[w.email]
		if email.Reason != wantReason {
			t.Errorf("entry %d: email %s reason %q, want %q", i, email.Status, email.Reason, wantReason)
		}
		if w.email == "sent" && (email.SentAt == nil || email.QueuedAt == nil) {
			t.Errorf("entry %d: sent without its times: %+v", i, email)
		}
		if push := e.Deliveries["push"]; w.typ != "otp.code" && push.Status != "skipped" || push.Reason != "no_contact" || push.Decision != "skipped: no_contact" {
			t.Errorf("entry %d: push %+v, want skipped: no_contact", i, push)
		}
	}

	filters := []struct {
		name string
		q    client.HistoryQuery
		want int
	}{
		{"type otp.code", client.HistoryQuery{Type: "otp.code"}, 1},
		{"status failed", client.HistoryQuery{Status: "failed"}, 2},
		{"status dropped on email", client.HistoryQuery{Status: "dropped", Channel: "email"}, 2},
		{"channel sms", client.HistoryQuery{Channel: "sms"}, 1},
		{"until the first deferred", client.HistoryQuery{Until: mustTime(t, got[len(got)-4].CreatedAt)}, 3},
	}
	for _, f := range filters {
		f.q.Limit = 100
		page, err := c.ListUserNotifications(ctx, user, f.q)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) != f.want {
			t.Errorf("%s: %d entries, want %d", f.name, len(page.Items), f.want)
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

func mustTime(t *testing.T, at time.Time) time.Time {
	t.Helper()
	if at.IsZero() {
		t.Fatal("entry without createdAt")
	}
	return at
}

func waitState(t *testing.T, c *client.Client, id, ch, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := c.GetNotification(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if st.Deliveries[ch].Status == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s %+v, want %s", id, ch, st.Deliveries[ch], want)
		}
		time.Sleep(50 * time.Millisecond)
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
