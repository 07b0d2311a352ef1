package devstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/heraldhq/herald/internal/devstack/eventpattern"
	"github.com/heraldhq/herald/internal/ops"
)

// streamReadLimit is the most records one GetRecords call returns.
const streamReadLimit = 1000

// StreamHandler is the relay's handler.
type StreamHandler func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error)

// streamMapping emulates a DynamoDB Streams event source mapping: it reads
// every shard in order, filters records with the mapping's patterns, invokes
// the function with up to BatchSize records, and handles the outcome as Lambda
// does: partial batch responses checkpoint at the lowest failed
// SequenceNumber and retry from there; a function error bisects the batch
// (BisectBatchOnFunctionError); after MaximumRetryAttempts, or for records
// older than MaximumRecordAgeInSeconds, the batch's description goes to the
// on-failure destination (an SQS queue) and the mapping moves on.
type streamMapping struct {
	name         string
	streamARN    string
	batchSize    int32
	startLatest  bool
	bisect       bool
	maxRetries   int // -1: infinite
	maxRecordAge time.Duration
	reportItems  bool
	filters      []*eventpattern.Pattern
	onFailureURL string
	timeout      time.Duration
	handler      StreamHandler
	streams      *dynamodbstreams.Client
	sqs          *sqs.Client
	log          *slog.Logger
	pollInterval time.Duration
	// checkpoints keep the mapping's position across restarts (nil: none).
	checkpoints  *streamCheckpoints
	invoke       func(ctx context.Context, timeout time.Duration, fn func(context.Context) error) error
	mu           sync.Mutex
	doneShards   map[string]bool
	activeShards map[string]bool
	invocations  int
	deadLettered int
}

func (m *streamMapping) run(ctx context.Context, wg *sync.WaitGroup) {
	m.doneShards = map[string]bool{}
	m.activeShards = map[string]bool{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		var shardWG sync.WaitGroup
		for ctx.Err() == nil {
			if err := m.discover(ctx, &shardWG); err != nil && ctx.Err() == nil {
				m.log.Warn("describe stream failed", "mapping", m.name, "error", err)
			}
			sleep(ctx, m.pollInterval*5)
		}
		shardWG.Wait()
	}()
}

// discover starts a reader for each shard whose parent is finished.
func (m *streamMapping) discover(ctx context.Context, wg *sync.WaitGroup) error {
	var start *string
	for {
		out, err := m.streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(m.streamARN), ExclusiveStartShardId: start})
		if err != nil {
			return err
		}
		for _, sh := range out.StreamDescription.Shards {
			id := aws.ToString(sh.ShardId)
			m.mu.Lock()
			parentDone := sh.ParentShardId == nil || m.doneShards[aws.ToString(sh.ParentShardId)] || !slices.ContainsFunc(out.StreamDescription.Shards, func(p streamtypes.Shard) bool { return aws.ToString(p.ShardId) == aws.ToString(sh.ParentShardId) })
			startIt := parentDone && !m.doneShards[id] && !m.activeShards[id]
			if startIt {
				m.activeShards[id] = true
			}
			m.mu.Unlock()
			if startIt {
				wg.Add(1)
				go func() {
					defer wg.Done()
					m.readShard(ctx, id)
				}()
			}
		}
		if out.StreamDescription.LastEvaluatedShardId == nil {
			return nil
		}
		start = out.StreamDescription.LastEvaluatedShardId
	}
}

