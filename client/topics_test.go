package client

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
)

// TestNotifyTopicSendsTheTopicAsTheRecipient: a topic send is POST
// /v1/notifications with recipient {"topic"}, the exclusions and the type's
// fields, under one Idempotency-Key kept across retries; a replay answers
// Replayed.
func TestNotifyTopicSendsTheTopicAsTheRecipient(t *testing.T) {
	f := &fakeHerald{answers: []func(w http.ResponseWriter, r *http.Request){
		dropConnection,
		status(202, "application/json", `{"id":"c1","topic":"thread:42","recipients":"pending"}`, "Idempotent-Replayed", "true"),
	}}
	c := newTestClient(t, f)
	a, err := c.NotifyTopic(context.Background(), TopicNotification{Type: "comment.created", Topic: "thread:42", Exclude: []string{"u1"},
		Data: map[string]string{"thread": "42"}})
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != "c1" || a.Topic != "thread:42" || a.Recipients != "pending" || !a.Replayed || a.IdempotencyKey == "" {
		t.Errorf("accepted = %+v", a)
	}
	reqs := f.received()
	if len(reqs) != 2 || reqs[0].header.Get("Idempotency-Key") != reqs[1].header.Get("Idempotency-Key") || reqs[1].header.Get("Idempotency-Key") != a.IdempotencyKey {
		t.Fatalf("requests %+v: want one key on both attempts", reqs)
	}
	var body map[string]any
	if err := json.Unmarshal(reqs[1].body, &body); err != nil {
		t.Fatal(err)
	}
	rec, _ := body["recipient"].(map[string]any)
	if reqs[1].method != "POST" || reqs[1].path != "/v1/notifications" || rec["topic"] != "thread:42" || len(rec) != 1 ||
		body["type"] != "comment.created" || body["exclude"].([]any)[0] != "u1" || body["topic"] != nil {
		t.Errorf("request %s %s %s", reqs[1].method, reqs[1].path, reqs[1].body)
	}
}
