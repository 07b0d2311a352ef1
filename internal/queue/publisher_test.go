package queue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/queue"
)

// TestPublishRoutesToTheChannelPriorityQueue sends one message per channel ×
// priority and finds each, ids only, on its own queue.
func TestPublishRoutesToTheChannelPriorityQueue(t *testing.T) {
	e, urls := workQueues(t)
	client := e.SQS()
	var items []domain.WorkItem
	for _, c := range domain.Channels {
		for _, p := range domain.Priorities {
			items = append(items, domain.WorkItem{Priority: p, Message: domain.WorkMessage{NotificationID: "n-" + string(c) + "-" + string(p), Channel: c, UserID: "u1"}})
		}
	}
	// One without the user id, as the worker still accepts.
	items = append(items, domain.WorkItem{Priority: domain.PriorityLow, Message: domain.WorkMessage{NotificationID: "n-no-user", Channel: domain.ChannelSMS}})
	for i, err := range queue.NewPublisher(client, urls).Publish(context.Background(), items) {
		if err != nil {
			t.Errorf("message %d: %v", i, err)
		}
	}
	for _, c := range domain.Channels {
		for _, p := range domain.Priorities {
			want := []string{fmt.Sprintf(`{"notificationId":"n-%s-%s","channel":"%s","userId":"u1"}`, c, p, c)}
			if c == domain.ChannelSMS && p == domain.PriorityLow {
				want = append(want, `{"notificationId":"n-no-user","channel":"sms"}`)
			}
			msgs := drain(t, client, urls[domain.QueueName(c, p)], len(want))
			var bodies []string
			for _, m := range msgs {
				bodies = append(bodies, aws.ToString(m.Body))
				if len(m.MessageAttributes) != 0 {
					t.Errorf("%s-%s: message attributes %v, want none", c, p, m.MessageAttributes)
				}
				var wm domain.WorkMessage
				if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &wm); err != nil || wm.Channel != c {
					t.Errorf("%s-%s: body %s decodes to %+v, %v", c, p, aws.ToString(m.Body), wm, err)
				}
			}
			slices.Sort(bodies)
			slices.Sort(want)
			if fmt.Sprint(bodies) != fmt.Sprint(want) {
				t.Errorf("%s-%s received %v, want %v", c, p, bodies, want)
			}
		}
	}
}

// TestPublishSplitsBatchesOfTen sends 23 messages to one queue and 3 to
// another: SQS takes at most ten entries per call.
func TestPublishSplitsBatchesOfTen(t *testing.T) {
	e, urls := workQueues(t)
	client := e.SQS()
	counting := &countingSQS{API: client}
	var items []domain.WorkItem
	for i := range 23 {
		items = append(items, domain.WorkItem{Priority: domain.PriorityNormal, Message: domain.WorkMessage{NotificationID: fmt.Sprint("e", i), Channel: domain.ChannelEmail}})
	}
	for i := range 3 {
		items = append(items, domain.WorkItem{Priority: domain.PriorityHigh, Message: domain.WorkMessage{NotificationID: fmt.Sprint("p", i), Channel: domain.ChannelPush}})
	}
	for i, err := range queue.NewPublisher(counting, urls).Publish(context.Background(), items) {
		if err != nil {
			t.Errorf("message %d: %v", i, err)
		}
	}
	slices.Sort(counting.batches)
	if got := fmt.Sprint(counting.batches); got != "[3 3 10 10]" {
		t.Errorf("batches of %s entries, want [3 3 10 10]", got)
	}
	if got := drain(t, client, urls["email-normal"], 23); len(got) != 23 {
		t.Errorf("email-normal received %d, want 23", len(got))
	}
	if got := drain(t, client, urls["push-high"], 3); len(got) != 3 {
		t.Errorf("push-high received %d, want 3", len(got))
	}
}

// TestPublishReportsAnUnknownQueuePerMessage: a message with no queue fails
// alone; the rest go out.
func TestPublishReportsAnUnknownQueuePerMessage(t *testing.T) {
	e, urls := workQueues(t)
	client := e.SQS()
	items := []domain.WorkItem{
		{Priority: domain.PriorityHigh, Message: domain.WorkMessage{NotificationID: "ok", Channel: domain.ChannelSMS}},
		{Priority: "urgent", Message: domain.WorkMessage{NotificationID: "bad", Channel: domain.ChannelSMS}},
	}
	errs := queue.NewPublisher(client, urls).Publish(context.Background(), items)
	if errs[0] != nil || errs[1] == nil {
		t.Errorf("errors %v, want only the second", errs)
	}
	drain(t, client, urls["sms-high"], 1)
}
