package dynamo

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/recovery"
)

// The due-time index (gsi3) is keyed DUE#<bucket>#<shard>: one partition per
// hour of due time and shard. Shards bound the write rate of one partition
// when a whole population is deferred to the same instant (quiet hours ending
// at 08:00 in one zone, a scheduled campaign): at 20,000 deferrals/s, 32
// shards take 625 index writes/s each, under DynamoDB's 1,000 per partition.
// The scheduler releases every shard of a bucket in parallel.
//
// DueShards may only grow: a smaller value would hide the higher shards'
// entries from the scheduler (docs/decisions.md).
const (
	DueShards      = 32
	DueBucketWidth = time.Hour
	duePKPrefix    = "DUE#"
	dueBucketTime  = "2006010215"
)

// DuePartitionOf is the partition a delivery due at due lands in.
func DuePartitionOf(due time.Time, notificationID string, c domain.Channel) recovery.DuePartition {
	h := fnv.New32a()
	_, _ = h.Write([]byte(notificationID))
	_, _ = h.Write([]byte{'#'})
	_, _ = h.Write([]byte(c))
	return recovery.DuePartition{Bucket: due.UTC().Truncate(DueBucketWidth), Shard: int(h.Sum32() % DueShards)}
}

// DuePartitionKey is the index partition key of p.
func DuePartitionKey(p recovery.DuePartition) string {
	return duePKPrefix + p.Bucket.UTC().Format(dueBucketTime) + "#" + strconv.Itoa(p.Shard)
}

// DuePartitions lists every partition of the buckets from the one holding
// from to the one holding to, oldest bucket first.
func (s *Scheduling) DuePartitions(from, to time.Time) []recovery.DuePartition {
	var out []recovery.DuePartition
	for b := from.UTC().Truncate(DueBucketWidth); !b.After(to); b = b.Add(DueBucketWidth) {
		for shard := range DueShards {
			out = append(out, recovery.DuePartition{Bucket: b, Shard: shard})
		}
	}
	return out
}

// HasDue reports whether partition p holds an entry due at or before now:
// one Query of at most one index item (0.5 read units).
func (s *Scheduling) HasDue(ctx context.Context, p recovery.DuePartition, now time.Time) (bool, error) {
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName:              aws.String(s.table),
		IndexName:              aws.String(IndexDue),
		KeyConditionExpression: aws.String("gsi3pk = :pk AND gsi3sk <= :now"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(DuePartitionKey(p)), ":now": str(formatTime(now) + "#~"),
		},
		ProjectionExpression: aws.String("pk"),
		Limit:                aws.Int32(1),
	})
	if err != nil {
		return false, fmt.Errorf("probe due partition %s: %w", DuePartitionKey(p), err)
	}
	return len(out.Items) > 0, nil
}

// ListDue returns up to limit entries of partition p due at or before now,
// oldest first: deferred deliveries and in-flight watches (recovery.Watch: id,
// priority and due time; the entries stay in the table). The
// index projects only what a release needs (notification, channel, user,
// priority, due time); a delivery's Status is left empty (the release's
// conditional transition decides).
func (s *Scheduling) ListDue(ctx context.Context, p recovery.DuePartition, now time.Time, limit int32) ([]domain.Delivery, []recovery.Watch, error) {
	return s.listDue(ctx, p, now, limit)
}

// ListWatchesUntil returns the watches of partition p due at or before until
// (in the future too: a watch that found a delivery stuck waits there), at
// most 1,000 entries of the partition: an operator's listing, not a release.
func (s *Scheduling) ListWatchesUntil(ctx context.Context, p recovery.DuePartition, until time.Time) ([]recovery.Watch, error) {
	_, ws, err := s.listDue(ctx, p, until, 1000)
	return ws, err
}

func (s *Scheduling) listDue(ctx context.Context, p recovery.DuePartition, now time.Time, limit int32) ([]domain.Delivery, []recovery.Watch, error) {
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName:              aws.String(s.table),
		IndexName:              aws.String(IndexDue),
		KeyConditionExpression: aws.String("gsi3pk = :pk AND gsi3sk <= :now"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(DuePartitionKey(p)), ":now": str(formatTime(now) + "#~"),
		},
		Limit: aws.Int32(limit),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("query due partition %s: %w", DuePartitionKey(p), err)
	}
	res := make([]domain.Delivery, 0, len(out.Items))
	var ws []recovery.Watch
	for _, av := range out.Items {
		if pk := stringAttr(av, "pk"); strings.HasPrefix(pk, watchPrefix) {
			ws = append(ws, recovery.Watch{ID: strings.TrimPrefix(pk, watchPrefix), Priority: domain.Priority(stringAttr(av, "priority")),
				DueAt: parseTime(strings.SplitN(stringAttr(av, "gsi3sk"), "#", 2)[0])})
			continue
		}
		d, err := decodeDelivery(av)
		if err != nil {
			return nil, nil, err
		}
		res = append(res, *d)
	}
	return res, ws, nil
}

// The scheduler's watermark: every due-index bucket before it is known empty,
// so a run probes from there (or from an hour ago, whichever is earlier).
const (
	schedulerPK   = "SCHEDULER"
	watermarkSK   = "RELEASE_WATERMARK"
	watermarkAttr = "watermark"
)

// ReleaseWatermark returns the stored watermark (zero when none).
func (s *Scheduling) ReleaseWatermark(ctx context.Context) (time.Time, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: key(schedulerPK, watermarkSK), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("get release watermark: %w", err)
	}
	return parseTime(stringAttr(out.Item, watermarkAttr)), nil
}

// AdvanceReleaseWatermark moves the watermark forward to t; it never moves it
// back (a concurrent run may have advanced it further).
func (s *Scheduling) AdvanceReleaseWatermark(ctx context.Context, t time.Time) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(schedulerPK, watermarkSK),
		UpdateExpression:          aws.String("SET #w = :w"),
		ConditionExpression:       aws.String("attribute_not_exists(#w) OR #w < :w"),
		ExpressionAttributeNames:  map[string]string{"#w": watermarkAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":w": str(formatTime(t))},
	})
	if _, ok := asConditionFailed(err); ok {
		return nil
	}
	if err != nil {
		return fmt.Errorf("advance release watermark: %w", err)
	}
	return nil
}
