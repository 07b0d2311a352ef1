package queue_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/heraldhq/herald/internal/queue"
)

// visibilityFake resolves queue URLs and records visibility changes.
type visibilityFake struct {
	mu       sync.Mutex
	lookups  []string
	changes  []string
	urlErr   error
	sleepFor time.Duration
}

func (f *visibilityFake) GetQueueUrl(_ context.Context, in *sqs.GetQueueUrlInput, _ ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	time.Sleep(f.sleepFor) // widen the window for concurrent first lookups
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lookups = append(f.lookups, aws.ToString(in.QueueOwnerAWSAccountId)+"/"+aws.ToString(in.QueueName))
	if f.urlErr != nil {
		return nil, f.urlErr
	}
	return &sqs.GetQueueUrlOutput{QueueUrl: aws.String("https://sqs/" + aws.ToString(in.QueueName))}, nil
}

func (f *visibilityFake) ChangeMessageVisibility(_ context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.changes = append(f.changes, fmt.Sprintf("%s %s %d", aws.ToString(in.QueueUrl), aws.ToString(in.ReceiptHandle), in.VisibilityTimeout))
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

func TestSetVisibility(t *testing.T) {
	const arn = "arn:aws:sqs:us-east-1:123456789012:herald-email-high"
	tests := []struct {
		name    string
		timeout time.Duration
		want    string
	}{
		{"whole seconds", 90 * time.Second, "https://sqs/herald-email-high h 90"},
		{"fractions round down", 1500 * time.Millisecond, "https://sqs/herald-email-high h 1"},
		{"zero makes it visible now", 0, "https://sqs/herald-email-high h 0"},
		{"capped at SQS's 12 hours", 13 * time.Hour, "https://sqs/herald-email-high h 43200"},
	}
	f := &visibilityFake{}
	v := queue.NewVisibility(f)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.changes = nil
			if err := v.SetVisibility(context.Background(), arn, "h", tt.timeout); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(f.changes) != "["+tt.want+"]" {
				t.Errorf("changes %v, want %s", f.changes, tt.want)
			}
		})
	}
	// The URL is resolved once, with the ARN's account, for every call.
	if fmt.Sprint(f.lookups) != "[123456789012/herald-email-high]" {
		t.Errorf("lookups %v, want one", f.lookups)
	}
}

func TestSetVisibilityErrors(t *testing.T) {
	f := &visibilityFake{urlErr: errors.New("no such queue")}
	v := queue.NewVisibility(f)
	if err := v.SetVisibility(context.Background(), "arn:aws:sqs:us-east-1:1:gone", "h", time.Second); err == nil || !strings.Contains(err.Error(), "no such queue") {
		t.Errorf("unresolvable queue: %v", err)
	}
	if err := v.SetVisibility(context.Background(), "not-an-arn", "h", time.Second); err == nil {
		t.Error("malformed ARN: want an error")
	}
	if len(f.changes) != 0 {
		t.Errorf("changed visibility without a URL: %v", f.changes)
	}
	// A failed lookup is not cached: the next call tries again.
	f.urlErr = nil
	if err := v.SetVisibility(context.Background(), "arn:aws:sqs:us-east-1:1:gone", "h", time.Second); err != nil {
		t.Errorf("after the queue resolves: %v", err)
	}
}

func TestSetVisibilityConcurrently(t *testing.T) {
	f := &visibilityFake{sleepFor: time.Millisecond}
	v := queue.NewVisibility(f)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			arn := fmt.Sprintf("arn:aws:sqs:us-east-1:1:q%d", i%2)
			if err := v.SetVisibility(context.Background(), arn, fmt.Sprint(i), time.Second); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if len(f.changes) != 16 {
		t.Errorf("%d changes, want 16", len(f.changes))
	}
	// Concurrent first lookups may each resolve; afterwards the cache answers.
	before := len(f.lookups)
	_ = v.SetVisibility(context.Background(), "arn:aws:sqs:us-east-1:1:q0", "x", time.Second)
	if len(f.lookups) != before {
		t.Errorf("a cached queue was looked up again")
	}
}

// TestSetVisibilityOnTheEmulator returns a received message to the queue at
// once (visibility 0) and then hides it for longer than SQS allows, capped.
func TestSetVisibilityOnTheEmulator(t *testing.T) {
	e, urls := workQueues(t)
	client := e.SQS()
	ctx := context.Background()
	info := e.Resources.Queues["PushLowQueue"]
	if info.URL != urls["push-low"] {
		t.Fatalf("PushLowQueue is %s, the relay's push-low queue %s", info.URL, urls["push-low"])
	}
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(info.URL), MessageBody: aws.String(`{"notificationId":"v"}`)}); err != nil {
		t.Fatal(err)
	}
	receive := func() []string {
		t.Helper()
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(info.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		var handles []string
		for _, m := range out.Messages {
			handles = append(handles, aws.ToString(m.ReceiptHandle))
		}
		return handles
	}
	first := receive()
	if len(first) != 1 {
		t.Fatalf("received %d messages, want 1", len(first))
	}
	v := queue.NewVisibility(client)
	if err := v.SetVisibility(ctx, info.ARN, first[0], 0); err != nil {
		t.Fatal(err)
	}
	again := receive()
	if len(again) != 1 {
		t.Fatalf("after visibility 0: %d messages, want the same one back", len(again))
	}
	if err := v.SetVisibility(ctx, info.ARN, again[0], 24*time.Hour); err != nil {
		t.Fatalf("a day, capped to 12 hours: %v", err)
	}
	if hidden := receive(); len(hidden) != 0 {
		t.Errorf("received %d hidden messages", len(hidden))
	}
}
