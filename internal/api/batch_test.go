package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestBatchPartialFailure(t *testing.T) {
	ta := newTestAPI(t)
	items := []string{
		`{"idempotencyKey":"a","type":"otp.code","recipient":{"userId":"u1"},"data":{"code":"123456"}}`,
		`{"idempotencyKey":"b","type":"nope.nope","recipient":{"userId":"u1"}}`,
		`{"idempotencyKey":"c","type":"otp.code","recipient":{"userId":"u1"},"data":{"code":"123456"},"color":"red"}`,
		`{"type":"otp.code","recipient":{"userId":"u1"},"data":{"code":"1"}}`,
		`{"idempotencyKey":"a","type":"otp.code","recipient":{"userId":"u2"},"data":{"code":"1"}}`,
		`"not an object"`,
		`{"idempotencyKey":"e\u0001","type":"otp.code","recipient":{"userId":"u1"},"data":{"code":"1"}}`,
		`{"idempotencyKey":"f","type":"otp.code","recipient":{"userId":"u1"},"data":{"code":"123456"},"channels":["push"]}`,
		`{"idempotencyKey":"g","type":"comment.created","recipient":{"userId":"u1"},"data":{"actorLabel":"A","url":"https://example.com/c"}}`,
	}
	resp := ta.do(t, apiCall{route: "POST /v1/notifications/batch", caller: "svc", body: `{"notifications":[` + strings.Join(items, ",") + `]}`})
	if resp.StatusCode != http.StatusMultiStatus || resp.Headers["Content-Type"] != "application/json" {
		t.Fatalf("status = %d %s", resp.StatusCode, resp.Body)
	}
	got := decodeBody[batchResponse](t, resp.Body).Results
	want := []struct {
		status        int
		code, pointer string
	}{
		{202, "", ""},
		{422, "unknown_type", "/notifications/1/type"},
		{400, "unknown_field", "/notifications/2/color"},
		{400, "missing_field", "/notifications/3/idempotencyKey"},
		{422, "duplicate_idempotency_key", "/notifications/4/idempotencyKey"},
		{400, "invalid_type", "/notifications/5"},
		{400, "invalid_idempotency_key", "/notifications/6/idempotencyKey"},
		{422, "unsupported_channel", "/notifications/7/channels/0"},
		{202, "", ""},
	}
	if len(got) != len(want) {
		t.Fatalf("%d results, want %d: %s", len(got), len(want), resp.Body)
	}
	for i, w := range want {
		r := got[i]
		if r.Index != i || r.Status != w.status {
			t.Errorf("item %d = %+v, want status %d", i, r, w.status)
			continue
		}
		if w.status == 202 {
			if r.ID == "" || r.Location != "/v1/notifications/"+r.ID || r.Problem != nil || r.Replayed {
				t.Errorf("item %d = %+v", i, r)
			}
			continue
		}
		if r.Problem == nil || r.Problem.Code != w.code || r.Problem.Pointer != w.pointer || r.Problem.Status != w.status || r.ID != "" {
			t.Errorf("item %d problem = %+v, want %s at %s", i, r.Problem, w.code, w.pointer)
		}
	}
	if len(ta.store.notifications) != 2 {
		t.Fatalf("stored %d, want 2", len(ta.store.notifications))
	}
}

