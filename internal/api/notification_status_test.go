package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

func (ta *testAPI) accepted(t *testing.T, body, key string) string {
	t.Helper()
	resp := ta.post(t, body, "Idempotency-Key: "+key)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST = %d %s", resp.StatusCode, resp.Body)
	}
	return decodeBody[acceptedBody](t, resp.Body).ID
}

func TestGetNotificationShowsDeliveries(t *testing.T) {
	ta := newTestAPI(t)
	id := ta.accepted(t, `{"type":"invoice.payment_failed","recipient":{"userId":"u1","email":"a@example.com"},"data":{"invoiceUrl":"https://example.com/i/9"},"batchKey":"b1","expiresAt":"2026-03-02T00:00:00Z"}`, "k")
	due := testNow.Add(time.Hour)
	ta.store.addDelivery(domain.Delivery{NotificationID: id, Channel: domain.ChannelEmail, Status: domain.StatusSent, Attempts: 2, UpdatedAt: testNow,
		Provider: "ses:eu-west-1", Trail: []domain.Step{{At: testNow, Status: domain.StatusSending}, {At: testNow.Add(time.Second), Status: domain.StatusRetrying, Error: "throttled", Note: "retry in 4s"},
			{At: testNow.Add(5 * time.Second), Status: domain.StatusSending}, {At: testNow.Add(6 * time.Second), Status: domain.StatusSent}}})
	ta.store.addDelivery(domain.Delivery{NotificationID: id, Channel: domain.ChannelPush, Status: domain.StatusDeferred, Reason: domain.ReasonQuietHours, DueAt: due, UpdatedAt: testNow,
		Trail: []domain.Step{{At: testNow, Status: domain.StatusDeferred, Reason: domain.ReasonQuietHours, DueAt: due}}})
	resp := ta.do(t, apiCall{route: "GET /v1/notifications/{id}", params: map[string]string{"id": id}, caller: "svc"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET = %d %s", resp.StatusCode, resp.Body)
	}
	want := `{"id":"` + id + `","type":"invoice.payment_failed","status":"accepted","overall":"deferred","recipient":{"userId":"u1"},"priority":"high",` +
		`"batchKey":"b1","sendAt":null,"expiresAt":"2026-03-02T00:00:00Z","createdAt":"2026-03-01T12:00:00Z","cancelledAt":null,"deliveries":{` +
		`"email":{"status":"sent","reason":null,"attempts":2,"updatedAt":"2026-03-01T12:00:00Z","dueAt":null,"provider":"ses:eu-west-1",` +
		`"queuedAt":"2026-03-01T12:00:00Z","sentAt":"2026-03-01T12:00:06Z","trail":[{"at":"2026-03-01T12:00:00Z","status":"sending"},` +
		`{"at":"2026-03-01T12:00:01Z","status":"retrying","error":"throttled","note":"retry in 4s"},{"at":"2026-03-01T12:00:05Z","status":"sending"},` +
		`{"at":"2026-03-01T12:00:06Z","status":"sent"}]},` +
		`"push":{"status":"deferred","reason":"quiet_hours","attempts":0,"updatedAt":"2026-03-01T12:00:00Z","dueAt":"2026-03-01T13:00:00Z",` +
		`"decision":"deferred: quiet_hours until 2026-03-01T13:00:00Z","trail":[{"at":"2026-03-01T12:00:00Z","status":"deferred","reason":"quiet_hours","dueAt":"2026-03-01T13:00:00Z"}]}}}`
	if resp.Body != want {
		t.Fatalf("GET body\n got %s\nwant %s", resp.Body, want)
	}
	if strings.Contains(resp.Body, "a@example.com") || strings.Contains(resp.Body, "invoiceUrl") {
		t.Fatal("contact or data leaked into the status view")
	}
	// Another caller cannot see it, and cannot tell it exists.
	other := ta.do(t, apiCall{route: "GET /v1/notifications/{id}", params: map[string]string{"id": id}, caller: "other"})
	unknown := ta.do(t, apiCall{route: "GET /v1/notifications/{id}", params: map[string]string{"id": NewRandomID(make([]byte, 16))}, caller: "svc"})
	if other.StatusCode != 404 || other.Body != unknown.Body {
		t.Fatalf("other caller = %d %s; unknown = %s", other.StatusCode, other.Body, unknown.Body)
	}
}

func TestCancelDropsWhatIsNotSentYet(t *testing.T) {
	ta := newTestAPI(t)
	id := ta.accepted(t, validInvoice, "k")
	other := ta.accepted(t, `{"type":"security.login_alert","recipient":{"userId":"u1"},"data":{"url":"https://example.com/s"}}`, "k2")
	for _, d := range []domain.Delivery{
		{NotificationID: id, Channel: domain.ChannelEmail, Status: domain.StatusQueued},
		{NotificationID: id, Channel: domain.ChannelPush, Status: domain.StatusSending, Attempts: 1},
		{NotificationID: other, Channel: domain.ChannelEmail, Status: domain.StatusRetrying},
		{NotificationID: other, Channel: domain.ChannelSMS, Status: domain.StatusSent},
	} {
		ta.store.addDelivery(d)
	}
	// Another caller cannot cancel it.
	resp := ta.do(t, apiCall{route: "DELETE /v1/notifications/{id}", params: map[string]string{"id": id}, caller: "intruder"})
	if resp.StatusCode != 404 || ta.store.notifications[id].Status != domain.NotificationAccepted {
		t.Fatalf("foreign cancel = %d %s", resp.StatusCode, resp.Body)
	}
	resp = ta.do(t, apiCall{route: "DELETE /v1/notifications/{id}", params: map[string]string{"id": id}, caller: "svc"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE = %d %s", resp.StatusCode, resp.Body)
	}
	v := decodeBody[notificationView](t, resp.Body)
	if v.Status != "cancelled" || v.CancelledAt == nil {
		t.Errorf("view = %+v", v)
	}
	if d := v.Deliveries["email"]; d.Status != "dropped" || d.Reason == nil || *d.Reason != "cancelled" {
		t.Errorf("email = %+v", d)
	}
	if d := v.Deliveries["push"]; d.Status != "sending" { // already with the provider
		t.Errorf("push = %+v", d)
	}
	// The other notification is untouched.
	if s := ta.store.delivery(other, domain.ChannelEmail).Status; s != domain.StatusRetrying {
		t.Errorf("other notification's delivery = %s", s)
	}
	// Cancelling again answers the same and writes nothing new.
	writes := ta.store.writeCount()
	again := ta.do(t, apiCall{route: "DELETE /v1/notifications/{id}", params: map[string]string{"id": id}, caller: "svc"})
	if again.StatusCode != http.StatusOK || decodeBody[notificationView](t, again.Body).Status != "cancelled" || ta.store.writeCount() != writes {
		t.Fatalf("second DELETE = %d %s (writes %d → %d)", again.StatusCode, again.Body, writes, ta.store.writeCount())
	}
}

func TestCancelEveryUnsentState(t *testing.T) {
	for _, s := range []domain.Status{domain.StatusPlanned, domain.StatusDeferred, domain.StatusQueued, domain.StatusRetrying} {
		ta := newTestAPI(t)
		id := ta.accepted(t, validInvoice, "k")
		ta.store.addDelivery(domain.Delivery{NotificationID: id, Channel: domain.ChannelEmail, Status: s})
		ta.do(t, apiCall{route: "DELETE /v1/notifications/{id}", params: map[string]string{"id": id}, caller: "svc"})
		if d := ta.store.delivery(id, domain.ChannelEmail); d.Status != domain.StatusDropped || d.Reason != domain.ReasonCancelled {
			t.Errorf("%s → %s/%s, want dropped/cancelled", s, d.Status, d.Reason)
		}
	}
	for _, s := range []domain.Status{domain.StatusSent, domain.StatusFailed, domain.StatusSkipped, domain.StatusDelivered} {
		ta := newTestAPI(t)
		id := ta.accepted(t, validInvoice, "k")
		ta.store.addDelivery(domain.Delivery{NotificationID: id, Channel: domain.ChannelEmail, Status: s})
		ta.do(t, apiCall{route: "DELETE /v1/notifications/{id}", params: map[string]string{"id": id}, caller: "svc"})
		if d := ta.store.delivery(id, domain.ChannelEmail); d.Status != s {
			t.Errorf("%s changed to %s", s, d.Status)
		}
	}
}

func TestGetAndCancelStoreErrors(t *testing.T) {
	ta := newTestAPI(t)
	id := ta.accepted(t, validInvoice, "k")
	ta.store.fail = errors.New("boom")
	for _, route := range []string{"GET /v1/notifications/{id}", "DELETE /v1/notifications/{id}"} {
		resp := ta.do(t, apiCall{route: route, params: map[string]string{"id": id}, caller: "svc"})
		if p := decodeProblem(t, resp); resp.StatusCode != 500 || p.Code != "internal" {
			t.Errorf("%s = %d %s", route, resp.StatusCode, resp.Body)
		}
	}
}

// A channel sent at once has no delivery item until a worker's claim
// creates it: the view derives it from the notification's plan, queued. The
// cancel writes its dropped: cancelled item (one conditional put, only at
// cancel), shown as the derived view would show it.
func TestViewDerivesUnclaimedChannels(t *testing.T) {
	ta := newTestAPI(t)
	id := ta.accepted(t, validInvoice, "k") // invoice.payment_failed: email and push
	ta.store.addDelivery(domain.Delivery{NotificationID: id, Channel: domain.ChannelPush, Status: domain.StatusSent, Attempts: 1, UpdatedAt: testNow})
	v := ta.get(t, id)
	if d := v.Deliveries["email"]; d.Status != "queued" || d.Reason != nil || d.Attempts != 0 || d.UpdatedAt != v.CreatedAt {
		t.Errorf("unclaimed email = %+v, want queued since acceptance", d)
	}
	if d := v.Deliveries["push"]; d.Status != "sent" || len(v.Deliveries) != 2 {
		t.Errorf("deliveries = %+v, want push sent and email derived", v.Deliveries)
	}
	writes := ta.store.writeCount()
	resp := ta.do(t, apiCall{route: "DELETE /v1/notifications/{id}", params: map[string]string{"id": id}, caller: "svc"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE = %d %s", resp.StatusCode, resp.Body)
	}
	if got := ta.store.writeCount() - writes; got != 2 {
		t.Errorf("cancel wrote %d items, want 2 (the notification and the unclaimed channel's dropped item)", got)
	}
	for _, v := range []notificationView{decodeBody[notificationView](t, resp.Body), ta.get(t, id)} {
		d := v.Deliveries["email"]
		if d.Status != "dropped" || d.Reason == nil || *d.Reason != "cancelled" || v.CancelledAt == nil || d.UpdatedAt != *v.CancelledAt {
			t.Errorf("unclaimed email after cancel = %+v, want dropped: cancelled at the cancellation", d)
		}
		if v.Deliveries["push"].Status != "sent" {
			t.Errorf("push = %+v, want sent kept", v.Deliveries["push"])
		}
	}
	if d, ok := ta.store.deliveries.Get(id, domain.ChannelEmail); !ok || d.Status != domain.StatusDropped || d.Reason != domain.ReasonCancelled || d.UserID != "u1" || d.Caller != ta.store.notifications[id].Caller {
		t.Errorf("unclaimed channel's item = %+v (found %v), want dropped: cancelled with the notification's fields", d, ok)
	}
	// Cancelling again writes nothing: the items exist.
	writes = ta.store.writeCount()
	ta.do(t, apiCall{route: "DELETE /v1/notifications/{id}", params: map[string]string{"id": id}, caller: "svc"})
	if ta.store.writeCount() != writes {
		t.Errorf("second cancel wrote %d items", ta.store.writeCount()-writes)
	}
}

func (ta *testAPI) get(t *testing.T, id string) notificationView {
	t.Helper()
	resp := ta.do(t, apiCall{route: "GET /v1/notifications/{id}", params: map[string]string{"id": id}, caller: "svc"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET = %d %s", resp.StatusCode, resp.Body)
	}
	return decodeBody[notificationView](t, resp.Body)
}

// workerClaim is the worker's claim of a channel sent at once
// (internal/worker): conditional on the delivery being absent or claimable.
func workerClaim(n *domain.Notification, ch domain.Channel) domain.Change {
	return domain.Change{To: domain.StatusSending, From: []domain.Status{domain.StatusPlanned, domain.StatusQueued, domain.StatusRetrying},
		ReclaimExpiredLease: testNow, LeaseUntil: testNow.Add(time.Minute), IncrementAttempts: true, Create: domain.DeliveryOf(n, ch)}
}

// A cancel that lands between a worker's read of the notification (not
// cancelled yet) and its claim: the cancel answered the channel dropped, so
// the claim must lose. If the claim won first, the cancel shows it sending.
func TestCancelBetweenWorkerReadAndClaim(t *testing.T) {
	ctx := context.Background()
	t.Run("cancel first", func(t *testing.T) {
		ta := newTestAPI(t)
		id := ta.accepted(t, validInvoice, "k")
		n, _, err := ta.store.GetNotificationWithDeliveries(ctx, id) // the worker's read
		if err != nil || n.Status == domain.NotificationCancelled {
			t.Fatalf("read %+v, %v", n, err)
		}
		resp := ta.do(t, apiCall{route: "DELETE /v1/notifications/{id}", params: map[string]string{"id": id}, caller: "svc"})
		answered := decodeBody[notificationView](t, resp.Body)
		if resp.StatusCode != http.StatusOK || answered.Deliveries["email"].Status != "dropped" {
			t.Fatalf("DELETE = %d %s", resp.StatusCode, resp.Body)
		}
		d, err := ta.store.Transition(ctx, id, domain.ChannelEmail, workerClaim(n, domain.ChannelEmail))
		if !errors.Is(err, domain.ErrConflict) || d == nil || d.Status != domain.StatusDropped || d.Reason != domain.ReasonCancelled {
			t.Fatalf("claim after the cancel = %+v, %v; want domain.ErrConflict against dropped: cancelled", d, err)
		}
		if v := ta.get(t, id); v.Deliveries["email"].Status != "dropped" {
			t.Errorf("after the lost claim: email %+v, want dropped as the cancel answered", v.Deliveries["email"])
		}
	})
	t.Run("claim first", func(t *testing.T) {
		ta := newTestAPI(t)
		id := ta.accepted(t, validInvoice, "k")
		n, _, _ := ta.store.GetNotificationWithDeliveries(ctx, id)
		if _, err := ta.store.Transition(ctx, id, domain.ChannelEmail, workerClaim(n, domain.ChannelEmail)); err != nil {
			t.Fatal(err)
		}
		resp := ta.do(t, apiCall{route: "DELETE /v1/notifications/{id}", params: map[string]string{"id": id}, caller: "svc"})
		v := decodeBody[notificationView](t, resp.Body)
		if resp.StatusCode != http.StatusOK || v.Deliveries["email"].Status != "sending" || v.Deliveries["push"].Status != "dropped" {
			t.Fatalf("DELETE = %d %s; want email sending (claimed first), push dropped", resp.StatusCode, resp.Body)
		}
	})
}

// A cancel whose dropped item cannot be written answers an error, not a
// dropped the channel might not keep; the retry writes it.
func TestCancelUnwrittenDropIsAnError(t *testing.T) {
	ta := newTestAPI(t)
	id := ta.accepted(t, validInvoice, "k")
	ta.store.failCreateDelivery = errors.New("throttled")
	resp := ta.do(t, apiCall{route: "DELETE /v1/notifications/{id}", params: map[string]string{"id": id}, caller: "svc"})
	if resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("DELETE = %d %s, want 500", resp.StatusCode, resp.Body)
	}
	ta.store.failCreateDelivery = nil
	resp = ta.do(t, apiCall{route: "DELETE /v1/notifications/{id}", params: map[string]string{"id": id}, caller: "svc"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("retried DELETE = %d %s", resp.StatusCode, resp.Body)
	}
	if d, ok := ta.store.deliveries.Get(id, domain.ChannelEmail); !ok || d.Status != domain.StatusDropped {
		t.Errorf("after the retry: %+v (found %v), want dropped: cancelled written", d, ok)
	}
}

// Issue 40: a delivery held in the user's budget digest behind another
// notification (deferred: budget, no due time of its own: it goes when the
// digest's leader does) was explained "deferred: budget until
// 0001-01-01T00:00:00Z"; its decision names the digest it waits in.
func TestDecisionOfADigestMemberNamesItsDigest(t *testing.T) {
	due := testNow.Add(time.Hour)
	for _, tc := range []struct {
		name string
		d    domain.Delivery
		want string
	}{
		{"a budget digest's member", domain.Delivery{Status: domain.StatusDeferred, Reason: domain.ReasonBudget, DigestID: "nLeader", BudgetDigest: true},
			"deferred: budget, in the digest of nLeader"},
		{"the budget digest's leader", domain.Delivery{Status: domain.StatusDeferred, Reason: domain.ReasonBudget, DigestID: "nLeader", BudgetDigest: true, DueAt: due},
			"deferred: budget until 2026-03-01T13:00:00Z"},
		{"quiet hours", domain.Delivery{Status: domain.StatusDeferred, Reason: domain.ReasonQuietHours, DueAt: due},
			"deferred: quiet_hours until 2026-03-01T13:00:00Z"},
		{"a digest's member, recorded", domain.Delivery{Status: domain.StatusSkipped, Reason: domain.ReasonDigested, DigestID: "nLeader"}, "skipped: digested"},
	} {
		if got := deliveryViewOf(tc.d, testNow).Decision; got != tc.want {
			t.Errorf("%s: decision %q, want %q", tc.name, got, tc.want)
		}
	}
}

// Issue 40: a released delivery whose work message a worker claimed before
// the scheduler recorded it queued (planned → sending: the queued write
// then loses) was shown sent without a queuedAt; it was queued when it was
// released.
func TestReleasedDeliveryClaimedBeforeItsQueuedWriteHasItsQueuedTime(t *testing.T) {
	released := testNow.Add(time.Hour)
	d := domain.Delivery{Status: domain.StatusSent, Trail: []domain.Step{
		{At: testNow, Status: domain.StatusDeferred, Reason: domain.ReasonBudget, DueAt: released},
		{At: released, Status: domain.StatusPlanned},
		{At: released.Add(time.Second), Status: domain.StatusSending},
		{At: released.Add(2 * time.Second), Status: domain.StatusSent},
	}}
	v := deliveryViewOf(d, testNow)
	if v.QueuedAt == nil || *v.QueuedAt != "2026-03-01T13:00:00Z" || v.SentAt == nil || *v.SentAt != "2026-03-01T13:00:02Z" {
		t.Errorf("queuedAt %v, sentAt %v; want the release's time and the send's", deref(v.QueuedAt), deref(v.SentAt))
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
