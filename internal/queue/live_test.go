package queue_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/heraldhq/herald/internal/live"
	"github.com/heraldhq/herald/internal/queue"
)

// sendFake records SendMessageBatch calls.
type sendFake struct {
	queue.API
	mu    sync.Mutex
	calls []*sqs.SendMessageBatchInput
}

func (f *sendFake) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, in)
	return &sqs.SendMessageBatchOutput{}, nil
}

// A broadcast is one message per shard, ten a call, as {"broadcast":…};
// its delay is rounded up to SQS's whole seconds, at most 15 minutes.
func TestLiveQueueBroadcast(t *testing.T) {
	f := &sendFake{}
	q := queue.NewLiveQueue(f, "url")
	bs := make([]live.Broadcast, live.OnlineShards)
	for i := range bs {
		bs[i] = live.Broadcast{ID: "a1", Shard: i}
	}
	if err := q.Broadcast(context.Background(), bs, 0); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range f.calls {
		for _, e := range c.Entries {
			var b live.Batch
			if err := json.Unmarshal([]byte(aws.ToString(e.MessageBody)), &b); err != nil || b.Broadcast == nil || len(b.Events) != 0 || e.DelaySeconds != 0 {
				t.Fatalf("entry %s: %+v, %v", aws.ToString(e.MessageBody), b, err)
			}
			n++
		}
	}
	if n != live.OnlineShards || len(f.calls) != 2 {
		t.Errorf("%d messages in %d calls, want %d in 2", n, len(f.calls), live.OnlineShards)
	}
	for delay, want := range map[time.Duration]int32{3200 * time.Millisecond: 4, 2 * time.Second: 2, time.Hour: 900} {
		f.calls = nil
		if err := q.Broadcast(context.Background(), []live.Broadcast{{ID: "a1", Shard: 1, After: "u"}}, delay); err != nil {
			t.Fatal(err)
		}
		if got := f.calls[0].Entries[0].DelaySeconds; got != want {
			t.Errorf("delay %s: DelaySeconds %d, want %d", delay, got, want)
		}
	}
}

// A Close is one message {"close":…} delayed by whole seconds (a
// connection evicted inside its $connect, closed once established).
func TestLiveQueueCloseLater(t *testing.T) {
	f := &sendFake{}
	q := queue.NewLiveQueue(f, "url")
	until := time.Date(2026, 12, 4, 12, 0, 30, 0, time.UTC)
	if err := q.CloseLater(context.Background(), live.Close{ConnectionID: "c1", Until: until, Attempt: 2}, 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 1 || len(f.calls[0].Entries) != 1 {
		t.Fatalf("calls %+v, want one message", f.calls)
	}
	e := f.calls[0].Entries[0]
	var b live.Batch
	if err := json.Unmarshal([]byte(aws.ToString(e.MessageBody)), &b); err != nil || b.Close == nil || len(b.Events) != 0 || b.Broadcast != nil {
		t.Fatalf("body %s: %+v, %v", aws.ToString(e.MessageBody), b, err)
	}
	if *b.Close != (live.Close{ConnectionID: "c1", Until: until, Attempt: 2}) || e.DelaySeconds != 2 {
		t.Errorf("close %+v after %d s, want c1 until %s, attempt 2, after 2 s", *b.Close, e.DelaySeconds, until)
	}
}
