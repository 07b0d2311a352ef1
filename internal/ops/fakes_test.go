package ops

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/recovery"
	"github.com/heraldhq/herald/internal/storetest"
)

// clock is a fake clock; sleeping advances it.
type clock struct {
	mu    sync.Mutex
	t     time.Time
	slept time.Duration
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) Sleep(_ context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	c.slept += d
	return nil
}

type fakeMsg struct {
	id, body       string
	receives       int
	sent, firstRcv time.Time
	invisibleUntil time.Time
	handle         string
	source         string // URL of the queue it was dead-lettered from
}

type fakeQueue struct {
	url, arn string
	msgs     []*fakeMsg
}

// fakeSQS keeps queues in memory with visibility and receive counts, and
// optionally SQS's message move tasks.
type fakeSQS struct {
	mu        sync.Mutex
	clock     *clock
	queues    map[string]*fakeQueue
	moveTasks bool
	tasks     []sqstypes.ListMessageMoveTasksResultEntry
	runTask   bool // a task already running on every queue
	failSend  error
	seq       int
}

var _ SQSAPI = (*fakeSQS)(nil)

func newFakeSQS(c *clock, urls ...string) *fakeSQS {
	f := &fakeSQS{clock: c, queues: map[string]*fakeQueue{}}
	for _, u := range urls {
		f.queues[u] = &fakeQueue{url: u, arn: "arn:aws:sqs:us-east-1:000000000000:" + queueNameOf(u)}
	}
	return f
}

func (f *fakeSQS) q(url *string) (*fakeQueue, error) {
	q, ok := f.queues[aws.ToString(url)]
	if !ok {
		return nil, &smithy.GenericAPIError{Code: "AWS.SimpleQueueService.NonExistentQueue", Message: "no queue " + aws.ToString(url)}
	}
	return q, nil
}

// park puts a message in a DLQ as SQS's redrive would: with its receive
// count and the queue it came from.
func (f *fakeSQS) park(dlq, source, body string, receives int, sent time.Time) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	id := fmt.Sprintf("m%d", f.seq)
	f.queues[dlq].msgs = append(f.queues[dlq].msgs, &fakeMsg{id: id, body: body, receives: receives, sent: sent, firstRcv: sent.Add(time.Second), source: source})
	return id
}

func (f *fakeSQS) bodies(url string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, m := range f.queues[url].msgs {
		out = append(out, m.body)
	}
	return out
}

func (f *fakeSQS) receivesOf(url string) []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []int
	for _, m := range f.queues[url].msgs {
		out = append(out, m.receives)
	}
	return out
}

func (f *fakeSQS) visible(url string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, m := range f.queues[url].msgs {
		if !m.invisibleUntil.After(f.clock.Now()) {
			n++
		}
	}
	return n
}

func (f *fakeSQS) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.q(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	vis, inv := 0, 0
	for _, m := range q.msgs {
		if m.invisibleUntil.After(f.clock.Now()) {
			inv++
		} else {
			vis++
		}
	}
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{
		"ApproximateNumberOfMessages": strconv.Itoa(vis), "ApproximateNumberOfMessagesNotVisible": strconv.Itoa(inv), "QueueArn": q.arn,
	}}, nil
}

