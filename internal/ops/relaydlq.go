package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
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

// ErrRecordsGone: the stream no longer holds the batch's records (DynamoDB
// keeps them 24 hours).
var ErrRecordsGone = errors.New("stream records no longer retained (24 h)")

// maxStreamPages bounds the pages read to resolve one batch.
const maxStreamPages = 50

// batchNotificationIDs reads the batch's records from the stream and returns
// the ids of the notifications inserted in it.
func (o *Operator) batchNotificationIDs(ctx context.Context, b StreamBatch) ([]string, error) {
	end, hasEnd := new(big.Int).SetString(b.EndSequenceNumber, 10)
	it, err := o.Streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
		StreamArn: aws.String(b.StreamArn), ShardId: aws.String(b.ShardID),
		ShardIteratorType: streamtypes.ShardIteratorTypeAtSequenceNumber, SequenceNumber: aws.String(b.StartSequenceNumber),
	})
	if err != nil {
		return nil, streamError(err)
	}
	var ids []string
	seen := map[string]bool{}
	iter, empty := it.ShardIterator, 0
	for page := 0; iter != nil && page < maxStreamPages && empty < 3; page++ {
		out, err := o.Streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(1000)})
		if err != nil {
			return nil, streamError(err)
		}
		if len(out.Records) == 0 {
			empty++ // an open shard at its tip answers empty pages
		}
		for _, r := range out.Records {
			if r.Dynamodb == nil {
				continue
			}
			if seq, ok := new(big.Int).SetString(aws.ToString(r.Dynamodb.SequenceNumber), 10); ok && hasEnd && seq.Cmp(end) > 0 {
				return ids, nil
			}
			if r.EventName != streamtypes.OperationTypeInsert {
				continue
			}
			if id, ok := dynamo.NotificationIDFromKeys(streamString(r.Dynamodb.Keys["pk"]), streamString(r.Dynamodb.Keys["sk"])); ok && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		iter = out.NextShardIterator
	}
	return ids, nil
}

func streamString(v streamtypes.AttributeValue) string {
	if s, ok := v.(*streamtypes.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

func streamError(err error) error {
	var trimmed *streamtypes.TrimmedDataAccessException
	var expired *streamtypes.ExpiredIteratorException
	var gone *streamtypes.ResourceNotFoundException
	if errors.As(err, &trimmed) || errors.As(err, &expired) || errors.As(err, &gone) {
		return fmt.Errorf("%w: %v", ErrRecordsGone, err)
	}
	return fmt.Errorf("read stream: %w", err)
}

// describeRelayMessage fills a relay DLQ message's batch and notifications.
func (o *Operator) describeRelayMessage(ctx context.Context, m sqstypes.Message, p *Parked) {
	rec, err := parseOnFailure(aws.ToString(m.Body))
	if err != nil {
		p.Problem = err.Error()
		return
	}
	p.Batch, p.Condition = rec.Batch, rec.RequestContext.Condition
	ids, err := o.batchNotificationIDs(ctx, *rec.Batch)
	if err != nil {
		p.Problem = err.Error()
		return
	}
	p.NotificationIDs = ids
}

// redriveRelay re-runs the relay's planning for the notifications of each
// relay DLQ record and deletes the record once all of them are planned. With
// IDs, only those notifications are re-planned, found in the DLQ or not
// (their records may have left the stream): the relay plans each
// notification at most once, so naming one twice is harmless.
func (o *Operator) redriveRelay(ctx context.Context, q DLQ, opts RedriveOptions, res RedriveResult) (RedriveResult, error) {
	want := idSet(opts.IDs)
	rp := &relayReplanner{o: o, lim: newLimiter(opts.Rate), planned: map[string]bool{}}
	err := o.scan(ctx, q, opts.Rate, func(m sqstypes.Message) (bool, error) {
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
		ids, err = o.batchNotificationIDs(ctx, *rec.Batch)
	}
	if err != nil {
		if len(want) > 0 {
			return false
		}
		it.Action, it.Note = ActionLeave, err.Error()+": re-plan its notifications with --id, then purge"
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
// record held: their records may have left the stream, the table still has
// them.
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
