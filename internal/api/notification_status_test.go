package api

import (
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
	ta.store.addDelivery(domain.Delivery{NotificationID: id, Channel: domain.ChannelEmail, Status: domain.StatusSent, Attempts: 2, UpdatedAt: testNow})
	ta.store.addDelivery(domain.Delivery{NotificationID: id, Channel: domain.ChannelPush, Status: domain.StatusDeferred, Reason: domain.ReasonQuietHours, DueAt: due, UpdatedAt: testNow})
	resp := ta.do(t, apiCall{route: "GET /v1/notifications/{id}", params: map[string]string{"id": id}, caller: "svc"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET = %d %s", resp.StatusCode, resp.Body)
	}
	want := `{"id":"` + id + `","type":"invoice.payment_failed","status":"accepted","recipient":{"userId":"u1"},"priority":"high",` +
		`"batchKey":"b1","sendAt":null,"expiresAt":"2026-03-02T00:00:00Z","createdAt":"2026-03-01T12:00:00Z","cancelledAt":null,"deliveries":{` +
		`"email":{"status":"sent","reason":null,"attempts":2,"updatedAt":"2026-03-01T12:00:00Z","dueAt":null},` +
		`"push":{"status":"deferred","reason":"quiet_hours","attempts":0,"updatedAt":"2026-03-01T12:00:00Z","dueAt":"2026-03-01T13:00:00Z"}}}`
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
// creates it: the view derives it from the notification's plan, queued, and
// dropped: cancelled once cancelled — with no write for it at cancel.
func TestViewDerivesUnclaimedChannels(t *testing.T) {
	ta := newTestAPI(t)
	id := ta.accepted(t, validInvoice, "k") // invoice.payment_failed: email and push
	ta.store.addDelivery(domain.Delivery{NotificationID: id, Channel: domain.ChannelPush, Status: domain.StatusSent, Attempts: 1, UpdatedAt: testNow})
	get := func() notificationView {
		resp := ta.do(t, apiCall{route: "GET /v1/notifications/{id}", params: map[string]string{"id": id}, caller: "svc"})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET = %d %s", resp.StatusCode, resp.Body)
		}
		return decodeBody[notificationView](t, resp.Body)
	}
	v := get()
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
	if got := ta.store.writeCount() - writes; got != 1 {
		t.Errorf("cancel wrote %d items, want 1 (the notification; nothing for the unclaimed channel)", got)
	}
	for _, v := range []notificationView{decodeBody[notificationView](t, resp.Body), get()} {
		d := v.Deliveries["email"]
		if d.Status != "dropped" || d.Reason == nil || *d.Reason != "cancelled" || v.CancelledAt == nil || d.UpdatedAt != *v.CancelledAt {
			t.Errorf("unclaimed email after cancel = %+v, want dropped: cancelled at the cancellation", d)
		}
		if v.Deliveries["push"].Status != "sent" {
			t.Errorf("push = %+v, want sent kept", v.Deliveries["push"])
		}
	}
	if _, ok := ta.store.deliveries.Get(id, domain.ChannelEmail); ok {
		t.Error("cancel created a delivery item for the unclaimed channel")
	}
}
