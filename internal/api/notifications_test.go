package api

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

func TestCreateNotificationAccepts(t *testing.T) {
	ta := newTestAPI(t)
	resp := ta.post(t, validInvoice, "Idempotency-Key: k1")
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("status = %d %s", resp.StatusCode, resp.Body)
	}
	body := decodeBody[acceptedBody](t, resp.Body)
	if body.Status != "accepted" || !validNotificationID(body.ID) || body.CreatedAt != "2026-03-01T12:00:00Z" {
		t.Errorf("body = %+v", body)
	}
	if resp.Headers["Location"] != "/v1/notifications/"+body.ID || resp.Headers[replayedHeader] != "" {
		t.Errorf("headers = %v", resp.Headers)
	}
	n := ta.store.notifications[body.ID]
	if n == nil || n.Caller != "arn:aws:iam::123456789012:user/svc" || n.Priority != domain.PriorityHigh || n.DedupeKey != "k\x00k1" ||
		n.Data["invoiceUrl"] != "https://example.com/i/9" || n.Recipient.Email != "u1@example.com" {
		t.Fatalf("stored %+v", n)
	}
}

func TestIdempotency(t *testing.T) {
	ta := newTestAPI(t)
	first := ta.post(t, validInvoice, "Idempotency-Key: k1")
	// The same request, differently spelled: key order, whitespace, time zone.
	same := `{ "data": {"invoiceUrl": "https://example.com/i/9"}, "recipient": {"email":"u1@example.com", "userId":"u1"},
	           "type": "invoice.payment_failed" }`
	replay := ta.post(t, same, "Idempotency-Key: k1")
	if replay.StatusCode != http.StatusAccepted || replay.Body != first.Body || replay.Headers[replayedHeader] != "true" ||
		replay.Headers["Location"] != first.Headers["Location"] {
		t.Fatalf("replay = %d %s %v, first %s", replay.StatusCode, replay.Body, replay.Headers, first.Body)
	}
	reused := ta.post(t, strings.Replace(validInvoice, "i/9", "i/10", 1), "Idempotency-Key: k1")
	if p := decodeProblem(t, reused); reused.StatusCode != http.StatusUnprocessableEntity || p.Code != "idempotency_key_reused" || p.Header != "Idempotency-Key" {
		t.Fatalf("reuse = %d %s", reused.StatusCode, reused.Body)
	}
	// Keys are scoped per caller.
	other := ta.do(t, apiCall{route: "POST /v1/notifications", body: validInvoice, caller: "other", headers: map[string]string{"Idempotency-Key": "k1"}})
	if other.StatusCode != http.StatusAccepted || other.Headers[replayedHeader] != "" || decodeBody[acceptedBody](t, other.Body).ID == decodeBody[acceptedBody](t, first.Body).ID {
		t.Fatalf("other caller = %d %s %v", other.StatusCode, other.Body, other.Headers)
	}
	if len(ta.store.notifications) != 2 {
		t.Fatalf("stored %d notifications, want 2", len(ta.store.notifications))
	}
}

func TestSendAtInAnotherZoneIsTheSameRequest(t *testing.T) {
	ta := newTestAPI(t)
	a := ta.post(t, `{"type":"otp.code","recipient":{"userId":"u1"},"data":{"code":"123456"},"sendAt":"2026-03-01T13:00:00Z"}`, "Idempotency-Key: t")
	b := ta.post(t, `{"type":"otp.code","recipient":{"userId":"u1"},"data":{"code":"123456"},"sendAt":"2026-03-01T22:00:00+09:00"}`, "Idempotency-Key: t")
	if a.StatusCode != http.StatusAccepted || b.StatusCode != http.StatusAccepted || b.Headers[replayedHeader] != "true" {
		t.Fatalf("a = %d %s, b = %d %s", a.StatusCode, a.Body, b.StatusCode, b.Body)
	}
	n := ta.store.notifications[decodeBody[acceptedBody](t, a.Body).ID]
	// otp.code expires 10 minutes after it is due when no expiresAt is given.
	if want := time.Date(2026, 3, 1, 13, 10, 0, 0, time.UTC); !n.ExpiresAt.Equal(want) {
		t.Errorf("ExpiresAt = %v, want %v", n.ExpiresAt, want)
	}
}

