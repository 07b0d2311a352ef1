package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
)

// StreamBatch is where a failed stream batch is: Lambda's on-failure record
// for a DynamoDB stream names the records, it does not carry them.
type StreamBatch struct {
	ShardID                         string `json:"shardId"`
	StartSequenceNumber             string `json:"startSequenceNumber"`
	EndSequenceNumber               string `json:"endSequenceNumber"`
	ApproximateArrivalOfFirstRecord string `json:"approximateArrivalOfFirstRecord,omitempty"`
	ApproximateArrivalOfLastRecord  string `json:"approximateArrivalOfLastRecord,omitempty"`
	BatchSize                       int    `json:"batchSize"`
	StreamArn                       string `json:"streamArn"`
}

// onFailureRecord is Lambda's invocation record for a stream batch sent to
// an on-failure destination.
type onFailureRecord struct {
	RequestContext struct {
		Condition              string `json:"condition"`
		ApproximateInvokeCount int    `json:"approximateInvokeCount"`
	} `json:"requestContext"`
	Timestamp string       `json:"timestamp"`
	Batch     *StreamBatch `json:"DDBStreamBatchInfo"`
}

func parseOnFailure(body string) (onFailureRecord, error) {
	var r onFailureRecord
	if err := json.Unmarshal([]byte(body), &r); err != nil || r.Batch == nil || r.Batch.StreamArn == "" || r.Batch.ShardID == "" || r.Batch.StartSequenceNumber == "" {
		return r, errors.New("not a Lambda on-failure record of a DynamoDB stream batch")
	}
	return r, nil
}

// ErrNoFailureNote: the relay left no failure note for the batch (writing
// it failed too, or the note outlived its 15 days).
var ErrNoFailureNote = errors.New("no relay failure note for this batch")

// batchNotes reads the relay's failure notes (recovery.RelayFailure) for the
// records of a failed batch from the table: the relay writes one for every
// record it reports for retry, so the stream, whose shards already have
// their two readers (the relay mappings), is never read here. It returns
// the notifications to re-plan and the item keys of the other failed records
// (events of deliveries and campaigns, which re-planning does not concern).
func (o *Operator) batchNotes(ctx context.Context, rec onFailureRecord) (ids, others []string, err error) {
	b := rec.Batch
	end := b.EndSequenceNumber
	if end == "" {
		end = b.StartSequenceNumber
	}
	from, to := arrivalWindow(rec)
	notes, err := o.Failures.RelayFailures(ctx, from, to, b.StartSequenceNumber, end)
	if err != nil {
		return nil, nil, fmt.Errorf("read relay failure notes: %w", err)
	}
	if len(notes) == 0 {
		return nil, nil, ErrNoFailureNote
	}
	seen := map[string]bool{}
	for _, n := range notes {
		id := n.NotificationID
		if id == "" {
			if nid, ok := dynamo.NotificationIDFromKeys(n.PK, n.SK); ok {
				id = nid // a notification whose image did not decode
			}
		}
		switch {
		case id != "" && !seen[id]:
			seen[id] = true
			ids = append(ids, id)
		case id == "":
			others = append(others, n.PK+"/"+n.SK)
		}
	}
	return ids, others, nil
}

// arrivalWindow is when the batch's records entered the stream: the
// on-failure record's approximate arrival times, else the two days (the
// stream keeps records 24 h; Lambda retries within that) before Lambda gave
// up.
func arrivalWindow(rec onFailureRecord) (from, to time.Time) {
	first, err1 := time.Parse(time.RFC3339Nano, rec.Batch.ApproximateArrivalOfFirstRecord)
	last, err2 := time.Parse(time.RFC3339Nano, rec.Batch.ApproximateArrivalOfLastRecord)
	if err1 == nil && err2 == nil {
		return first, last
	}
	at, err := time.Parse(time.RFC3339Nano, rec.Timestamp)
	if err != nil {
		at = time.Now()
	}
	return at.Add(-48 * time.Hour), at
}

// describeRelayMessage fills a relay DLQ message's batch and notifications.
func (o *Operator) describeRelayMessage(ctx context.Context, m sqstypes.Message, p *Parked) {
	rec, err := parseOnFailure(aws.ToString(m.Body))
	if err != nil {
		p.Problem = err.Error()
		return
	}
	p.Batch, p.Condition = rec.Batch, rec.RequestContext.Condition
	ids, others, err := o.batchNotes(ctx, rec)
	if err != nil {
		p.Problem = err.Error()
		return
	}
	p.NotificationIDs = ids
	if len(others) > 0 {
		p.Problem = "failed records that are not new notifications (their events were neither published nor parked): " + strings.Join(others, ", ")
	}
}

