package devstack

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// SQSHandler is a channel function's handler.
type SQSHandler func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)

// sqsMapping emulates an SQS event source mapping: its pollers (up to
// MaximumConcurrency, scaled as Lambda scales them: run) each receive up to
// BatchSize messages, invoke the function, and delete the messages it did not
// report as failed. Failed messages stay in flight until
// their visibility timeout ends (or the function changed it), and the queue's
// redrive policy moves them to the DLQ after maxReceiveCount receives.
type sqsMapping struct {
	name        string
	queueURL    string
	queueARN    string
	batchSize   int32
	concurrency int
	timeout     time.Duration
	handler     SQSHandler
	sqs         *sqs.Client
	log         *slog.Logger
	invoke      func(ctx context.Context, timeout time.Duration, fn func(context.Context) error) error
	// onReceive, when set, gets each batch's queue waits (SentTimestamp →
	// the handler's start).
	onReceive func(mapping string, waits []time.Duration)
	// finishPolls makes a stop wait for the long polls under way and hand
	// back what they bring. Set when the queues outlive the stop (a data
	// directory); in memory they end with the emulator, so a stop cancels
	// the polls instead of waiting up to sqsPollWait for them.
	finishPolls bool
	// retried, when set, keeps the messages left in flight for a retry.
	retried *RetriedMessages
}

// RetriedMessages are the messages the SQS mappings left in flight after a
// failed invocation or a batch item failure: waiting out a visibility
// timeout (up to the queue's 180 or 360 s) or the backoff a function set.
// The stack's clock does not move SQS's; a test that moves the clock past
// such a wait makes them visible with ElapseVisibility, as that much time
// would.
type RetriedMessages struct {
	mu   sync.Mutex
	held map[string][]string // queue URL → receipt handles
	sqs  *sqs.Client
}

func (r *RetriedMessages) hold(queueURL string, receipts ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held[queueURL] = append(r.held[queueURL], receipts...)
	if n := len(r.held[queueURL]); n > maxRetriedHeld { // make dev: the oldest are long visible again
		r.held[queueURL] = r.held[queueURL][n-maxRetriedHeld:]
	}
}

// maxRetriedHeld bounds the receipts kept per queue.
const maxRetriedHeld = 1000

// ElapseVisibility makes the retried messages visible now. A receipt whose
// message has been received again or deleted since is stale: SQS refuses
// it, and it is dropped.
func (r *RetriedMessages) ElapseVisibility(ctx context.Context) {
	r.mu.Lock()
	held := r.held
	r.held = map[string][]string{}
	r.mu.Unlock()
	for url, receipts := range held {
		for _, rh := range receipts {
			_, _ = r.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(rh), VisibilityTimeout: 0})
		}
	}
}

// sqsPollWait is each mapping poller's long poll, in seconds. A message
// ends a poll as soon as it arrives, so this bounds only an idle poller's
// rate (Lambda's own pollers wait up to 20 s) and how long a stop waits for
// the polls under way (finishPolls). At 1 s an idle stack's dozens of pollers took about a
// quarter of a core under -race (docs/benchmarks.md, "Test time").
const sqsPollWait = 5

// sqsIdlePollers is how many pollers a mapping keeps while its queue is
// empty: Lambda "scales back the processing to five concurrent batches" when
// traffic is low, and goes below five only for a mapping without a maximum
// concurrency (docs/decisions.md, "Local SQS pollers scale as Lambda's").
const sqsIdlePollers = 5

// run starts the mapping's pollers as Lambda scales a standard queue's:
// min(sqsIdlePollers, concurrency) long polls while the queue is empty; each
// poll that brings messages starts one more poller, up to the mapping's
// concurrency, before its batch is invoked; a poll that brings none ends its
// poller while more than the idle ones run. Every waiting long poll is
// woken by each message fauxqs receives, and all but one come back empty:
// idle pollers beyond Lambda's own cost a round trip each, per message.
func (m *sqsMapping) run(ctx context.Context, wg *sync.WaitGroup) {
	idle := min(sqsIdlePollers, m.concurrency)
	var mu sync.Mutex
	running := 0
	// add starts a poller unless the mapping runs its concurrency already
	// (or is stopping); it is called with mu held.
	var add func()
	add = func() {
		if running >= m.concurrency || ctx.Err() != nil {
			return
		}
		running++
		wg.Add(1)
		go func() {
			defer wg.Done()
			grow := func() {
				mu.Lock()
				add()
				mu.Unlock()
			}
			for ctx.Err() == nil {
				got, err := m.pollOnce(ctx, grow)
				if err != nil && ctx.Err() == nil {
					m.log.Warn("sqs poll failed", "mapping", m.name, "error", err)
					sleep(ctx, time.Second)
					continue
				}
				mu.Lock()
				if got == 0 && running > idle {
					running--
					mu.Unlock()
					return
				}
				mu.Unlock()
			}
			mu.Lock()
			running--
			mu.Unlock()
		}()
	}
	mu.Lock()
	for range idle {
		add()
	}
	mu.Unlock()
}

