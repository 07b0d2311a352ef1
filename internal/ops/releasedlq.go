package ops

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/recovery"
)

// describeReleaseMessage fills a release DLQ message's partition and whether
// it still holds deliveries due now. A body that names no partition gets a
// problem, not an error; errors are the table's.
func (o *Operator) describeReleaseMessage(ctx context.Context, m sqstypes.Message, out *Parked) error {
	p, err := recovery.DecodeReleaseMessage(aws.ToString(m.Body))
	if err != nil {
		out.Problem = "malformed body: not a release message"
		return nil
	}
	due, err := o.Store.HasDue(ctx, p, o.now())
	if err != nil {
		return err
	}
	out.Partition, out.StillDue = &p, &due
	return nil
}

// planRelease decides what to do with one release DLQ message: a partition
// goes back to the release queue (releasing is idempotent: one with nothing
// due left releases nothing), a malformed body stays.
func (o *Operator) planRelease(ctx context.Context, m sqstypes.Message) (RedriveItem, error) {
	it := RedriveItem{MessageID: aws.ToString(m.MessageId)}
	p, err := recovery.DecodeReleaseMessage(aws.ToString(m.Body))
	if err != nil {
		it.Action, it.Note = ActionLeave, "malformed body: not a release message (purge it once read)"
		return it, nil
	}
	it.Partition = dynamo.DuePartitionKey(p)
	due, err := o.Store.HasDue(ctx, p, o.now())
	if err != nil {
		return it, err
	}
	it.Action = ActionRelease
	if due {
		it.Note = "deliveries due: released again"
	} else {
		it.Note = "nothing due any more (a later tick released it): the release finds nothing"
	}
	return it, nil
}

// redriveRelease sends release DLQ messages back to the release queue, one
// by one (a partition per message: a handful, not a backlog), selected by
// message id or all.
func (o *Operator) redriveRelease(ctx context.Context, q DLQ, opts RedriveOptions, res RedriveResult) (RedriveResult, error) {
	if o.Target.Release == "" {
		return res, fmt.Errorf("no release queue in the deployment description")
	}
	return o.redriveParked(ctx, q, opts, res, parkedRedrive{
		ids:  "message",
		keys: func(m sqstypes.Message) []string { return []string{aws.ToString(m.MessageId)} },
		plan: func(ctx context.Context, m sqstypes.Message) (RedriveItem, func(*RedriveItem) bool, error) {
			it, err := o.planRelease(ctx, m)
			return it, o.resendTo(ctx, q, m, o.Target.Release), err
		},
	})
}

// parkedRedrive is how one DLQ's messages go back: which ids select a
// message (keys: e.g. its message id, its notification's or its campaign's
// id) and what to do with a selected one (plan: the item to report, and how
// to carry it out, reporting whether the message left the DLQ).
type parkedRedrive struct {
	ids  string // what --id names, for the error on ids not found
	keys func(sqstypes.Message) []string
	plan func(context.Context, sqstypes.Message) (RedriveItem, func(*RedriveItem) bool, error)
}

// resendTo carries a planned message out by sending its body, unchanged, to
// url.
func (o *Operator) resendTo(ctx context.Context, q DLQ, m sqstypes.Message, url string) func(*RedriveItem) bool {
	return func(it *RedriveItem) bool { return o.resend(ctx, q, m, url, it) }
}

// redriveParked carries out the plan of each selected message of q (the
// whole DLQ when opts.IDs is empty) one by one at opts.Rate, leaving what the
// plan leaves, and names every id that selected nothing.
func (o *Operator) redriveParked(ctx context.Context, q DLQ, opts RedriveOptions, res RedriveResult, r parkedRedrive) (RedriveResult, error) {
	want := idSet(opts.IDs)
	found := map[string]bool{}
	lim := newLimiter(opts.Rate)
	var err error
	res.Unseen, err = o.scan(ctx, q, opts.Rate, func(m sqstypes.Message) (bool, error) {
		if len(want) > 0 {
			selected := false
			for _, k := range r.keys(m) {
				if want[k] {
					found[k], selected = true, true
				}
			}
			if !selected {
				return false, nil
			}
		}
		it, carry, err := r.plan(ctx, m)
		if err != nil {
			return false, err
		}
		if opts.DryRun || it.Action == ActionLeave {
			o.report(&res, opts, it)
			return false, nil
		}
		if err := o.wait(ctx, lim); err != nil {
			return false, err
		}
		removed := carry(&it)
		o.report(&res, opts, it)
		return removed, nil
	})
	if err != nil {
		return res, err
	}
	var missing []string
	for _, id := range opts.IDs {
		if !found[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return res, fmt.Errorf("%s %s %w %s", r.ids, strings.Join(missing, ", "), ErrNotInDLQ, q.Name)
	}
	return res, nil
}

// resend sends a parked message's body to url and deletes it from the DLQ;
// it reports whether the message left the DLQ.
func (o *Operator) resend(ctx context.Context, q DLQ, m sqstypes.Message, url string, it *RedriveItem) bool {
	if _, err := o.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: m.Body}); err != nil {
		it.Error = "send to " + queueNameOf(url) + ": " + err.Error()
		return false
	}
	it.Done = true
	if _, err := o.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.URL), ReceiptHandle: m.ReceiptHandle}); err != nil {
		it.Note += "; the DLQ copy could not be deleted (" + err.Error() + "): a later redrive sends it again, which is harmless (releases and campaign steps are idempotent)"
		return false
	}
	return true
}
