package api

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/storetest"
)

func newTopicsAPI(t *testing.T) (*testAPI, *storetest.MemTopics) {
	t.Helper()
	ta := newTestAPI(t)
	mem := storetest.NewMemTopics(func() time.Time { return testNow })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ta.h = New(Deps{Log: log, Notifications: ta.notifications, Topics: NewTopics(TopicsDeps{Topics: mem, Log: log})})
	return ta, mem
}

func problemCode(t *testing.T, body string) string {
	t.Helper()
	var p struct{ Code string }
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatalf("not a problem: %s", body)
	}
	return p.Code
}

// TestTopicSubscriptions: subscribing twice stores once; the subscribers
// page across the shards with a cursor; a mute by the user's own route is
// seen by the service's; a mute without a subscription is 404.
func TestTopicSubscriptions(t *testing.T) {
	ta, mem := newTopicsAPI(t)
	var ids []string
	for i := range 250 {
		ids = append(ids, "u"+strings.Repeat("x", i%3)+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	body, _ := json.Marshal(map[string]any{"userIds": ids})
	topic := map[string]string{"topic": "thread:42"}
	for want, added := range []int{250, 0} {
		resp := ta.do(t, apiCall{route: "PUT /v1/topics/{topic}/subscribers", params: topic, body: string(body), caller: "svc"})
		v := decodeBody[subscribedView](t, resp.Body)
		if resp.StatusCode != http.StatusOK || v.Subscribed != 250 || v.Added != added {
			t.Fatalf("subscribe #%d: %d %s", want, resp.StatusCode, resp.Body)
		}
	}
	if got := len(mem.Subscribers("thread:42")); got != 250 {
		t.Fatalf("%d stored, want 250", got)
	}
	seen := map[string]bool{}
	for cursor, pages := "", 0; ; pages++ {
		call := apiCall{route: "GET /v1/topics/{topic}/subscribers", params: topic, caller: "svc"}
		q := map[string]string{"limit": "40"}
		if cursor != "" {
			q["cursor"] = cursor
		}
		call.query = q
		resp := ta.do(t, call)
		page := decodeBody[subscribersPage](t, resp.Body)
		if resp.StatusCode != http.StatusOK || len(page.Subscribers) > 40 || pages > 20 {
			t.Fatalf("page %d: %d %s", pages, resp.StatusCode, resp.Body)
		}
		for _, s := range page.Subscribers {
			if seen[s.UserID] {
				t.Fatalf("%s listed twice", s.UserID)
			}
			seen[s.UserID] = true
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if len(seen) != 250 {
		t.Fatalf("listed %d subscribers, want 250", len(seen))
	}

	resp := ta.do(t, apiCall{route: "PUT /v1/me/topics/{topic}", params: topic, body: `{"muted":true}`, jwtSub: ids[0]})
	if v := decodeBody[userTopicView](t, resp.Body); resp.StatusCode != http.StatusOK || !v.Muted || v.Topic != "thread:42" {
		t.Fatalf("mute: %d %s", resp.StatusCode, resp.Body)
	}
	resp = ta.do(t, apiCall{route: "GET /v1/users/{userId}/topics", params: map[string]string{"userId": ids[0]}, caller: "svc"})
	if v := decodeBody[userTopicsPage](t, resp.Body); len(v.Topics) != 1 || !v.Topics[0].Muted {
		t.Fatalf("user topics: %s", resp.Body)
	}
	resp = ta.do(t, apiCall{route: "PUT /v1/me/topics/{topic}", params: map[string]string{"topic": "thread:43"}, body: `{"muted":true}`, jwtSub: ids[0]})
	if resp.StatusCode != http.StatusNotFound || problemCode(t, resp.Body) != "not_subscribed" {
		t.Fatalf("mute without subscription: %d %s", resp.StatusCode, resp.Body)
	}
	// The service routes refuse a user token; the user's own a service.
	if resp := ta.do(t, apiCall{route: "GET /v1/users/{userId}/topics", params: map[string]string{"userId": ids[0]}, jwtSub: ids[0]}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("service route with a user token: %d", resp.StatusCode)
	}
	if resp := ta.do(t, apiCall{route: "GET /v1/me/topics", caller: "svc"}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("me route as a service: %d", resp.StatusCode)
	}
	resp = ta.do(t, apiCall{route: "DELETE /v1/topics/{topic}/subscribers/{userId}", params: map[string]string{"topic": "thread:42", "userId": ids[0]}, caller: "svc"})
	if resp.StatusCode != http.StatusNoContent || len(mem.Subscribers("thread:42")) != 249 {
		t.Fatalf("unsubscribe: %d %s", resp.StatusCode, resp.Body)
	}
	for _, bad := range []string{"thread#42", "a\u202eb", strings.Repeat("t", 129)} {
		resp := ta.do(t, apiCall{route: "PUT /v1/topics/{topic}/subscribers", params: map[string]string{"topic": bad}, body: `{"userIds":["u1"]}`, caller: "svc"})
		if resp.StatusCode != http.StatusBadRequest || problemCode(t, resp.Body) != "invalid_topic" {
			t.Errorf("topic %q: %d %s", bad, resp.StatusCode, resp.Body)
		}
	}
}

// TestTopicSendRefusals: what a topic send refuses before it stores anything.
func TestTopicSendRefusals(t *testing.T) {
	ta, _ := newTopicsAPI(t)
	const content = `"type":"reservation.approved","data":{"reservationUrl":"https://example.com/r/1"}`
	many, _ := json.Marshal(make([]string, 101))
	cases := []struct {
		name, route, body, code string
	}{
		{"bad topic", "POST /v1/notifications", `{` + content + `,"recipient":{"topic":"a b"}}`, "invalid_topic"},
		{"topic and user", "POST /v1/notifications", `{` + content + `,"recipient":{"topic":"t1","userId":"u1"}}`, "invalid_recipient"},
		{"resourceId", "POST /v1/notifications", `{` + content + `,"recipient":{"topic":"t1"},"resourceId":"r1"}`, "not_for_topic"},
		{"exclude too large", "POST /v1/notifications", `{` + content + `,"recipient":{"topic":"t1"},"exclude":` + string(many) + `}`, "exclude_too_large"},
		{"high priority", "POST /v1/notifications", `{` + content + `,"recipient":{"topic":"t1"},"priority":"high"}`, "topic_priority_high"},
		{"exclude without topic", "POST /v1/notifications", `{` + content + `,"recipient":{"userId":"u1"},"exclude":["u2"]}`, "topic_not_here"},
		{"topic in a batch", "POST /v1/notifications/batch", `{"notifications":[{` + content + `,"recipient":{"topic":"t1"},"idempotencyKey":"k1"}]}`, "topic_not_here"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := ta.do(t, apiCall{route: tc.route, body: tc.body, caller: "svc"})
			if !strings.Contains(resp.Body, `"`+tc.code+`"`) || resp.StatusCode < 400 && resp.StatusCode != http.StatusMultiStatus {
				t.Errorf("%d %s, want %s", resp.StatusCode, resp.Body, tc.code)
			}
		})
	}
}
