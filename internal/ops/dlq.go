package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/events"
	"github.com/heraldhq/herald/internal/recovery"
)

// SQSAPI is the subset of the SQS client the commands use.
type SQSAPI interface {
	GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	ChangeMessageVisibilityBatch(context.Context, *sqs.ChangeMessageVisibilityBatchInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	DeleteMessage(context.Context, *sqs.DeleteMessageInput, ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	PurgeQueue(context.Context, *sqs.PurgeQueueInput, ...func(*sqs.Options)) (*sqs.PurgeQueueOutput, error)
	StartMessageMoveTask(context.Context, *sqs.StartMessageMoveTaskInput, ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error)
	ListMessageMoveTasks(context.Context, *sqs.ListMessageMoveTasksInput, ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error)
}

var _ SQSAPI = (*sqs.Client)(nil)

// Store is what the commands read and change in the table.
type Store interface {
	GetNotificationWithDeliveries(ctx context.Context, id string) (*domain.Notification, []domain.Delivery, error)
	Transition(ctx context.Context, id string, ch domain.Channel, c domain.Change) (*domain.Delivery, error)
	// HasDue reports whether a due partition still holds deliveries due by now.
	HasDue(ctx context.Context, p recovery.DuePartition, now time.Time) (bool, error)
	// GetCampaign reads a campaign (domain.ErrNotFound when it is no longer
	// stored), for the status of a campaign DLQ message's campaign.
	GetCampaign(ctx context.Context, id string) (*domain.Campaign, error)
}

// RelayFailures reads the relay's failure notes (recovery.RelayFailure) of a
// failed stream batch's sequence range, to resolve relay DLQ records without
// reading the stream.
type RelayFailures interface {
	RelayFailures(ctx context.Context, from, to time.Time, first, last string) ([]recovery.RelayFailure, error)
}

// Replanner re-runs the relay's planning for one notification.
type Replanner interface {
	Replan(ctx context.Context, id string) error
}

// Operator runs the DLQ commands against one deployment.
type Operator struct {
	Target    Target
	SQS       SQSAPI
	Store     Store
	Failures  RelayFailures
	Replanner Replanner
	// Events publishes parked events again (events DLQ redrive).
	Events events.Bus
	// Watches lists stuck deliveries (`herald dlq stuck`).
	Watches Watches
	// Now and Sleep default to the real clock; tests replace them.
	Now   func() time.Time
	Sleep func(context.Context, time.Duration) error
	// Hold is how long an inspected message stays invisible before it is
	// released again (default 30 s); it only matters if the command dies
	// before releasing it.
	Hold time.Duration
	// PollWait is the long-poll wait of each receive (default 1 s): long
	// polling asks every SQS server, so an empty answer means empty.
	PollWait time.Duration
}

func (o *Operator) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

func (o *Operator) sleep(ctx context.Context, d time.Duration) error {
	if o.Sleep != nil {
		return o.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (o *Operator) hold() time.Duration {
	if o.Hold > 0 {
		return o.Hold
	}
	return 30 * time.Second
}

func (o *Operator) pollWait() int32 {
	if o.PollWait > 0 {
		return int32(o.PollWait / time.Second)
	}
	if o.PollWait < 0 {
		return 0
	}
	return 1
}

// QueueStatus is one DLQ in `herald dlq list`.
type QueueStatus struct {
	Name    string `json:"name"`
	Channel string `json:"channel"`
	Queue   string `json:"queue"`
	// Depth counts visible and in-flight messages.
	Depth int `json:"depth"`
	// OldestAgeSeconds is the age of the oldest message seen (0 when empty):
	// the time since it was first sent to its work queue (or, for the relay
	// DLQ, since the failure record was written).
	OldestAgeSeconds int64 `json:"oldestAgeSeconds"`
	// Sampled is true when the DLQ holds more messages than were inspected
	// for the age.
	Sampled bool `json:"sampled,omitempty"`
}

// ageSample bounds how many messages `list` inspects per DLQ for the age.
const ageSample = 100

// List reports every DLQ's depth and oldest message age.
func (o *Operator) List(ctx context.Context) ([]QueueStatus, error) {
	out := make([]QueueStatus, len(o.Target.DLQs))
	errs := make([]error, len(o.Target.DLQs))
	var wg sync.WaitGroup
	for i, q := range o.Target.DLQs {
		wg.Go(func() { out[i], errs[i] = o.status(ctx, q) })
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

func (o *Operator) status(ctx context.Context, q DLQ) (QueueStatus, error) {
	s := QueueStatus{Name: q.Name, Channel: string(q.Channel), Queue: q.QueueName()}
	depth, err := o.depth(ctx, q)
	if err != nil {
		return s, err
	}
	s.Depth = depth
	if depth == 0 {
		return s, nil
	}
	msgs, err := o.peek(ctx, q, min(ageSample, depth))
	if err != nil {
		return s, err
	}
	now := o.now()
	for _, m := range msgs {
		if age := int64(now.Sub(sentAt(m)) / time.Second); age > s.OldestAgeSeconds {
			s.OldestAgeSeconds = age
		}
	}
	s.Sampled = len(msgs) < depth
	return s, nil
}

func (o *Operator) depth(ctx context.Context, q DLQ) (int, error) {
	out, err := o.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(q.URL),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	if err != nil {
		return 0, fmt.Errorf("%s DLQ %s: %w", q.Name, q.QueueName(), err)
	}
	visible, _ := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
	inFlight, _ := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
	return visible + inFlight, nil
}

func (o *Operator) queueARN(ctx context.Context, q DLQ) (string, error) {
	out, err := o.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(q.URL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", fmt.Errorf("%s DLQ %s: %w", q.Name, q.QueueName(), err)
	}
	return out.Attributes[string(sqstypes.QueueAttributeNameQueueArn)], nil
}

// receive takes up to limit distinct messages and keeps them invisible for
// hold; the caller releases or deletes each.
func (o *Operator) receive(ctx context.Context, q DLQ, limit int, hold time.Duration) ([]sqstypes.Message, error) {
	var out []sqstypes.Message
	index := map[string]int{}
	for len(out) < limit {
		resp, err := o.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(q.URL), MaxNumberOfMessages: int32(min(10, limit-len(out))),
			VisibilityTimeout: int32(hold / time.Second), WaitTimeSeconds: o.pollWait(),
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
			// Lambda's DLQ of an asynchronous invocation says why (feedback DLQ).
			MessageAttributeNames: []string{lambdaErrorCodeAttr},
		})
		if err != nil {
			o.release(context.WithoutCancel(ctx), q, out)
			return nil, fmt.Errorf("receive from %s DLQ %s: %w", q.Name, q.QueueName(), err)
		}
		if len(resp.Messages) == 0 {
			break
		}
		for _, m := range resp.Messages {
			id := aws.ToString(m.MessageId)
			if i, dup := index[id]; dup {
				out[i] = m // SQS delivered it twice: keep the newest receipt handle
				continue
			}
			index[id] = len(out)
			out = append(out, m)
		}
	}
	return out, nil
}

// release makes messages visible again at once. Best effort: a message that
// cannot be released reappears when the hold time ends.
func (o *Operator) release(ctx context.Context, q DLQ, msgs []sqstypes.Message) {
	for start := 0; start < len(msgs); start += 10 {
		var entries []sqstypes.ChangeMessageVisibilityBatchRequestEntry
		for i, m := range msgs[start:min(start+10, len(msgs))] {
			entries = append(entries, sqstypes.ChangeMessageVisibilityBatchRequestEntry{
				Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0,
			})
		}
		_, _ = o.SQS.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(q.URL), Entries: entries})
	}
}

// peek receives up to limit messages and releases them at once: the
// messages stay in the DLQ, but each inspection adds one to its
// ApproximateReceiveCount (SQS has no read-only peek).
func (o *Operator) peek(ctx context.Context, q DLQ, limit int) ([]sqstypes.Message, error) {
	msgs, err := o.receive(ctx, q, limit, o.hold())
	if err != nil {
		return nil, err
	}
	o.release(context.WithoutCancel(ctx), q, msgs)
	return msgs, nil
}

func sentAt(m sqstypes.Message) time.Time {
	return msAttr(m, sqstypes.MessageSystemAttributeNameSentTimestamp)
}

func msAttr(m sqstypes.Message, name sqstypes.MessageSystemAttributeName) time.Time {
	ms, err := strconv.ParseInt(m.Attributes[string(name)], 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// priorReceives is the message's receive count before this command's own
// receive.
func priorReceives(m sqstypes.Message) int {
	n, _ := strconv.Atoi(m.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)])
	return max(n-1, 0)
}

// Parked is one message in a DLQ as `herald dlq show` prints it: ids,
// states, counts and times only.
type Parked struct {
	MessageID      string `json:"messageId"`
	NotificationID string `json:"notificationId,omitempty"`
	Type           string `json:"type,omitempty"`
	Channel        string `json:"channel,omitempty"`
	Priority       string `json:"priority,omitempty"`
	// Status, Reason, Attempts and LastError are the delivery's.
	Status    string `json:"status,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Attempts  int    `json:"attempts"`
	LastError string `json:"lastError,omitempty"`
	// Receives is the message's receive count before this inspection.
	Receives        int       `json:"receives"`
	AcceptedAt      time.Time `json:"acceptedAt,omitzero"`
	SentAt          time.Time `json:"sentAt,omitzero"`
	FirstReceivedAt time.Time `json:"firstReceivedAt,omitzero"`
	UpdatedAt       time.Time `json:"updatedAt,omitzero"`
	// Problem explains a message that cannot be tied to a delivery.
	Problem string `json:"problem,omitempty"`
	// Relay DLQ messages: the failed stream batch and the notifications in it.
	Batch           *StreamBatch `json:"batch,omitempty"`
	Condition       string       `json:"condition,omitempty"`
	NotificationIDs []string     `json:"notificationIds,omitempty"`
	// Release DLQ messages: the due partition, and whether it still holds
	// deliveries due now (false: a later tick released them).
	Partition *recovery.DuePartition `json:"partition,omitempty"`
	StillDue  *bool                  `json:"stillDue,omitempty"`
	// Campaign DLQ messages: the step and its campaign's status.
	Campaign *CampaignStep `json:"campaign,omitempty"`
	// Feedback DLQ messages: the SES events of the failed invocation.
	Feedback *FeedbackEvent `json:"feedback,omitempty"`
	// Events DLQ messages: the parked event (its id, type and status).
	Event *ParkedEvent `json:"event,omitempty"`
	// Live DLQ messages: what the live queue message asked for.
	Live *LiveMessage `json:"live,omitempty"`
}

// ErrEmpty reports an empty DLQ.
var ErrEmpty = errors.New("is empty")

// Show inspects up to limit messages of a DLQ without removing them.
func (o *Operator) Show(ctx context.Context, queueArg string, limit int) (DLQ, []Parked, error) {
	q, err := o.Target.DLQ(queueArg)
	if err != nil {
		return q, nil, err
	}
	depth, err := o.depth(ctx, q)
	if err != nil {
		return q, nil, err
	}
	var msgs []sqstypes.Message
	if depth > 0 {
		// Asking for no more than the depth spares a final empty long poll.
		if msgs, err = o.peek(ctx, q, min(limit, depth)); err != nil {
			return q, nil, err
		}
	}
	if len(msgs) == 0 {
		return q, nil, fmt.Errorf("%s DLQ (%s) %w", q.Name, q.QueueName(), ErrEmpty)
	}
	out := make([]Parked, len(msgs))
	statuses := &campaignStatuses{store: o.Store}
	for i, m := range msgs {
		p := Parked{MessageID: aws.ToString(m.MessageId), Receives: priorReceives(m), SentAt: sentAt(m),
			FirstReceivedAt: msAttr(m, sqstypes.MessageSystemAttributeNameApproximateFirstReceiveTimestamp)}
		switch {
		case q.Name == ReleaseDLQName:
			if err := o.describeReleaseMessage(ctx, m, &p); err != nil {
				return q, nil, err
			}
		case q.Name == CampaignDLQName:
			if err := o.describeCampaignMessage(ctx, statuses, m, &p); err != nil {
				return q, nil, err
			}
		case q.Name == FeedbackDLQName:
			describeFeedbackMessage(m, &p)
		case q.Name == EventsDLQName:
			describeEventMessage(m, &p)
		case q.Name == LiveDLQName:
			describeLiveMessage(m, &p)
		case q.Channel == "":
			o.describeRelayMessage(ctx, m, &p)
		default:
			if err := o.describeWorkMessage(ctx, q, m, &p); err != nil {
				return q, nil, err
			}
		}
		out[i] = p
	}
	return q, out, nil
}

// parked is a channel DLQ message tied to its notification and delivery.
type parked struct {
	msg      sqstypes.Message
	work     domain.WorkMessage
	n        *domain.Notification
	delivery *domain.Delivery
	problem  string
}

// load decodes a channel DLQ message and reads its delivery. A message that
// cannot be tied to a delivery gets a problem, not an error; errors are the
// table's.
func (o *Operator) load(ctx context.Context, q DLQ, m sqstypes.Message) (parked, error) {
	p := parked{msg: m}
	var err error
	if p.work, err = domain.DecodeWorkMessage(aws.ToString(m.Body), q.Channel); err != nil {
		p.problem = "malformed body: not a " + string(q.Channel) + " work message"
		return p, nil
	}
	n, ds, err := o.Store.GetNotificationWithDeliveries(ctx, p.work.NotificationID)
	if errors.Is(err, domain.ErrNotFound) {
		p.problem = "notification no longer stored (retention ended)"
		return p, nil
	}
	if err != nil {
		return p, err
	}
	p.n = n
	for i := range ds {
		if ds[i].Channel == q.Channel {
			p.delivery = &ds[i]
		}
	}
	if p.delivery == nil && (len(n.Channels) == 0 || slices.Contains(n.Channels, q.Channel)) {
		// A channel sent at once has no item until a worker's claim creates
		// it: never claimed, it is queued (the worker refuses a channel the
		// notification's type does not plan, back to the DLQ).
		p.delivery = &domain.Delivery{NotificationID: n.ID, Channel: q.Channel, UserID: n.Recipient.UserID, Priority: n.Priority,
			Status: domain.Absent, UpdatedAt: n.CreatedAt}
	}
	if p.delivery == nil {
		p.problem = "notification has no " + string(q.Channel) + " delivery"
	}
	return p, nil
}

func (o *Operator) describeWorkMessage(ctx context.Context, q DLQ, m sqstypes.Message, out *Parked) error {
	p, err := o.load(ctx, q, m)
	if err != nil {
		return err
	}
	out.Problem = p.problem
	out.NotificationID = p.work.NotificationID
	out.Channel = string(p.work.Channel)
	if p.n != nil {
		out.Type, out.Priority, out.AcceptedAt = p.n.Type, string(p.n.Priority), p.n.CreatedAt
	}
	if d := p.delivery; d != nil {
		out.Priority, out.Status, out.Reason = string(d.Priority), string(d.Status), string(d.Reason)
		out.Attempts, out.LastError, out.UpdatedAt = d.Attempts, d.LastError, d.UpdatedAt
	}
	return nil
}

// Purge deletes every message of a DLQ and returns how many it held.
func (o *Operator) Purge(ctx context.Context, queueArg string) (DLQ, int, error) {
	q, err := o.Target.DLQ(queueArg)
	if err != nil {
		return q, 0, err
	}
	depth, err := o.depth(ctx, q)
	if err != nil {
		return q, 0, err
	}
	if depth == 0 {
		return q, 0, fmt.Errorf("%s DLQ (%s) %w: nothing to purge", q.Name, q.QueueName(), ErrEmpty)
	}
	if _, err := o.SQS.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(q.URL)}); err != nil {
		return q, 0, fmt.Errorf("purge %s DLQ %s: %w", q.Name, q.QueueName(), err)
	}
	return q, depth, nil
}
