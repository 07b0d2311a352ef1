package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/heraldhq/herald/internal/domain"
)

// Action is what a redrive does with one parked message.
type Action string

const (
	// ActionRequeue resets the delivery to queued and moves the message to
	// its work queue: the delivery will be sent.
	ActionRequeue Action = "requeue"
	// ActionMove moves the message and leaves the delivery as it is: the
	// worker decides (a delivery already past sending is discarded as a
	// duplicate, a cancelled notification ends dropped: cancelled).
	ActionMove Action = "move"
	// ActionLeave leaves the message in the DLQ (nothing it could go back to).
	ActionLeave Action = "leave"
	// ActionReplan re-runs the relay's planning for the notifications of a
	// relay DLQ record.
	ActionReplan Action = "replan"
	// ActionRelease sends a release DLQ message back to the release queue:
	// the scheduler releases its partition again.
	ActionRelease Action = "release"
	// ActionResend sends a campaign DLQ message back to the campaign queue
	// unchanged: the campaign function runs the step again.
	ActionResend Action = "resend"
)

// RedriveOptions select and pace a redrive.
type RedriveOptions struct {
	// IDs selects messages by notification id (release DLQ: by message id;
	// campaign DLQ: by message id or campaign id);
	// All selects every message.
	IDs []string
	All bool
	// Rate bounds messages (relay: notifications) per second; 0 is unbounded
	// (SQS's own pace for a move task).
	Rate float64
	// DryRun reports what would happen and changes nothing.
	DryRun bool
	// OnItem and OnTask report progress as it happens; both may be nil.
	OnItem func(RedriveItem)
	OnTask func(MoveTask)
}

