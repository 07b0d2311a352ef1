package devstack

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// TestStopAndTheLongPollsUnderWay, on fauxqs: a stop cancels an idle
// mapping's long poll when the queues end with the stack (no data
// directory), and with finishPolls waits for it and hands back, visible at
// once, a message the poll brings after the stop.
func TestStopAndTheLongPollsUnderWay(t *testing.T) {
	if testing.Short() || os.Getenv("HERALD_SKIP_INTEGRATION") != "" {
		t.Skip("integration test: starts fauxqs")
	}
	ctx := context.Background()
	emu, err := StartEmulators(ctx, EmulatorOptions{InfraDir: "../../infra/local", Services: []string{"sqs"}})
	if err != nil {
		t.Fatal(err)
	}
	defer emu.Stop()
	client := sqs.New(sqs.Options{Region: LocalRegion, BaseEndpoint: aws.String(emu.SQS),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})

	// poll starts one poller on a new queue and returns the queue's URL and
	// the stop: cancel the mapping, then wait for its pollers.
	poll := func(t *testing.T, queue string, finishPolls bool) (string, func()) {
		out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(queue)})
		if err != nil {
			t.Fatal(err)
		}
		m := &sqsMapping{name: "m", queueURL: aws.ToString(out.QueueUrl), batchSize: 10, concurrency: 1, timeout: time.Second,
			sqs: client, log: slog.New(slog.NewTextHandler(io.Discard, nil)), finishPolls: finishPolls,
			handler: func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
				t.Error("the function was invoked after the stop")
				return events.SQSEventResponse{}, nil
			},
			invoke: func(ctx context.Context, _ time.Duration, fn func(context.Context) error) error { return fn(ctx) }}
		runCtx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		m.run(runCtx, &wg)
		time.Sleep(500 * time.Millisecond) // the long poll is under way
		return aws.ToString(out.QueueUrl), func() { cancel(); wg.Wait() }
	}

	t.Run("in memory", func(t *testing.T) {
		_, stop := poll(t, "in-memory", false)
		start := time.Now()
		stop()
		if d := time.Since(start); d >= (sqsPollWait-1)*time.Second {
			t.Errorf("the stop took %v: it waited for the idle long poll (%d s)", d, sqsPollWait)
		}
	})
	t.Run("with data", func(t *testing.T) {
		url, stop := poll(t, "with-data", true)
		stopped := make(chan struct{})
		go func() { stop(); close(stopped) }()
		time.Sleep(200 * time.Millisecond) // the stop has begun
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-stopped:
		case <-time.After((sqsPollWait + 10) * time.Second):
			t.Fatal("the stop did not end")
		}
		got, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url),
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameApproximateReceiveCount}})
		if err != nil {
			t.Fatal(err)
		}
		// Received once by the poll under way, handed back, received again here.
		if len(got.Messages) != 1 || got.Messages[0].Attributes["ApproximateReceiveCount"] != "2" {
			t.Fatalf("after the stop the queue gives %+v; want the message back, received twice", got.Messages)
		}
	})
}
