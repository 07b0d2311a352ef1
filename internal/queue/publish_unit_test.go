package queue_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/queue"
)

// batchFake answers SendMessageBatch: fail decides each entry's fate per
// attempt of that notification ("" sent, "sender" or "server" failed), and
// callErr fails whole calls to a queue.
type batchFake struct {
	fail    func(id string, attempt int) string
	callErr map[string]error

	mu       sync.Mutex
	attempts map[string]int
	batches  map[string][]int // entries per call, by queue URL
	bodies   map[string]string
	maxBytes int // the largest call's bodies in all
}

func (f *batchFake) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	url := aws.ToString(in.QueueUrl)
	f.batches[url] = append(f.batches[url], len(in.Entries))
	if len(in.Entries) > 10 {
		return nil, fmt.Errorf("fake: %d entries", len(in.Entries))
	}
	if err := f.callErr[url]; err != nil {
		return nil, err
	}
	out := &sqs.SendMessageBatchOutput{}
	size := 0
	for _, e := range in.Entries {
		size += len(aws.ToString(e.MessageBody))
	}
	f.maxBytes = max(f.maxBytes, size)
	seen := map[string]bool{}
	for _, e := range in.Entries {
		if seen[aws.ToString(e.Id)] {
			return nil, fmt.Errorf("fake: duplicate entry id %s", aws.ToString(e.Id))
		}
		seen[aws.ToString(e.Id)] = true
		body := aws.ToString(e.MessageBody)
		id := strings.Split(strings.TrimPrefix(body, `{"notificationId":"`), `"`)[0]
		f.attempts[id]++
		switch fate := f.fail(id, f.attempts[id]); fate {
		case "":
			f.bodies[id] = body
			out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id, MessageId: aws.String("m-" + id)})
		default:
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String(fate + "Error"),
				Message: aws.String("injected"), SenderFault: fate == "sender"})
		}
	}
	return out, nil
}

func TestPublishPartialFailures(t *testing.T) {
	urls := queue.URLs{}
	for _, c := range domain.Channels {
		for _, p := range domain.Priorities {
			urls[domain.QueueName(c, p)] = "q/" + domain.QueueName(c, p)
		}
	}
	// n0…n{count-1} to email-high, then m0…m2 to sms-low.
	items := func(count int) []domain.WorkItem {
		var out []domain.WorkItem
		for i := range count {
			out = append(out, domain.WorkItem{Priority: domain.PriorityHigh, Message: domain.WorkMessage{NotificationID: fmt.Sprint("n", i), Channel: domain.ChannelEmail, UserID: "u"}})
		}
		for i := range 3 {
			out = append(out, domain.WorkItem{Priority: domain.PriorityLow, Message: domain.WorkMessage{NotificationID: fmt.Sprint("m", i), Channel: domain.ChannelSMS}})
		}
		return out
	}
	tests := []struct {
		name     string
		count    int
		fail     func(id string, attempt int) string
		callErr  map[string]error
		failed   []string // notification ids whose error slot is set
		attempts map[string]int
		batches  string // entries per call to email-high
	}{
		{name: "all sent", count: 12, fail: func(string, int) string { return "" }, batches: "[2 10]"},
		{name: "a sender fault fails alone, unretried", count: 12,
			fail:   func(id string, _ int) string { return map[string]string{"n3": "sender"}[id] },
			failed: []string{"n3"}, attempts: map[string]int{"n3": 1}, batches: "[2 10]"},
		{name: "a server fault is retried with only the failed entries", count: 5,
			fail: func(id string, attempt int) string {
				if (id == "n1" || id == "n4") && attempt == 1 {
					return "server"
				}
				return ""
			},
			attempts: map[string]int{"n1": 2, "n4": 2, "n0": 1}, batches: "[2 5]"},
		{name: "a server fault gives up after three attempts", count: 2,
			fail: func(id string, _ int) string {
				if id == "n0" {
					return "server"
				}
				return ""
			},
			failed: []string{"n0"}, attempts: map[string]int{"n0": 3, "n1": 1}, batches: "[1 1 2]"},
		{name: "a failed call fails its own messages only", count: 4,
			fail: func(string, int) string { return "" }, callErr: map[string]error{"q/sms-low": errors.New("throttled")},
			failed: []string{"m0", "m1", "m2"}, batches: "[4]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &batchFake{fail: tt.fail, callErr: tt.callErr, attempts: map[string]int{}, batches: map[string][]int{}, bodies: map[string]string{}}
			msgs := items(tt.count)
			errs := queue.NewPublisher(f, urls).Publish(context.Background(), msgs)
			if len(errs) != len(msgs) {
				t.Fatalf("%d error slots for %d messages", len(errs), len(msgs))
			}
			var failed []string
			for i, err := range errs {
				id := msgs[i].Message.NotificationID
				if err != nil {
					failed = append(failed, id)
					continue
				}
				if _, sent := f.bodies[id]; !sent {
					t.Errorf("%s reported sent but never accepted", id)
				}
			}
			slices.Sort(failed)
			if fmt.Sprint(failed) != fmt.Sprint(tt.failed) {
				t.Errorf("failed %v, want %v", failed, tt.failed)
			}
			for id, n := range tt.attempts {
				if f.attempts[id] != n {
					t.Errorf("%s sent %d times, want %d", id, f.attempts[id], n)
				}
			}
			batches := slices.Clone(f.batches["q/email-high"])
			slices.Sort(batches)
			if got := fmt.Sprint(batches); got != tt.batches {
				t.Errorf("email-high calls with %s entries, want %s", got, tt.batches)
			}
			if body, ok := f.bodies["n0"]; ok && body != `{"notificationId":"n0","channel":"email","userId":"u"}` {
				t.Errorf("body %s", body)
			}
		})
	}
}