func TestResourceIDDedupe(t *testing.T) {
	ta := newTestAPI(t)
	body := `{"type":"comment.created","recipient":{"userId":"u1"},"resourceId":"c-1","data":{"actorLabel":"A","url":"https://example.com/c/1"}}`
	a, b := ta.post(t, body), ta.post(t, body)
	if a.StatusCode != http.StatusAccepted || b.Headers[replayedHeader] != "true" || a.Body != b.Body {
		t.Fatalf("a = %s, b = %d %s %v", a.Body, b.StatusCode, b.Body, b.Headers)
	}
	changed := ta.post(t, strings.Replace(body, `"A"`, `"B"`, 1))
	if p := decodeProblem(t, changed); p.Code != "resource_id_reused" || p.Pointer != "/resourceId" || changed.StatusCode != 422 {
		t.Fatalf("changed = %d %s", changed.StatusCode, changed.Body)
	}
	// Another user or type with the same resourceId is another notification.
	otherUser := ta.post(t, strings.Replace(body, `"u1"`, `"u2"`, 1))
	if otherUser.StatusCode != http.StatusAccepted || otherUser.Headers[replayedHeader] != "" {
		t.Fatalf("other user = %d %s", otherUser.StatusCode, otherUser.Body)
	}
	// Without key or resourceId there is no dedupe.
	c, d := ta.post(t, validInvoice), ta.post(t, validInvoice)
	if c.Body == d.Body || d.Headers[replayedHeader] != "" {
		t.Fatalf("no-key requests deduplicated: %s %s", c.Body, d.Body)
	}
	if len(ta.store.notifications) != 4 {
		t.Fatalf("stored %d, want 4", len(ta.store.notifications))
	}
}

func TestConcurrentDuplicatesWriteOnce(t *testing.T) {
	ta := newTestAPI(t)
	const n = 50
	bodies := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := ta.post(t, validInvoice, "Idempotency-Key: storm")
			if resp.StatusCode != http.StatusAccepted {
				t.Errorf("status %d %s", resp.StatusCode, resp.Body)
			}
			bodies[i] = resp.Body
		}()
	}
	wg.Wait()
	for _, b := range bodies {
		if b != bodies[0] {
			t.Fatalf("different bodies: %s vs %s", b, bodies[0])
		}
	}
	if ta.store.writeCount() != 1 {
		t.Fatalf("%d writes, want 1", ta.store.writeCount())
	}
}

func TestAuthentication(t *testing.T) {
	ta := newTestAPI(t)
	// No identity at all: 401.
	resp := ta.do(t, apiCall{route: "POST /v1/notifications", body: validInvoice})
	if p := decodeProblem(t, resp); resp.StatusCode != 401 || p.Code != "unauthenticated" {
		t.Fatalf("no identity = %d %s", resp.StatusCode, resp.Body)
	}
	// A user token on a service route: 403.
	for _, route := range []string{"POST /v1/notifications", "POST /v1/notifications/batch", "GET /v1/notifications/{id}",
		"DELETE /v1/notifications/{id}", "PUT /v1/users/{userId}", "GET /v1/users/{userId}/preferences"} {
		params := map[string]string{}
		if strings.Contains(route, "{id}") {
			params["id"] = "x"
		}
		if strings.Contains(route, "{userId}") {
			params["userId"] = "u1"
		}
		resp = ta.do(t, apiCall{route: route, body: validInvoice, jwtSub: "u1", params: params})
		if p := decodeProblem(t, resp); resp.StatusCode != 403 || p.Code != "service_route" {
			t.Fatalf("%s with a JWT = %d %s", route, resp.StatusCode, resp.Body)
		}
	}
	// The caller comes from the IAM context only; a header cannot pick it.
	resp = ta.do(t, apiCall{route: "POST /v1/notifications", body: validInvoice, caller: "svc",
		headers: map[string]string{"X-Herald-Dev-Caller": "other", "Idempotency-Key": "a"}})
	id := decodeBody[acceptedBody](t, resp.Body).ID
	if got := ta.store.notifications[id].Caller; got != "arn:aws:iam::123456789012:user/svc" {
		t.Fatalf("caller = %q", got)
	}
	if id != dedupeID("arn:aws:iam::123456789012:user/svc", "k\x00a") {
		t.Fatal("id not derived from the IAM caller")
	}
	if len(ta.store.notifications) != 1 {
		t.Fatal("rejected requests were stored")
	}
}

func TestAssumedRoleSessionsShareIdempotency(t *testing.T) {
	ta := newTestAPI(t)
	send := func(session string) string {
		return ta.do(t, apiCall{route: "POST /v1/notifications", body: validInvoice, headers: map[string]string{"Idempotency-Key": "k"},
			arn: "arn:aws:sts::123456789012:assumed-role/Billing/" + session}).Body
	}
	if a, b := send("s1"), send("s2"); a != b {
		t.Fatalf("two sessions of one role got different notifications: %s %s", a, b)
	}
}

func TestStoreFailureIs500WithoutDetail(t *testing.T) {
	ta := newTestAPI(t)
	ta.store.fail = fmt.Errorf("dynamodb: throttled at https://secret")
	resp := ta.post(t, validInvoice)
	if p := decodeProblem(t, resp); resp.StatusCode != 500 || p.Code != "internal" || strings.Contains(resp.Body, "secret") {
		t.Fatalf("= %d %s", resp.StatusCode, resp.Body)
	}
}

func TestUnknownRouteIs404(t *testing.T) {
	ta := newTestAPI(t)
	resp := ta.do(t, apiCall{route: "PATCH /v1/nothing", caller: "svc"})
	if p := decodeProblem(t, resp); resp.StatusCode != 404 || p.Code != "route_not_found" {
		t.Fatalf("= %d %s", resp.StatusCode, resp.Body)
	}
}