func TestBatchSharesIdempotencyWithSingleRequests(t *testing.T) {
	ta := newTestAPI(t)
	single := ta.post(t, `{"type":"otp.code","recipient":{"userId":"u1"},"data":{"code":"123456"}}`, "Idempotency-Key: k1")
	body := `{"notifications":[
		{"idempotencyKey":"k1","type":"otp.code","recipient":{"userId":"u1"},"data":{"code":"123456"}},
		{"idempotencyKey":"k2","type":"otp.code","recipient":{"userId":"u1"},"data":{"code":"123456"}}]}`
	first := decodeBody[batchResponse](t, ta.do(t, apiCall{route: "POST /v1/notifications/batch", caller: "svc", body: body}).Body).Results
	if !first[0].Replayed || first[0].ID != decodeBody[acceptedBody](t, single.Body).ID || first[1].Replayed {
		t.Fatalf("first batch = %+v", first)
	}
	// Retrying the whole batch replays every item.
	again := decodeBody[batchResponse](t, ta.do(t, apiCall{route: "POST /v1/notifications/batch", caller: "svc", body: body}).Body).Results
	if !again[0].Replayed || !again[1].Replayed || again[1].ID != first[1].ID || again[1].CreatedAt != first[1].CreatedAt {
		t.Fatalf("retry = %+v", again)
	}
	// A changed payload under a used key is refused for that item only.
	changed := strings.Replace(body, `"code":"123456"}}]`, `"code":"654321"}}]`, 1)
	res := decodeBody[batchResponse](t, ta.do(t, apiCall{route: "POST /v1/notifications/batch", caller: "svc", body: changed}).Body).Results
	if res[0].Status != 202 || res[1].Status != 422 || res[1].Problem.Code != "idempotency_key_reused" || res[1].Problem.Pointer != "/notifications/1/idempotencyKey" {
		t.Fatalf("changed = %+v %+v", res[0], res[1].Problem)
	}
	if len(ta.store.notifications) != 2 {
		t.Fatalf("stored %d, want 2", len(ta.store.notifications))
	}
}

func TestBatchOfAHundred(t *testing.T) {
	ta := newTestAPI(t)
	items := make([]string, maxBatchItems)
	for i := range items {
		items[i] = fmt.Sprintf(`{"idempotencyKey":"k%d","type":"otp.code","recipient":{"userId":"u%d"},"data":{"code":"%06d"}}`, i, i, i)
	}
	resp := ta.do(t, apiCall{route: "POST /v1/notifications/batch", caller: "svc", body: `{"notifications":[` + strings.Join(items, ",") + `]}`})
	res := decodeBody[batchResponse](t, resp.Body).Results
	ids := map[string]bool{}
	for i, r := range res {
		if r.Index != i || r.Status != 202 || r.IdempotencyKey != fmt.Sprintf("k%d", i) {
			t.Fatalf("result %d = %+v", i, r)
		}
		ids[r.ID] = true
	}
	if len(ids) != maxBatchItems || len(ta.store.notifications) != maxBatchItems {
		t.Fatalf("%d ids, %d stored", len(ids), len(ta.store.notifications))
	}
}

// TestBatchNearTheDeadline: items the invocation has no time left for, and
// writes cut short by its deadline, answer a retryable 503 each, so the
// caller learns every item's outcome and retries only those.
func TestBatchNearTheDeadline(t *testing.T) {
	body := `{"notifications":[
		{"idempotencyKey":"k1","type":"otp.code","recipient":{"userId":"u1"},"data":{"code":"123456"}},
		{"idempotencyKey":"k2","type":"otp.code","recipient":{"userId":"u2"},"data":{"code":"123456"}},
		{"idempotencyKey":"k3","type":"nope.nope","recipient":{"userId":"u3"}}]}`
	tests := []struct {
		name      string
		remaining time.Duration
		storeErr  error
		want      []int
		stored    int
	}{
		{"time enough", time.Minute, nil, []int{202, 202, 422}, 2},
		{"no time left to start", deadlineReserve / 2, nil, []int{503, 503, 422}, 0},
		{"write cut short", time.Minute, fmt.Errorf("create notification: %w", context.DeadlineExceeded), []int{503, 503, 422}, 0},
		{"write failed", time.Minute, errors.New("boom"), []int{500, 500, 422}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ta := newTestAPI(t)
			ta.store.fail = tt.storeErr
			ctx, cancel := context.WithTimeout(context.Background(), tt.remaining)
			defer cancel()
			resp := ta.do(t, apiCall{route: "POST /v1/notifications/batch", caller: "svc", body: body, ctx: ctx})
			res := decodeBody[batchResponse](t, resp.Body).Results
			for i, w := range tt.want {
				if res[i].Status != w {
					t.Errorf("item %d = %d, want %d (%+v)", i, res[i].Status, w, res[i].Problem)
				}
				if w == 503 && (res[i].Problem == nil || res[i].Problem.Code != "timeout") {
					t.Errorf("item %d problem = %+v, want code timeout", i, res[i].Problem)
				}
			}
			if len(ta.store.notifications) != tt.stored {
				t.Errorf("stored %d, want %d", len(ta.store.notifications), tt.stored)
			}
		})
	}
}
