package intake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

// TestDuplicateStorm: 200 concurrent requests over 20 keys from 2 callers
// store exactly 40 notifications, and every request with one (caller, key)
// gets the identical answer.
func TestDuplicateStorm(t *testing.T) {
	stacktest.Stack(t) // skips here, not in the goroutines, without a stack
	user := stacktest.UniqueID("storm")
	const keys, perKey = 20, 5
	callers := []string{"svc-a", "svc-b"}
	type answer struct {
		body     string
		replayed bool
	}
	var mu sync.Mutex
	answers := map[string][]answer{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for round := 0; round < perKey; round++ {
		for _, c := range callers {
			for k := 0; k < keys; k++ {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					key := fmt.Sprintf("%s-key-%d", user, k)
					resp := stacktest.Do(t, http.MethodPost, "/v1/notifications", otp(user, fmt.Sprintf("%06d", k)),
						caller(c), "Idempotency-Key: "+key)
					if resp.StatusCode != http.StatusAccepted {
						t.Errorf("%s %s: %d %s", c, key, resp.StatusCode, resp.Body)
						return
					}
					mu.Lock()
					answers[c+"|"+key] = append(answers[c+"|"+key], answer{string(resp.Body), resp.Header.Get("Idempotent-Replayed") == "true"})
					mu.Unlock()
				}()
			}
		}
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	ids := map[string]bool{}
	for ck, as := range answers {
		if len(as) != perKey {
			t.Fatalf("%s: %d answers", ck, len(as))
		}
		firsts := 0
		for _, a := range as {
			if a.body != as[0].body {
				t.Errorf("%s: answers differ: %s vs %s", ck, a.body, as[0].body)
			}
			if !a.replayed {
				firsts++
			}
		}
		if firsts != 1 {
			t.Errorf("%s: %d answers were not replays, want exactly 1", ck, firsts)
		}
		var a accepted
		stacktestJSON(t, as[0].body, &a)
		ids[a.ID] = true
	}
	if len(ids) != len(callers)*keys {
		t.Fatalf("%d distinct ids, want %d", len(ids), len(callers)*keys)
	}
	// The table holds exactly 40 notifications for the user (the inbox index
	// is eventually consistent: wait for it, then make sure it stays).
	stacktest.Eventually(t, 10*time.Second, "40 inbox items", func() bool { return inboxCount(t, user) >= 40 })
	time.Sleep(500 * time.Millisecond)
	if n := inboxCount(t, user); n != 40 {
		t.Fatalf("%d notifications stored, want 40", n)
	}
}

func stacktestJSON(t *testing.T, body string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
}

func TestReplayAndReuse(t *testing.T) {
	user := stacktest.UniqueID("replay")
	key := "Idempotency-Key: " + user
	first := stacktest.Do(t, http.MethodPost, "/v1/notifications", otp(user, "111111"), caller("svc-a"), key)
	if first.StatusCode != http.StatusAccepted || first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first = %d %s", first.StatusCode, first.Body)
	}
	// Same payload, other spelling.
	same := fmt.Sprintf(` { "data" : {"code":"111111"}, "recipient": {"userId": %q}, "type": "otp.code" }`, user)
	replay := stacktest.Do(t, http.MethodPost, "/v1/notifications", same, caller("svc-a"), key)
	if replay.StatusCode != http.StatusAccepted || string(replay.Body) != string(first.Body) ||
		replay.Header.Get("Idempotent-Replayed") != "true" || replay.Header.Get("Location") != first.Header.Get("Location") {
		t.Fatalf("replay = %d %s %v", replay.StatusCode, replay.Body, replay.Header)
	}
	reused := stacktest.Do(t, http.MethodPost, "/v1/notifications", otp(user, "222222"), caller("svc-a"), key)
	mustProblem(t, reused, http.StatusUnprocessableEntity, "idempotency_key_reused")
	// Another caller owns its own key space.
	other := stacktest.Do(t, http.MethodPost, "/v1/notifications", otp(user, "222222"), caller("svc-b"), key)
	var a, b accepted
	first.JSON(t, &a)
	other.JSON(t, &b)
	if other.StatusCode != http.StatusAccepted || a.ID == b.ID {
		t.Fatalf("other caller = %d %s", other.StatusCode, other.Body)
	}
	if n := inboxCountEventually(t, user, 2); n != 2 {
		t.Fatalf("%d stored, want 2", n)
	}
}

func inboxCountEventually(t *testing.T, user string, want int) int {
	t.Helper()
	n := 0
	stacktest.Eventually(t, 10*time.Second, "inbox count", func() bool { n = inboxCount(t, user); return n >= want })
	return n
}