// pollOnce receives one batch and invokes the function with it, calling
// received (when set) once the batch is in hand; it returns how many
// messages the batch held.
func (m *sqsMapping) pollOnce(ctx context.Context, received func()) (int, error) {
	// With finishPolls, not cancelled by a stop: an abandoned long poll can
	// still take messages off the queue, invisible for the whole visibility
	// timeout, and the data directory would keep them so. The poll is at
	// most sqsPollWait long; what it brings after the stop is handed back
	// below.
	pollCtx := ctx
	if m.finishPolls {
		pollCtx = context.WithoutCancel(ctx)
	}
	out, err := m.sqs.ReceiveMessage(pollCtx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(m.queueURL), MaxNumberOfMessages: m.batchSize, WaitTimeSeconds: sqsPollWait,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil {
		return 0, fmt.Errorf("receive: %w", err)
	}
	n := len(out.Messages)
	if n == 0 {
		return 0, nil
	}
	if ctx.Err() != nil {
		m.release(out.Messages)
		return n, nil
	}
	if received != nil {
		received()
	}
	ev := events.SQSEvent{Records: make([]events.SQSMessage, len(out.Messages))}
	for i, msg := range out.Messages {
		ev.Records[i] = toSQSEventMessage(msg, m.queueARN)
	}
	if m.onReceive != nil {
		start := time.Now()
		waits := make([]time.Duration, 0, len(ev.Records))
		for _, r := range ev.Records {
			if ms, err := strconv.ParseInt(r.Attributes["SentTimestamp"], 10, 64); err == nil {
				waits = append(waits, start.Sub(time.UnixMilli(ms)))
			}
		}
		m.onReceive(m.name, waits)
	}
	var resp events.SQSEventResponse
	err = m.invoke(ctx, m.timeout, func(ctx context.Context) error {
		var herr error
		resp, herr = m.handler(ctx, ev)
		return herr
	})
	if err != nil {
		m.log.Warn("function error: batch will be retried", "mapping", m.name, "error", err)
		m.hold(out.Messages, nil)
		return n, nil
	}
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	for id := range failed {
		if !slices.ContainsFunc(ev.Records, func(r events.SQSMessage) bool { return r.MessageId == id }) {
			// Lambda treats an unknown item identifier as a failure of the whole batch.
			m.log.Warn("unknown batch item failure id: batch will be retried", "mapping", m.name, "itemIdentifier", id)
			m.hold(out.Messages, nil)
			return n, nil
		}
	}
	m.hold(out.Messages, failed)
	var entries []sqstypes.DeleteMessageBatchRequestEntry
	for i, msg := range out.Messages {
		if !failed[aws.ToString(msg.MessageId)] {
			entries = append(entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: msg.ReceiptHandle})
		}
	}
	if len(entries) > 0 {
		if _, err := m.sqs.DeleteMessageBatch(context.WithoutCancel(ctx), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(m.queueURL), Entries: entries}); err != nil {
			return n, fmt.Errorf("delete: %w", err)
		}
	}
	return n, nil
}

// hold keeps the receipts of msgs left in flight (failed nil: all of them).
func (m *sqsMapping) hold(msgs []sqstypes.Message, failed map[string]bool) {
	if m.retried == nil {
		return
	}
	var receipts []string
	for _, msg := range msgs {
		if failed == nil || failed[aws.ToString(msg.MessageId)] {
			receipts = append(receipts, aws.ToString(msg.ReceiptHandle))
		}
	}
	if len(receipts) > 0 {
		m.retried.hold(m.queueURL, receipts...)
	}
}

// release makes messages received during a stop visible again at once, so
// that a clean stop leaves nothing in flight (a data directory keeps them for
// the next start).
func (m *sqsMapping) release(msgs []sqstypes.Message) {
	var entries []sqstypes.ChangeMessageVisibilityBatchRequestEntry
	for i, msg := range msgs {
		entries = append(entries, sqstypes.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: msg.ReceiptHandle, VisibilityTimeout: 0})
	}
	if _, err := m.sqs.ChangeMessageVisibilityBatch(context.Background(), &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(m.queueURL), Entries: entries}); err != nil {
		m.log.Warn("release messages received while stopping", "mapping", m.name, "error", err)
	}
}

func toSQSEventMessage(msg sqstypes.Message, queueARN string) events.SQSMessage {
	ev := events.SQSMessage{
		MessageId: aws.ToString(msg.MessageId), ReceiptHandle: aws.ToString(msg.ReceiptHandle),
		Body: aws.ToString(msg.Body), Md5OfBody: aws.ToString(msg.MD5OfBody),
		Md5OfMessageAttributes: aws.ToString(msg.MD5OfMessageAttributes),
		Attributes:             msg.Attributes, EventSource: "aws:sqs", EventSourceARN: queueARN, AWSRegion: LocalRegion,
		MessageAttributes: map[string]events.SQSMessageAttribute{},
	}
	for k, v := range msg.MessageAttributes {
		ev.MessageAttributes[k] = events.SQSMessageAttribute{
			StringValue: v.StringValue, BinaryValue: v.BinaryValue, DataType: aws.ToString(v.DataType),
		}
	}
	return ev
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
