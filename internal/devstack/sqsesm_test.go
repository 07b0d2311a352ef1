package devstack

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"
)

// TestStopAndTheLongPollsUnderWay, on fauxqs: a stop cancels an idle
// mapping's long poll when the queues end with the stack (no data
// directory), and with finishPolls waits for it and hands back, visible at
// once, a message the poll brings after the stop.
func TestStopAndTheLongPollsUnderWay(t *testing.T) {
	ctx := context.Background()
	client := startFauxqs(t)

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

// TestSQSPollersScaleAsLambdas, on fauxqs: an idle mapping long-polls with
// Lambda's five pollers, not its maximum concurrency; a backlog scales it to
// that maximum; once the queue is empty again it is back to five.
func TestSQSPollersScaleAsLambdas(t *testing.T) {
	ctx := context.Background()
	var polling atomic.Int32 // ReceiveMessage calls under way
	client := startFauxqs(t, func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("countPolls", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if _, ok := in.Parameters.(*sqs.ReceiveMessageInput); ok {
				polling.Add(1)
				defer polling.Add(-1)
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
	})
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("scaling")})
	if err != nil {
		t.Fatal(err)
	}
	const concurrency = 20
	var mu sync.Mutex
	running, most, handled := 0, 0, 0
	m := &sqsMapping{name: "m", queueURL: aws.ToString(out.QueueUrl), batchSize: 10, concurrency: concurrency, timeout: 10 * time.Second,
		sqs: client, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		handler: func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			time.Sleep(300 * time.Millisecond)
			mu.Lock()
			running--
			handled += len(ev.Records)
			mu.Unlock()
			return events.SQSEventResponse{}, nil
		},
		invoke: func(ctx context.Context, _ time.Duration, fn func(context.Context) error) error { return fn(ctx) }}
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	m.run(runCtx, &wg)

	waitPolls := func(what string, want int32) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for polling.Load() != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d long polls under way, want %d", what, polling.Load(), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitPolls("idle", sqsIdlePollers)
	time.Sleep(300 * time.Millisecond)
	if n := polling.Load(); n != sqsIdlePollers {
		t.Fatalf("idle: %d long polls, want Lambda's %d", n, sqsIdlePollers)
	}

	const backlog = 600
	for i := 0; i < backlog; i += 10 {
		var entries []sqstypes.SendMessageBatchRequestEntry
		for j := range 10 {
			entries = append(entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String("m")})
		}
		if _, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: out.QueueUrl, Entries: entries}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		done := handled
		mu.Unlock()
		if done == backlog {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d messages handled after 60 s", done, backlog)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if most != concurrency {
		t.Errorf("the backlog ran %d batches at once at most, want the mapping's maximum concurrency %d", most, concurrency)
	}
	// The drained pollers' empty polls end every one above the idle five.
	waitPolls("after the backlog", sqsIdlePollers)
}

// startFauxqs starts the SQS emulator alone for the test (skipped with
// -short) and returns a client of it with the API options given.
func startFauxqs(t *testing.T, apiOptions ...func(*middleware.Stack) error) *sqs.Client {
	t.Helper()
	if testing.Short() || os.Getenv("HERALD_SKIP_INTEGRATION") != "" {
		t.Skip("integration test: starts fauxqs")
	}
	emu, err := StartEmulators(context.Background(), EmulatorOptions{InfraDir: "../../infra/local", Services: []string{"sqs"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emu.Stop)
	return sqs.New(sqs.Options{Region: LocalRegion, BaseEndpoint: aws.String(emu.SQS),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""), APIOptions: apiOptions})
}