func (m *streamMapping) readShard(ctx context.Context, shardID string) {
	defer func() {
		m.mu.Lock()
		delete(m.activeShards, shardID)
		m.mu.Unlock()
	}()
	after, closed := m.checkpoints.position(shardID)
	if closed {
		m.mu.Lock()
		m.doneShards[shardID] = true
		m.mu.Unlock()
		return
	}
	it, err := m.shardIterator(ctx, shardID, after)
	if err != nil {
		if ctx.Err() == nil {
			m.log.Warn("get shard iterator failed", "mapping", m.name, "shard", shardID, "error", err)
		}
		return
	}
	iter := it.ShardIterator
	for iter != nil && ctx.Err() == nil {
		// Read as Lambda's poller does, up to the API's 1,000 records, and
		// batch what passes the filter: BatchSize bounds an invocation, not a
		// read, so a mapping that filters most records out keeps up.
		out, err := m.streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(streamReadLimit)})
		if err != nil {
			if ctx.Err() == nil {
				m.log.Warn("get records failed", "mapping", m.name, "shard", shardID, "error", err)
				sleep(ctx, time.Second)
			}
			continue
		}
		iter = out.NextShardIterator
		if len(out.Records) == 0 {
			sleep(ctx, m.pollInterval)
			continue
		}
		var recs []events.DynamoDBEventRecord
		for _, r := range out.Records {
			ev, err := toStreamEventRecord(r, m.streamARN)
			if err != nil {
				m.log.Error("convert stream record", "mapping", m.name, "error", err)
				continue
			}
			if m.matches(ev) {
				recs = append(recs, ev)
			}
		}
		for len(recs) > 0 && ctx.Err() == nil {
			n := min(len(recs), max(int(m.batchSize), 1))
			m.deliver(ctx, shardID, recs[:n])
			recs = recs[n:]
		}
		if ctx.Err() == nil {
			if err := m.checkpoints.advance(shardID, aws.ToString(out.Records[len(out.Records)-1].Dynamodb.SequenceNumber)); err != nil {
				m.log.Warn("save stream checkpoint", "mapping", m.name, "error", err)
			}
		}
	}
	if ctx.Err() == nil {
		m.mu.Lock()
		m.doneShards[shardID] = true
		m.mu.Unlock()
		if err := m.checkpoints.close(shardID); err != nil {
			m.log.Warn("save stream checkpoint", "mapping", m.name, "error", err)
		}
	}
}

// shardIterator starts reading shardID after the checkpoint's sequence
// number when there is one, else at the mapping's starting position. A
// checkpoint the stream no longer holds (trimmed) falls back to the horizon.
func (m *streamMapping) shardIterator(ctx context.Context, shardID, after string) (*dynamodbstreams.GetShardIteratorOutput, error) {
	if after != "" {
		it, err := m.streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
			StreamArn: aws.String(m.streamARN), ShardId: aws.String(shardID),
			ShardIteratorType: streamtypes.ShardIteratorTypeAfterSequenceNumber, SequenceNumber: aws.String(after),
		})
		if err == nil {
			return it, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		m.log.Warn("stream checkpoint not usable; reading the shard from its horizon", "mapping", m.name, "shard", shardID, "error", err)
		return m.streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
			StreamArn: aws.String(m.streamARN), ShardId: aws.String(shardID), ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon,
		})
	}
	itType := streamtypes.ShardIteratorTypeTrimHorizon
	if m.startLatest {
		itType = streamtypes.ShardIteratorTypeLatest
	}
	return m.streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
		StreamArn: aws.String(m.streamARN), ShardId: aws.String(shardID), ShardIteratorType: itType,
	})
}

// deliver invokes the function until the batch succeeds, retries run out, or
// the context ends.
func (m *streamMapping) deliver(ctx context.Context, shardID string, recs []events.DynamoDBEventRecord) {
	if m.maxRecordAge > 0 {
		var fresh []events.DynamoDBEventRecord
		for _, r := range recs {
			if time.Since(r.Change.ApproximateCreationDateTime.Time) > m.maxRecordAge {
				m.deadLetter(ctx, shardID, []events.DynamoDBEventRecord{r}, "RecordAgeExceeded", 0)
				continue
			}
			fresh = append(fresh, r)
		}
		recs = fresh
	}
	m.deliverBatch(ctx, shardID, recs)
}