func (f *fakeSQS) ReceiveMessage(_ context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.q(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	now := f.clock.Now()
	var out []sqstypes.Message
	for _, m := range q.msgs {
		if len(out) == int(in.MaxNumberOfMessages) {
			break
		}
		if m.invisibleUntil.After(now) {
			continue
		}
		m.receives++
		f.seq++
		m.handle = fmt.Sprintf("h%d", f.seq)
		m.invisibleUntil = now.Add(time.Duration(in.VisibilityTimeout) * time.Second)
		out = append(out, sqstypes.Message{
			MessageId: aws.String(m.id), ReceiptHandle: aws.String(m.handle), Body: aws.String(m.body),
			Attributes: map[string]string{
				"ApproximateReceiveCount":          strconv.Itoa(m.receives),
				"SentTimestamp":                    strconv.FormatInt(m.sent.UnixMilli(), 10),
				"ApproximateFirstReceiveTimestamp": strconv.FormatInt(m.firstRcv.UnixMilli(), 10),
			},
		})
	}
	return &sqs.ReceiveMessageOutput{Messages: out}, nil
}

func (f *fakeSQS) byHandle(q *fakeQueue, h *string) (int, bool) {
	for i, m := range q.msgs {
		if m.handle == aws.ToString(h) {
			return i, true
		}
	}
	return 0, false
}

func (f *fakeSQS) ChangeMessageVisibilityBatch(_ context.Context, in *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.q(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	if len(in.Entries) > 10 {
		return nil, &smithy.GenericAPIError{Code: "TooManyEntriesInBatchRequest"}
	}
	for _, e := range in.Entries {
		if i, ok := f.byHandle(q, e.ReceiptHandle); ok {
			q.msgs[i].invisibleUntil = f.clock.Now().Add(time.Duration(e.VisibilityTimeout) * time.Second)
		}
	}
	return &sqs.ChangeMessageVisibilityBatchOutput{}, nil
}

func (f *fakeSQS) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failSend != nil {
		return nil, f.failSend
	}
	q, err := f.q(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	f.seq++
	q.msgs = append(q.msgs, &fakeMsg{id: fmt.Sprintf("m%d", f.seq), body: aws.ToString(in.MessageBody), sent: f.clock.Now()})
	return &sqs.SendMessageOutput{}, nil
}

func (f *fakeSQS) DeleteMessage(_ context.Context, in *sqs.DeleteMessageInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.q(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	if i, ok := f.byHandle(q, in.ReceiptHandle); ok {
		q.msgs = slices.Delete(q.msgs, i, i+1)
	}
	return &sqs.DeleteMessageOutput{}, nil
}

func (f *fakeSQS) PurgeQueue(_ context.Context, in *sqs.PurgeQueueInput, _ ...func(*sqs.Options)) (*sqs.PurgeQueueOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.q(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	q.msgs = nil
	return &sqs.PurgeQueueOutput{}, nil
}

var errUnknownAction = &smithy.GenericAPIError{Code: "InvalidAction", Message: "Unknown action"}

func (f *fakeSQS) queueByARN(arn string) *fakeQueue {
	for _, q := range f.queues {
		if q.arn == arn {
			return q
		}
	}
	return nil
}

// StartMessageMoveTask moves every message back to its source queue at once.
func (f *fakeSQS) StartMessageMoveTask(_ context.Context, in *sqs.StartMessageMoveTaskInput, _ ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.moveTasks {
		return nil, errUnknownAction
	}
	q := f.queueByARN(aws.ToString(in.SourceArn))
	n := int64(len(q.msgs))
	for _, m := range q.msgs {
		src := f.queues[m.source]
		src.msgs = append(src.msgs, &fakeMsg{id: m.id, body: m.body, receives: 0, sent: m.sent})
	}
	q.msgs = nil
	f.seq++
	handle := fmt.Sprintf("task%d", f.seq)
	f.tasks = append(f.tasks, sqstypes.ListMessageMoveTasksResultEntry{
		TaskHandle: aws.String(handle), Status: aws.String("COMPLETED"), SourceArn: in.SourceArn,
		ApproximateNumberOfMessagesMoved: n, ApproximateNumberOfMessagesToMove: aws.Int64(n),
		MaxNumberOfMessagesPerSecond: in.MaxNumberOfMessagesPerSecond,
	})
	return &sqs.StartMessageMoveTaskOutput{TaskHandle: aws.String(handle)}, nil
}

func (f *fakeSQS) ListMessageMoveTasks(_ context.Context, in *sqs.ListMessageMoveTasksInput, _ ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.moveTasks {
		return nil, errUnknownAction
	}
	if f.runTask {
		return &sqs.ListMessageMoveTasksOutput{Results: []sqstypes.ListMessageMoveTasksResultEntry{{
			Status: aws.String("RUNNING"), ApproximateNumberOfMessagesMoved: 3, ApproximateNumberOfMessagesToMove: aws.Int64(9),
		}}}, nil
	}
	var out []sqstypes.ListMessageMoveTasksResultEntry
	for _, t := range f.tasks {
		if aws.ToString(t.SourceArn) == aws.ToString(in.SourceArn) {
			out = append(out, t)
		}
	}
	return &sqs.ListMessageMoveTasksOutput{Results: out}, nil
}

// fakeStore holds notifications and deliveries and applies conditional
// transitions as the DynamoDB store does.
type fakeStore struct {
	mu            sync.Mutex
	notifications map[string]*domain.Notification
	deliveries    *storetest.MemDeliveries
	transitions   []string
	failTo        map[domain.Status]error
	// due lists the due partitions that still hold deliveries due (HasDue).
	due map[recovery.DuePartition]bool
	// campaigns are the stored campaigns' statuses (GetCampaign), and
	// campaignReads counts the reads.
	campaigns     map[string]domain.CampaignStatus
	campaignReads int
	failCampaign  error
}

var _ Store = (*fakeStore)(nil)

func newFakeStore() *fakeStore {
	return &fakeStore{notifications: map[string]*domain.Notification{}, deliveries: storetest.NewMemDeliveries(nil)}
}

func (s *fakeStore) add(n *domain.Notification, ds ...domain.Delivery) {
	s.notifications[n.ID] = n
	for _, d := range ds {
		s.deliveries.Put(d)
	}
}

func (s *fakeStore) delivery(id string, c domain.Channel) domain.Delivery {
	d, _ := s.deliveries.Get(id, c)
	return d
}

func (s *fakeStore) GetNotificationWithDeliveries(_ context.Context, id string) (*domain.Notification, []domain.Delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.notifications[id]
	if !ok {
		return nil, nil, fmt.Errorf("notification %s: %w", id, domain.ErrNotFound)
	}
	cp := *n
	return &cp, s.deliveries.Of(id), nil
}

func (s *fakeStore) HasDue(_ context.Context, p recovery.DuePartition, _ time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.due[p], nil
}

func (s *fakeStore) GetCampaign(_ context.Context, id string) (*domain.Campaign, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.campaignReads++
	if s.failCampaign != nil {
		return nil, s.failCampaign
	}
	st, ok := s.campaigns[id]
	if !ok {
		return nil, fmt.Errorf("campaign %s: %w", id, domain.ErrNotFound)
	}
	return &domain.Campaign{ID: id, Status: st, Type: "newsletter", Data: map[string]any{"secret": "private text"}}, nil
}

// Transition applies c to the shared in-memory table
// (storetest.MemDeliveries, which runs the store contract with the DynamoDB
// adapter) and records the edges taken; failTo injects failures.
func (s *fakeStore) Transition(ctx context.Context, id string, ch domain.Channel, c domain.Change) (*domain.Delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.failTo[c.To]; err != nil {
		return nil, err
	}
	before, _ := s.deliveries.Get(id, ch)
	d, err := s.deliveries.Transition(ctx, id, ch, c)
	if err == nil {
		s.transitions = append(s.transitions, fmt.Sprintf("%s/%s %s→%s", id, ch, before.Status, c.To))
	}
	return d, err
}

// fakeNotes holds the relay's failure notes; it answers a sequence range
// within a time window as the table does.
type fakeNotes struct {
	notes []recovery.RelayFailure
	err   error
	calls int
}

var _ RelayFailures = (*fakeNotes)(nil)

func (f *fakeNotes) RelayFailures(_ context.Context, from, to time.Time, first, last string) ([]recovery.RelayFailure, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	pad := func(s string) string { return fmt.Sprintf("%040s", s) }
	var out []recovery.RelayFailure
	for _, n := range f.notes {
		if pad(n.SequenceNumber) >= pad(first) && pad(n.SequenceNumber) <= pad(last) &&
			!n.At.Before(from.Add(-24*time.Hour)) && !n.At.After(to.Add(24*time.Hour)) {
			out = append(out, n)
		}
	}
	return out, nil
}

func note(seq int, at time.Time, pk, sk, id string) recovery.RelayFailure {
	return recovery.RelayFailure{SequenceNumber: fmt.Sprintf("%021d", seq), At: at, PK: pk, SK: sk, NotificationID: id}
}

type fakeReplanner struct {
	mu    sync.Mutex
	calls []string
	fail  map[string]error
}

func (r *fakeReplanner) Replan(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, id)
	return r.fail[id]
}

const (
	emailDLQ     = "http://sqs.local/000000000000/herald-EmailDLQ"
	smsDLQ       = "http://sqs.local/000000000000/herald-SmsDLQ"
	pushDLQ      = "http://sqs.local/000000000000/herald-PushDLQ"
	relayDLQ     = "http://sqs.local/000000000000/herald-RelayDLQ"
	releaseDLQ   = "http://sqs.local/000000000000/herald-ReleaseDLQ"
	releaseQueue = "http://sqs.local/000000000000/herald-ReleaseQueue"
	campaignDLQ  = "http://sqs.local/000000000000/herald-CampaignDLQ"
	campaignQ    = "http://sqs.local/000000000000/herald-CampaignQueue"
	feedbackDLQ  = "http://sqs.local/000000000000/herald-FeedbackDLQ"
	liveDLQ      = "http://sqs.local/000000000000/herald-LiveDLQ"
	emailHigh    = "http://sqs.local/000000000000/herald-EmailHighQueue"
	emailLow     = "http://sqs.local/000000000000/herald-EmailLowQueue"
)

func testTarget() Target {
	urls := map[string]string{"EmailDLQ": emailDLQ, "SmsDLQ": smsDLQ, "PushDLQ": pushDLQ, "RelayDLQ": relayDLQ, "ReleaseDLQ": releaseDLQ, "ReleaseQueue": releaseQueue,
		"CampaignDLQ": campaignDLQ, "CampaignQueue": campaignQ, "FeedbackDLQ": feedbackDLQ, "LiveDLQ": liveDLQ}
	for _, c := range domain.Channels {
		for _, p := range domain.Priorities {
			id := WorkQueueLogicalID(c, p)
			urls[id] = "http://sqs.local/000000000000/herald-" + id
		}
	}
	t, err := TargetFromURLs("herald-Table", urls)
	if err != nil {
		panic(err)
	}
	return t
}

// env is an operator over fakes with every queue of testTarget.
type env struct {
	clock  *clock
	sqs    *fakeSQS
	store  *fakeStore
	notes  *fakeNotes
	replan *fakeReplanner
	op     *Operator
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newEnv() *env {
	c := &clock{t: t0}
	t := testTarget()
	urls := []string{}
	for _, q := range t.DLQs {
		urls = append(urls, q.URL)
	}
	for _, u := range t.Work {
		urls = append(urls, u)
	}
	urls = append(urls, t.Release, t.Campaign)
	e := &env{clock: c, sqs: newFakeSQS(c, urls...), store: newFakeStore(), notes: &fakeNotes{}, replan: &fakeReplanner{}}
	e.op = &Operator{Target: t, SQS: e.sqs, Store: e.store, Failures: e.notes, Replanner: e.replan, Now: c.Now, Sleep: c.Sleep, PollWait: -1}
	return e
}

// parkDelivery stores a notification with one delivery and parks its work
// message in the channel's DLQ.
func (e *env) parkDelivery(id string, c domain.Channel, p domain.Priority, status domain.Status, reason domain.Reason, attempts int, lastError string) {
	n := &domain.Notification{ID: id, Type: "invoice.payment_failed", Priority: p, CreatedAt: t0.Add(-time.Hour),
		Recipient: domain.Recipient{UserID: "u-" + id, Email: "secret." + id + "@example.com", Phone: "+15550100" + strconv.Itoa(len(id))},
		Data:      map[string]any{"invoiceUrl": "https://example.com/private/" + id}, Status: domain.NotificationAccepted}
	e.store.add(n, domain.Delivery{NotificationID: id, Channel: c, Priority: p, Status: status, Reason: reason, Attempts: attempts, LastError: lastError, UpdatedAt: t0.Add(-time.Minute)})
	dlq, _ := e.op.Target.DLQ(string(c))
	e.sqs.park(dlq.URL, e.op.Target.Work[domain.QueueName(c, p)], `{"notificationId":"`+id+`","channel":"`+string(c)+`"}`, 6, t0.Add(-30*time.Minute))
}