func TestParseARN(t *testing.T) {
	tests := []struct {
		arn, account, name string
		ok                 bool
	}{
		{"arn:aws:sqs:eu-west-1:123456789012:herald-EmailHighQueue", "123456789012", "herald-EmailHighQueue", true},
		{"arn:aws-cn:sqs:cn-north-1:1:q.fifo", "1", "q.fifo", true},
		{"arn:aws:sns:us-east-1:1:topic", "", "", false},
		{"arn:aws:sqs:us-east-1:1", "", "", false},
		{"https://sqs.us-east-1.amazonaws.com/1/q", "", "", false},
		{"", "", "", false},
	}
	for _, tt := range tests {
		account, name, err := queue.ParseARN(tt.arn)
		if (err == nil) != tt.ok || account != tt.account || name != tt.name {
			t.Errorf("ParseARN(%q) = %q, %q, %v", tt.arn, account, name, err)
		}
	}
}

// TestPublishBatchesStayFarBelowTheSizeLimit: SendMessageBatch takes at most
// 256 KiB per call. Work messages carry ids only (the API caps ids at 128
// characters), so ten of them never approach it and the publisher splits by
// count alone; this fails if the message grows a payload.
func TestPublishBatchesStayFarBelowTheSizeLimit(t *testing.T) {
	long := strings.Repeat("x", 128)
	var items []domain.WorkItem
	for i := range 10 {
		items = append(items, domain.WorkItem{Priority: domain.PriorityHigh,
			Message: domain.WorkMessage{NotificationID: fmt.Sprintf("%03d%s", i, long[3:]), Channel: domain.ChannelEmail, UserID: long}})
	}
	f := &batchFake{fail: func(string, int) string { return "" }, attempts: map[string]int{}, batches: map[string][]int{}, bodies: map[string]string{}}
	for _, err := range queue.NewPublisher(f, queue.URLs{"email-high": "q"}).Publish(context.Background(), items) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if f.maxBytes == 0 || f.maxBytes > 16<<10 {
		t.Errorf("a batch of ten maximal work messages is %d bytes, want well under 256 KiB", f.maxBytes)
	}
}

func TestURLsFromEnv(t *testing.T) {
	env := map[string]string{}
	for _, c := range domain.Channels {
		for _, p := range domain.Priorities {
			env[queue.EnvName(c, p)] = "url-" + domain.QueueName(c, p)
		}
	}
	urls, err := queue.URLsFromEnv(func(k string) string { return env[k] })
	if err != nil || len(urls) != 9 || urls["sms-normal"] != "url-sms-normal" {
		t.Errorf("%v, %v", urls, err)
	}
	if queue.EnvName(domain.ChannelPush, domain.PriorityLow) != "PUSH_LOW_QUEUE_URL" {
		t.Errorf("env name %s", queue.EnvName(domain.ChannelPush, domain.PriorityLow))
	}
	delete(env, "SMS_HIGH_QUEUE_URL")
	delete(env, "PUSH_LOW_QUEUE_URL")
	if _, err := queue.URLsFromEnv(func(k string) string { return env[k] }); err == nil ||
		!strings.Contains(err.Error(), "SMS_HIGH_QUEUE_URL") || !strings.Contains(err.Error(), "PUSH_LOW_QUEUE_URL") {
		t.Errorf("missing URLs: %v", err)
	}
}