func (m *streamMapping) deliverBatch(ctx context.Context, shardID string, recs []events.DynamoDBEventRecord) {
	for attempt := 0; len(recs) > 0 && ctx.Err() == nil; attempt++ {
		var resp events.DynamoDBEventResponse
		err := m.invoke(ctx, m.timeout, func(ctx context.Context) error {
			var herr error
			resp, herr = m.handler(ctx, events.DynamoDBEvent{Records: recs})
			return herr
		})
		m.mu.Lock()
		m.invocations++
		m.mu.Unlock()
		if err == nil && m.reportItems && len(resp.BatchItemFailures) > 0 {
			from, ok := lowestFailed(recs, resp.BatchItemFailures)
			if !ok {
				err = errors.New("batch item failure names an unknown sequence number")
			} else {
				if attempt >= m.maxRetries && m.maxRetries >= 0 {
					m.deadLetter(ctx, shardID, recs[from:], "RetryAttemptsExhausted", attempt)
					return
				}
				recs = recs[from:] // checkpoint: everything before the lowest failure is done
				sleep(ctx, m.retryDelay(attempt))
				continue
			}
		}
		if err == nil {
			return
		}
		m.log.Warn("relay function error", "mapping", m.name, "records", len(recs), "attempt", attempt, "error", err)
		if m.bisect && len(recs) > 1 {
			half := len(recs) / 2
			m.deliverBatch(ctx, shardID, recs[:half])
			m.deliverBatch(ctx, shardID, recs[half:])
			return
		}
		if attempt >= m.maxRetries && m.maxRetries >= 0 {
			m.deadLetter(ctx, shardID, recs, "RetryAttemptsExhausted", attempt)
			return
		}
		sleep(ctx, m.retryDelay(attempt))
	}
}

func (m *streamMapping) retryDelay(attempt int) time.Duration {
	return min(time.Duration(attempt+1)*m.pollInterval, 2*time.Second)
}

func lowestFailed(recs []events.DynamoDBEventRecord, failures []events.DynamoDBBatchItemFailure) (int, bool) {
	lowest := -1
	for _, f := range failures {
		found := false
		for i, r := range recs {
			if r.Change.SequenceNumber == f.ItemIdentifier {
				found = true
				if lowest < 0 || i < lowest {
					lowest = i
				}
			}
		}
		if !found {
			return 0, false
		}
	}
	return lowest, lowest >= 0
}

// deadLetter sends Lambda's on-failure record for a stream batch: where the
// records are (shard, sequence numbers), not the records themselves.
func (m *streamMapping) deadLetter(ctx context.Context, shardID string, recs []events.DynamoDBEventRecord, condition string, retries int) {
	m.mu.Lock()
	m.deadLettered += len(recs)
	m.mu.Unlock()
	if m.onFailureURL == "" {
		m.log.Error("stream batch discarded (no on-failure destination)", "mapping", m.name, "records", len(recs))
		return
	}
	body, _ := json.Marshal(map[string]any{
		"requestContext":  map[string]any{"requestId": fmt.Sprintf("local-%d", time.Now().UnixNano()), "functionArn": m.name, "condition": condition, "approximateInvokeCount": retries + 1},
		"responseContext": map[string]any{"statusCode": 200, "executedVersion": "$LATEST"},
		"version":         "1.0",
		"timestamp":       time.Now().UTC().Format(time.RFC3339Nano),
		"DDBStreamBatchInfo": ops.StreamBatch{
			ShardID: shardID, StartSequenceNumber: recs[0].Change.SequenceNumber,
			EndSequenceNumber:               recs[len(recs)-1].Change.SequenceNumber,
			ApproximateArrivalOfFirstRecord: recs[0].Change.ApproximateCreationDateTime.UTC().Format(time.RFC3339),
			ApproximateArrivalOfLastRecord:  recs[len(recs)-1].Change.ApproximateCreationDateTime.UTC().Format(time.RFC3339),
			BatchSize:                       len(recs), StreamArn: m.streamARN,
		},
	})
	if _, err := m.sqs.SendMessage(context.WithoutCancel(ctx), &sqs.SendMessageInput{QueueUrl: aws.String(m.onFailureURL), MessageBody: aws.String(string(body))}); err != nil {
		m.log.Error("on-failure destination send failed", "mapping", m.name, "error", err)
	}
}

// matches applies the mapping's filter patterns (any pattern may match).
func (m *streamMapping) matches(r events.DynamoDBEventRecord) bool {
	if len(m.filters) == 0 {
		return true
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return false
	}
	for _, f := range m.filters {
		if ok, _ := f.Match(raw); ok {
			return true
		}
	}
	return false
}