// RedriveItem is the plan, and outcome, for one message.
type RedriveItem struct {
	MessageID       string   `json:"messageId,omitempty"`
	Partition       string   `json:"partition,omitempty"`
	NotificationID  string   `json:"notificationId,omitempty"`
	NotificationIDs []string `json:"notificationIds,omitempty"`
	Channel         string   `json:"channel,omitempty"`
	Priority        string   `json:"priority,omitempty"`
	// Status and Reason are the delivery's before the redrive.
	Status string `json:"status,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Campaign is a campaign DLQ message's step.
	Campaign *CampaignStep `json:"campaign,omitempty"`
	Event    *ParkedEvent  `json:"event,omitempty"`
	Action   Action        `json:"action"`
	Note     string        `json:"note,omitempty"`
	// Done is true once the action happened (never in a dry run).
	Done  bool   `json:"done"`
	Error string `json:"error,omitempty"`
}

// MoveTask is the progress of an SQS message move task.
type MoveTask struct {
	Handle  string `json:"handle"`
	Status  string `json:"status"`
	Moved   int64  `json:"moved"`
	ToMove  int64  `json:"toMove"`
	Failure string `json:"failure,omitempty"`
}

// RedriveResult is the whole redrive.
type RedriveResult struct {
	Queue  DLQ           `json:"-"`
	DryRun bool          `json:"dryRun"`
	Items  []RedriveItem `json:"items"`
	// Task is set when SQS moved the messages (StartMessageMoveTask).
	Task *MoveTask `json:"moveTask,omitempty"`
	// Unseen counts the messages the DLQ held when the redrive started that
	// it never received (another reader held them longer than an
	// inspection's hold): run it again.
	Unseen int `json:"unseen,omitempty"`
}

// Count returns how many items took (or, in a dry run, would take) action a
// without error.
func (r RedriveResult) Count(a Action) int {
	n := 0
	for _, it := range r.Items {
		if it.Action == a && it.Error == "" {
			n++
		}
	}
	return n
}

// Failed lists the items that went wrong.
func (r RedriveResult) Failed() []RedriveItem {
	var out []RedriveItem
	for _, it := range r.Items {
		if it.Error != "" {
			out = append(out, it)
		}
	}
	return out
}

// ErrNotInDLQ reports --id values that match no parked message.
var ErrNotInDLQ = errors.New("not in the DLQ")

// Redrive moves parked messages back to their work queues with their
// deliveries reset to queued (channel DLQs), re-runs the relay's planning
// (relay DLQ), or sends release messages and campaign steps back to their
// queues unchanged. With All on a channel DLQ, the messages are moved by SQS
// (StartMessageMoveTask) where the endpoint supports it, after every
// delivery has been reset; otherwise, and with IDs, message by message:
// reset, send to the work queue, delete from the DLQ.
func (o *Operator) Redrive(ctx context.Context, queueArg string, opts RedriveOptions) (RedriveResult, error) {
	q, err := o.Target.DLQ(queueArg)
	res := RedriveResult{Queue: q, DryRun: opts.DryRun}
	if err != nil {
		return res, err
	}
	switch {
	case opts.All && len(opts.IDs) > 0:
		return res, errors.New("use either --all or --id, not both")
	case !opts.All && len(opts.IDs) == 0:
		return res, errors.New("say what to redrive: --all, or --id NOTIFICATION_ID (repeatable)")
	case opts.Rate < 0:
		return res, errors.New("--rate must be positive")
	}
	depth, err := o.depth(ctx, q)
	if err != nil {
		return res, err
	}
	if depth == 0 && (q.Channel != "" || q.Name == ReleaseDLQName || q.Name == CampaignDLQName || q.Name == EventsDLQName || len(opts.IDs) == 0) {
		return res, fmt.Errorf("%s DLQ (%s) %w: nothing to redrive", q.Name, q.QueueName(), ErrEmpty)
	}
	switch {
	case q.Name == FeedbackDLQName:
		return res, ErrNoRedrive
	case q.Name == LiveDLQName:
		return res, ErrLiveNotRedriven
	case q.Name == ReleaseDLQName:
		return o.redriveRelease(ctx, q, opts, res)
	case q.Name == CampaignDLQName:
		return o.redriveCampaign(ctx, q, opts, res)
	case q.Name == EventsDLQName:
		return o.redriveEvents(ctx, q, opts, res)
	case q.Channel == "":
		return o.redriveRelay(ctx, q, opts, res)
	}
	if opts.All && !opts.DryRun {
		arn, err := o.queueARN(ctx, q)
		if err != nil {
			return res, err
		}
		supported, err := o.moveTasksSupported(ctx, arn)
		if err != nil {
			return res, err
		}
		if supported {
			return o.redriveWithMoveTask(ctx, q, arn, opts, res)
		}
	}
	return o.redriveEach(ctx, q, opts, res)
}

// plan decides what to do with one channel DLQ message.
func plan(p parked) RedriveItem {
	it := RedriveItem{MessageID: aws.ToString(p.msg.MessageId), NotificationID: p.work.NotificationID, Channel: string(p.work.Channel)}
	d := p.delivery
	if d == nil {
		it.Action, it.Note = ActionLeave, p.problem+": nothing to send it back to (purge it once read)"
		return it
	}
	it.Priority, it.Status, it.Reason = string(d.Priority), string(d.Status), string(d.Reason)
	switch {
	case d.Status == domain.StatusFailed && d.Reason == domain.ReasonExhausted,
		d.Status == domain.StatusRetrying:
		it.Action, it.Note = ActionRequeue, fmt.Sprintf("%s → queued", describe(d))
	case d.Status == domain.StatusFailed:
		it.Action, it.Note = ActionMove, fmt.Sprintf("%s is permanent: not reset, the worker discards the message (fix the cause and send a new notification)", describe(d))
	case d.Status == domain.StatusQueued || d.Status == domain.StatusPlanned:
		it.Action, it.Note = ActionMove, fmt.Sprintf("already %s: the worker sends it", d.Status)
	case d.Status == domain.StatusSending:
		it.Action, it.Note = ActionMove, "sending: the worker reclaims it once the current lease has ended"
	default:
		it.Action, it.Note = ActionMove, fmt.Sprintf("already %s: the worker discards the message as a duplicate", describe(d))
	}
	return it
}

func describe(d *domain.Delivery) string {
	if d.Reason != "" {
		return string(d.Status) + ": " + string(d.Reason)
	}
	return string(d.Status)
}

// limiter paces actions to a rate.
type limiter struct {
	every time.Duration
	next  time.Time
}

func newLimiter(rate float64) *limiter {
	if rate <= 0 {
		return &limiter{}
	}
	return &limiter{every: time.Duration(float64(time.Second) / rate)}
}

func (o *Operator) wait(ctx context.Context, l *limiter) error {
	if l.every == 0 {
		return ctx.Err()
	}
	now := o.now()
	if now.Before(l.next) {
		if err := o.sleep(ctx, l.next.Sub(now)); err != nil {
			return err
		}
		now = l.next
	}
	l.next = now.Add(l.every)
	return nil
}

// redriveHold keeps a received batch of ten invisible long enough to be
// processed at the given rate.
func (o *Operator) redriveHold(rate float64) time.Duration {
	h := o.hold()
	if rate > 0 {
		h += time.Duration(10 / rate * float64(time.Second))
	}
	return min(h, 12*time.Hour)
}

// scan receives every message of q once, in batches of ten, and calls fn on
// each new one; fn returns true when it removed the message from the DLQ.
// Every message not removed is released when the scan ends. It reads until
// the DLQ is empty: an empty receive ends it only once it has seen as many
// messages as the DLQ held when it started; before that it polls again for
// up to an inspection's hold (another reader, a `herald dlq show` or a
// console, may hold some for that long) and returns how many it never saw.
func (o *Operator) scan(ctx context.Context, q DLQ, rate float64, fn func(sqstypes.Message) (bool, error)) (unseen int, err error) {
	held0, err := o.depth(ctx, q)
	if err != nil {
		return 0, err
	}
	hold := o.redriveHold(rate)
	seen := map[string]int{} // message id → index in held, or -1 once removed
	var held []sqstypes.Message
	defer func() { o.release(context.WithoutCancel(ctx), q, held) }()
	var nothingNewSince time.Time
	for {
		batch, err := o.receive(ctx, q, 10, hold)
		if err != nil {
			return 0, err
		}
		fresh := 0
		for _, m := range batch {
			if _, ok := seen[aws.ToString(m.MessageId)]; !ok {
				fresh++
			}
		}
		if fresh == 0 {
			// Empty, or only messages this scan holds back again.
			now := o.now()
			if nothingNewSince.IsZero() {
				nothingNewSince = now
			}
			if len(batch) == 0 && len(seen) >= held0 || now.Sub(nothingNewSince) >= o.hold() {
				return max(held0-len(seen), 0), nil
			}
		} else {
			nothingNewSince = time.Time{}
		}
		if len(batch) == 0 {
			// Long polls already wait; a zero wait must not spin.
			if err := o.sleep(ctx, scanRetry); err != nil {
				return 0, err
			}
			continue
		}
		for _, m := range batch {
			id := aws.ToString(m.MessageId)
			if i, ok := seen[id]; ok {
				if i >= 0 {
					held[i] = m // seen before and held again: keep the newest receipt handle
				}
				continue
			}
			removed, err := fn(m)
			if removed {
				seen[id] = -1
			} else {
				seen[id] = len(held)
				held = append(held, m)
			}
			if err != nil {
				return 0, err
			}
		}
	}
}

// scanRetry is the pause between receives of a scan waiting for messages
// another reader holds.
const scanRetry = time.Second

func idSet(ids []string) map[string]bool {
	s := map[string]bool{}
	for _, id := range ids {
		s[id] = true
	}
	return s
}

func (o *Operator) report(res *RedriveResult, opts RedriveOptions, it RedriveItem) {
	res.Items = append(res.Items, it)
	if opts.OnItem != nil {
		opts.OnItem(it)
	}
}

// redriveEach moves messages one by one: reset, send, delete.
func (o *Operator) redriveEach(ctx context.Context, q DLQ, opts RedriveOptions, res RedriveResult) (RedriveResult, error) {
	return o.redriveParked(ctx, q, opts, res, parkedRedrive{
		ids: "notification",
		keys: func(m sqstypes.Message) []string {
			// What decodes of a malformed body still selects it.
			w, _ := domain.DecodeWorkMessage(aws.ToString(m.Body), q.Channel)
			return []string{w.NotificationID}
		},
		plan: func(ctx context.Context, m sqstypes.Message) (RedriveItem, func(*RedriveItem) bool, error) {
			p, err := o.load(ctx, q, m)
			if err != nil {
				return RedriveItem{}, nil, err
			}
			return plan(p), func(it *RedriveItem) bool { return o.move(ctx, q, p, it) }, nil
		},
	})
}

// move carries out a requeue or move for one message and reports whether
// the message left the DLQ.
func (o *Operator) move(ctx context.Context, q DLQ, p parked, it *RedriveItem) bool {
	d := p.delivery
	url, err := o.Target.workQueueFor(d.Channel, d.Priority)
	if err != nil {
		it.Error = err.Error()
		return false
	}
	if it.Action == ActionRequeue {
		if _, err := o.Store.Transition(ctx, d.NotificationID, d.Channel, domain.Change{To: domain.StatusQueued, From: []domain.Status{d.Status}}); err != nil {
			it.Error = "reset to queued: " + err.Error()
			return false
		}
	}
	body, _ := json.Marshal(p.work)
	if _, err := o.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(string(body))}); err != nil {
		it.Error = "send to " + domain.QueueName(d.Channel, d.Priority) + ": " + err.Error()
		if it.Action == ActionRequeue {
			// Undo the reset: the message is still parked, and so is the delivery.
			if _, uerr := o.Store.Transition(context.WithoutCancel(ctx), d.NotificationID, d.Channel, domain.Change{
				To: domain.StatusFailed, From: []domain.Status{domain.StatusQueued}, Reason: domain.ReasonExhausted, LastError: d.LastError,
			}); uerr != nil {
				it.Error += "; and the delivery stays queued without a message (" + uerr.Error() + "): redrive it again"
			}
		}
		return false
	}
	it.Done = true
	if _, err := o.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.URL), ReceiptHandle: p.msg.ReceiptHandle}); err != nil {
		it.Note += "; the DLQ copy could not be deleted (" + err.Error() + "): a later redrive moves it and the worker discards it as a duplicate"
		return false
	}
	return true
}

// isUnsupported recognises an endpoint that does not implement an action
// (an SQS emulator without message move tasks).
func isUnsupported(err error) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false
	}
	code := ae.ErrorCode()
	return strings.Contains(code, "UnsupportedOperation") || strings.Contains(code, "InvalidAction") ||
		strings.Contains(code, "UnknownOperation") || strings.Contains(code, "NotImplemented")
}

// moveTasksSupported asks for the DLQ's move tasks: an endpoint without them
// answers with an unknown-action error. A running task is an error: SQS
// allows one per queue.
func (o *Operator) moveTasksSupported(ctx context.Context, arn string) (bool, error) {
	out, err := o.SQS.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(arn), MaxResults: aws.Int32(1)})
	if isUnsupported(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("list message move tasks: %w", err)
	}
	for _, t := range out.Results {
		if aws.ToString(t.Status) == "RUNNING" {
			return false, fmt.Errorf("a message move task is already running on this DLQ (%d of %d moved); wait for it or cancel it",
				t.ApproximateNumberOfMessagesMoved, aws.ToInt64(t.ApproximateNumberOfMessagesToMove))
		}
	}
	return true, nil
}

// moveTaskPoll is how often a running move task is polled.
const moveTaskPoll = 2 * time.Second

// redriveWithMoveTask resets every delivery first (a moved message whose
// delivery is still failed would be discarded by the worker), then lets SQS
// move all messages back to their source queues.
func (o *Operator) redriveWithMoveTask(ctx context.Context, q DLQ, arn string, opts RedriveOptions, res RedriveResult) (RedriveResult, error) {
	var err error
	res.Unseen, err = o.scan(ctx, q, 0, func(m sqstypes.Message) (bool, error) {
		p, err := o.load(ctx, q, m)
		if err != nil {
			return false, err
		}
		it := plan(p)
		if it.Action == ActionLeave {
			it.Action, it.Note = ActionMove, p.problem+": moved by SQS with the rest; it comes back to the DLQ"
		}
		if it.Action == ActionRequeue {
			d := p.delivery
			if _, err := o.Store.Transition(ctx, d.NotificationID, d.Channel, domain.Change{To: domain.StatusQueued, From: []domain.Status{d.Status}}); err != nil {
				it.Error = "reset to queued: " + err.Error()
				res.Items = append(res.Items, it)
				return false, fmt.Errorf("notification %s: %s; no message was moved (deliveries reset so far are queued and are sent by the next redrive)", it.NotificationID, it.Error)
			}
		}
		res.Items = append(res.Items, it)
		return false, nil
	})
	if err != nil {
		return res, err
	}
	in := &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arn)}
	if opts.Rate > 0 {
		in.MaxNumberOfMessagesPerSecond = aws.Int32(int32(min(max(opts.Rate, 1), 500)))
	}
	started, err := o.SQS.StartMessageMoveTask(ctx, in)
	if err != nil {
		return res, fmt.Errorf("start message move task (deliveries were reset to queued; run the redrive again to move their messages): %w", err)
	}
	task := &MoveTask{Handle: aws.ToString(started.TaskHandle), Status: "RUNNING"}
	res.Task = task
	for misses := 0; task.Status == "RUNNING"; {
		if err := o.sleep(ctx, moveTaskPoll); err != nil {
			return res, err
		}
		out, err := o.SQS.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(arn), MaxResults: aws.Int32(10)})
		if err != nil {
			return res, fmt.Errorf("list message move tasks: %w", err)
		}
		listed := false
		for _, t := range out.Results {
			if aws.ToString(t.TaskHandle) == task.Handle {
				listed = true
				task.Status, task.Moved = aws.ToString(t.Status), t.ApproximateNumberOfMessagesMoved
				task.ToMove, task.Failure = aws.ToInt64(t.ApproximateNumberOfMessagesToMove), aws.ToString(t.FailureReason)
			}
		}
		if !listed {
			if misses++; misses >= 5 {
				return res, fmt.Errorf("message move task %s is not listed by ListMessageMoveTasks", task.Handle)
			}
			continue
		}
		if opts.OnTask != nil {
			opts.OnTask(*task)
		}
	}
	if task.Status != "COMPLETED" {
		return res, fmt.Errorf("message move task ended %s: %s", task.Status, task.Failure)
	}
	for i := range res.Items {
		res.Items[i].Done = true
		if opts.OnItem != nil {
			opts.OnItem(res.Items[i])
		}
	}
	return res, nil
}