func TestBatchPartialFailure(t *testing.T) {
	user := stacktest.UniqueID("batch")
	body := fmt.Sprintf(`{"notifications":[
		{"idempotencyKey":"%[1]s-1","type":"otp.code","recipient":{"userId":%[1]q},"data":{"code":"1"}},
		{"idempotencyKey":"%[1]s-2","type":"nope.nope","recipient":{"userId":%[1]q}},
		{"idempotencyKey":"%[1]s-3","type":"otp.code","recipient":{"userId":%[1]q},"data":{"code":"3"},"extra":true},
		{"idempotencyKey":"%[1]s-4","type":"otp.code","recipient":{"userId":%[1]q},"data":{"code":"4"}}]}`, user)
	resp := stacktest.Do(t, http.MethodPost, "/v1/notifications/batch", body, caller("svc-a"))
	if resp.StatusCode != http.StatusMultiStatus {
		t.Fatalf("batch = %d %s", resp.StatusCode, resp.Body)
	}
	var out struct {
		Results []struct {
			Index    int
			Status   int
			ID       string
			Replayed bool
			Problem  *problem
		}
	}
	resp.JSON(t, &out)
	want := []int{202, 422, 400, 202}
	for i, r := range out.Results {
		if r.Index != i || r.Status != want[i] || (r.Status == 202) != (r.ID != "") || (r.Status != 202) != (r.Problem != nil) {
			t.Fatalf("result %d = %+v (%s)", i, r, resp.Body)
		}
		if r.Status == 202 {
			if g, _ := getStatus(t, r.ID, "svc-a"); g.StatusCode != http.StatusOK {
				t.Errorf("GET %s = %d", r.ID, g.StatusCode)
			}
		}
	}
	if out.Results[1].Problem.Pointer != "/notifications/1/type" || out.Results[2].Problem.Pointer != "/notifications/2/extra" {
		t.Errorf("pointers = %+v %+v", out.Results[1].Problem, out.Results[2].Problem)
	}
	// Retrying the batch replays the accepted items and still refuses the bad ones.
	again := stacktest.Do(t, http.MethodPost, "/v1/notifications/batch", body, caller("svc-a"))
	var out2 struct {
		Results []struct {
			Status   int
			ID       string
			Replayed bool
		}
	}
	again.JSON(t, &out2)
	if !out2.Results[0].Replayed || out2.Results[0].ID != out.Results[0].ID || out2.Results[1].Status != 422 {
		t.Fatalf("retry = %s", again.Body)
	}
	if n := inboxCountEventually(t, user, 2); n != 2 {
		t.Fatalf("%d stored, want 2", n)
	}
}

func TestStatusShowsDeliveries(t *testing.T) {
	user := stacktest.UniqueID("status")
	if r := stacktest.Do(t, http.MethodPut, "/v1/users/"+user, fmt.Sprintf(`{"email":"%s@example.com"}`, user)); r.StatusCode != 200 {
		t.Fatalf("PUT user = %d %s", r.StatusCode, r.Body)
	}
	resp := stacktest.Do(t, http.MethodPost, "/v1/notifications",
		fmt.Sprintf(`{"type":"invoice.payment_failed","recipient":{"userId":%q},"data":{"invoiceUrl":"https://example.com/i/1"}}`, user), caller("svc-a"))
	var a accepted
	resp.JSON(t, &a)
	// Email goes out; push has no subscription.
	s := waitDeliveries(t, a.ID, "svc-a", 2, func(d map[string]delivery) bool { return d["email"].Status == "sent" })
	if p := s.Deliveries["push"]; p.Status != "skipped" || p.Reason == nil || *p.Reason != "no_contact" {
		t.Errorf("push = %+v", p)
	}
	if e := s.Deliveries["email"]; e.Attempts != 1 || e.Reason != nil {
		t.Errorf("email = %+v", e)
	}
	// Another caller gets the same 404 as for an id that does not exist.
	foreign, _ := getStatus(t, a.ID, "svc-b")
	mustProblem(t, foreign, http.StatusNotFound, "notification_not_found")
}

