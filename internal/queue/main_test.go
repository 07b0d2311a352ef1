package queue_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/queue"
)

// The integration tests run against fauxqs with the queues template.yaml
// declares; -short skips them.
func TestMain(m *testing.M) { stacktest.MainEmulators(m, "sqs") }

// workQueues are the work queues as the relay function finds them: its
// environment in template.yaml, resolved to the emulator's queues.
func workQueues(t *testing.T) (*stacktest.Emulated, queue.URLs) {
	t.Helper()
	e := stacktest.Emulators(t)
	urls, err := queue.URLsFromEnv(e.FunctionEnv(t, "RelayFunction"))
	if err != nil {
		t.Fatal(err)
	}
	return e, urls
}

// countingSQS records the batches a publisher sends through a real client.
type countingSQS struct {
	queue.API
	mu      sync.Mutex
	batches []int
}

func (c *countingSQS) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	c.mu.Lock()
	c.batches = append(c.batches, len(in.Entries))
	c.mu.Unlock()
	return c.API.SendMessageBatch(ctx, in, opts...)
}

// drain receives and deletes every message of url until want have arrived
// and the queue then answers empty, failing after a few seconds.
func drain(t *testing.T, client *sqs.Client, url string, want int) []types.Message {
	t.Helper()
	ctx := context.Background()
	var got []types.Message
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 0,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil {
			t.Fatalf("receive from %s: %v", url, err)
		}
		for _, m := range out.Messages {
			if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatalf("delete: %v", err)
			}
		}
		got = append(got, out.Messages...)
		if len(out.Messages) == 0 && len(got) >= want {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d messages, want %d", url, len(got), want)
		}
		if len(out.Messages) == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
}