// redriveRelay re-runs the relay's planning for the notifications of each
// relay DLQ record and deletes the record once all of them are planned. With
// IDs, only those notifications are re-planned, found in the DLQ or not
// (their failure notes may be gone): the relay plans each
// notification at most once, so naming one twice is harmless.
func (o *Operator) redriveRelay(ctx context.Context, q DLQ, opts RedriveOptions, res RedriveResult) (RedriveResult, error) {
	want := idSet(opts.IDs)
	rp := &relayReplanner{o: o, lim: newLimiter(opts.Rate), planned: map[string]bool{}}
	var err error
	res.Unseen, err = o.scan(ctx, q, opts.Rate, func(m sqstypes.Message) (bool, error) {
		return o.redriveRelayRecord(ctx, q, m, opts, want, rp, &res), nil
	})
	if err != nil {
		return res, err
	}
	o.replanNamedOutsideDLQ(ctx, opts, rp, &res)
	return res, nil
}

// relayReplanner re-plans notifications for redriveRelay, each at most once,
// at the redrive's rate.
type relayReplanner struct {
	o       *Operator
	lim     *limiter
	planned map[string]bool
}

// replan plans each id once; a notification no longer stored has nothing
// left to plan, which is an error only when the operator named it.
func (r *relayReplanner) replan(ctx context.Context, ids []string, named bool) []string {
	var errs []string
	for _, id := range ids {
		if r.planned[id] {
			continue
		}
		if err := r.o.wait(ctx, r.lim); err != nil {
			return append(errs, err.Error())
		}
		err := r.o.Replanner.Replan(ctx, id)
		if err != nil && (named || !errors.Is(err, domain.ErrNotFound)) {
			errs = append(errs, id+": "+err.Error())
			continue
		}
		r.planned[id] = true
	}
	return errs
}

// redriveRelayRecord re-plans the notifications of one relay DLQ record (those
// in want, when the operator named some) and reports whether the record was
// deleted: only once every notification of its batch is planned.
func (o *Operator) redriveRelayRecord(ctx context.Context, q DLQ, m sqstypes.Message, opts RedriveOptions, want map[string]bool, rp *relayReplanner, res *RedriveResult) bool {
	it := RedriveItem{MessageID: aws.ToString(m.MessageId), Action: ActionReplan}
	rec, err := parseOnFailure(aws.ToString(m.Body))
	var ids []string
	if err == nil {
		ids, _, err = o.batchNotes(ctx, rec)
	}
	if err != nil {
		if len(want) > 0 {
			return false
		}
		it.Action, it.Note = ActionLeave, err.Error()+": re-plan its notifications with --id, then purge"
		if errors.Is(err, ErrNoFailureNote) {
			it.Note = err.Error() + ": the relay's log lines `relay record failed` with sequenceNumber " + rec.Batch.StartSequenceNumber + "…" +
				rec.Batch.EndSequenceNumber + " name its notifications; re-plan them with --id, then purge"
		}
		o.report(res, opts, it)
		return false
	}
	selected := ids
	if len(want) > 0 {
		selected = nil
		for _, id := range ids {
			if want[id] {
				selected = append(selected, id)
			}
		}
		if len(selected) == 0 {
			return false
		}
	}
	it.NotificationIDs = selected
	whole := len(selected) == len(ids)
	if !whole {
		it.Note = "other notifications of this batch are not re-planned: the record stays in the DLQ"
	}
	if len(ids) == 0 {
		it.Note = "the batch holds no notification inserts: nothing to plan"
	}
	if opts.DryRun {
		o.report(res, opts, it)
		return false
	}
	if errs := rp.replan(ctx, selected, false); len(errs) > 0 {
		it.Error = strings.Join(errs, "; ")
		o.report(res, opts, it)
		return false
	}
	it.Done = true
	if !whole {
		o.report(res, opts, it)
		return false
	}
	if _, err := o.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.URL), ReceiptHandle: m.ReceiptHandle}); err != nil {
		it.Note = "planned, but the record could not be deleted (" + err.Error() + "): purge it"
		o.report(res, opts, it)
		return false
	}
	o.report(res, opts, it)
	return true
}

// replanNamedOutsideDLQ plans the named notifications that no readable DLQ
// record held: their failure notes may be gone, the table still has them.
func (o *Operator) replanNamedOutsideDLQ(ctx context.Context, opts RedriveOptions, rp *relayReplanner, res *RedriveResult) {
	for _, id := range opts.IDs {
		if rp.planned[id] || inItems(res.Items, id) {
			continue
		}
		it := RedriveItem{NotificationID: id, Action: ActionReplan, Note: "not among the relay DLQ's readable records: planned from the table"}
		if !opts.DryRun {
			if errs := rp.replan(ctx, []string{id}, true); len(errs) > 0 {
				it.Error = strings.Join(errs, "; ")
			} else {
				it.Done = true
			}
		}
		o.report(res, opts, it)
	}
}

func inItems(items []RedriveItem, id string) bool {
	return slices.ContainsFunc(items, func(it RedriveItem) bool { return slices.Contains(it.NotificationIDs, id) })
}