func TestCancel(t *testing.T) {
	user := stacktest.UniqueID("cancel")
	stacktest.Do(t, http.MethodPut, "/v1/users/"+user, fmt.Sprintf(`{"email":"%s@example.com"}`, user))
	sendAt := stacktest.Stack(t).Clock.Now().Add(30 * time.Minute).UTC().Format(time.RFC3339)
	resp := stacktest.Do(t, http.MethodPost, "/v1/notifications", fmt.Sprintf(
		`{"type":"reservation.approved","recipient":{"userId":%q},"data":{"reservationUrl":"https://example.com/r/1"},"sendAt":%q}`, user, sendAt), caller("svc-a"))
	var a accepted
	resp.JSON(t, &a)
	// Until the relay runs, GET derives every planned channel queued: wait
	// for its deferred item.
	s := waitDeliveries(t, a.ID, "svc-a", 2, func(d map[string]delivery) bool { return d["email"].Status != "queued" })
	if e := s.Deliveries["email"]; e.Status != "deferred" || e.DueAt == nil {
		t.Fatalf("before cancel: %+v", s.Deliveries)
	}
	mustProblem(t, stacktest.Do(t, http.MethodDelete, "/v1/notifications/"+a.ID, nil, caller("svc-b")), http.StatusNotFound, "notification_not_found")
	del := stacktest.Do(t, http.MethodDelete, "/v1/notifications/"+a.ID, nil, caller("svc-a"))
	if del.StatusCode != http.StatusOK {
		t.Fatalf("DELETE = %d %s", del.StatusCode, del.Body)
	}
	var c status
	del.JSON(t, &c)
	if c.Status != "cancelled" || c.CancelledAt == nil {
		t.Fatalf("cancelled = %s", del.Body)
	}
	if e := c.Deliveries["email"]; e.Status != "dropped" || e.Reason == nil || *e.Reason != "cancelled" {
		t.Errorf("email after cancel = %+v", e)
	}
	// The scheduler finds nothing to release once the time comes.
	stacktest.Stack(t).Clock.Advance(time.Hour)
	defer stacktest.Stack(t).Clock.Advance(-time.Hour)
	stacktest.Do(t, http.MethodPost, "/_dev/scheduler/run", nil)
	time.Sleep(time.Second)
	if _, after := getStatus(t, a.ID, "svc-a"); after.Deliveries["email"].Status != "dropped" {
		t.Errorf("after the due time: %+v", after.Deliveries)
	}
	if n := len(stacktest.EmailsTo(t, user+"@example.com")); n != 0 {
		t.Errorf("%d emails sent for a cancelled notification", n)
	}
	// It is retracted from the user's inbox and badge.
	token := "Authorization: Bearer " + stacktest.Stack(t).Token(user, time.Minute)
	if inbox := stacktest.Do(t, http.MethodGet, "/v1/users/"+user+"/inbox", nil, token); inbox.StatusCode != http.StatusOK || strings.Contains(string(inbox.Body), a.ID) {
		t.Errorf("inbox after cancel = %d %s", inbox.StatusCode, inbox.Body)
	}
	if badge := stacktest.Do(t, http.MethodGet, "/v1/users/"+user+"/inbox/unread-count", nil, token); !strings.Contains(string(badge.Body), `"count":0`) {
		t.Errorf("badge after cancel = %s", badge.Body)
	}
	// Cancelling again is the same answer.
	again := stacktest.Do(t, http.MethodDelete, "/v1/notifications/"+a.ID, nil, caller("svc-a"))
	if again.StatusCode != http.StatusOK || !strings.Contains(string(again.Body), `"status":"cancelled"`) {
		t.Fatalf("second DELETE = %d %s", again.StatusCode, again.Body)
	}
}

// TestBadInputStoresNothing: refused requests cost no DynamoDB request at all.
func TestBadInputStoresNothing(t *testing.T) {
	user := stacktest.UniqueID("bad")
	st := stacktest.Stack(t)
	st.Calls.Reset()
	bad := []struct {
		body, header string
		status       int
		code         string
	}{
		{`{"type":`, "", 400, "invalid_json"},
		{otp(user, "1") + " ", "Idempotency-Key: " + strings.Repeat("k", 256), 400, "invalid_idempotency_key"},
		{strings.Replace(otp(user, "1"), `"type"`, `"kind"`, 1), "", 400, "unknown_field"},
		{strings.Replace(otp(user, "1"), "otp.code", "nope.nope", 1), "", 422, "unknown_type"},
		{strings.Replace(otp(user, "1"), `"code":"1"`, `"code":"1","name":"x"`, 1), "", 422, "undeclared_variable"},
		{strings.Replace(otp(user, "1"), `}}`, `},"sendAt":"2001-01-01T00:00:00Z"}`, 1), "", 400, "send_at_out_of_range"},
		{strings.Replace(otp(user, "1"), `"recipient":{`, `"recipient":{"phone":"12345",`, 1), "", 400, "invalid_phone"},
	}
	for _, b := range bad {
		headers := []string{caller("svc-a")}
		if b.header != "" {
			headers = append(headers, b.header)
		}
		mustProblem(t, stacktest.Do(t, http.MethodPost, "/v1/notifications", b.body, headers...), b.status, b.code)
	}
	if calls := st.Calls.FunctionSnapshot("ApiFunction"); len(calls) != 0 {
		t.Fatalf("bad requests made AWS requests: %v", calls)
	}
	if n := inboxCount(t, user); n != 0 {
		t.Fatalf("%d notifications stored", n)
	}
}
