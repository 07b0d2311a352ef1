package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/recovery"
)

// An in-flight watch (recovery.Watch) is one item, pk W#<id>, in the due index
// (gsi3) under DUE#<bucket>#<shard> like a deferred delivery. The index
// projects its priority; the entries stay in the table.
const (
	watchPrefix = "W#"
	watchSK     = "WATCH"
)

// watchChannel is what a watch's due shard is hashed with beside its id.
const watchChannel domain.Channel = "watch"

type watchEntryItem struct {
	N string `dynamodbav:"n"`
	C string `dynamodbav:"c"`
}

type watchItem struct {
	PK       string           `dynamodbav:"pk"`
	SK       string           `dynamodbav:"sk"`
	Kind     string           `dynamodbav:"kind"`
	Priority string           `dynamodbav:"priority"`
	Entries  []watchEntryItem `dynamodbav:"entries"`
	ArmedAt  string           `dynamodbav:"armedAt"`
	DueAt    string           `dynamodbav:"dueAt"`
	Checks   int              `dynamodbav:"checks"`
	TTL      int64            `dynamodbav:"ttl"`
	GSI3PK   string           `dynamodbav:"gsi3pk"`
	GSI3SK   string           `dynamodbav:"gsi3sk"`
}

func (s *Table) toWatchItem(w recovery.Watch) watchItem {
	it := watchItem{PK: watchPrefix + w.ID, SK: watchSK, Kind: "watch", Priority: string(w.Priority),
		ArmedAt: formatTime(w.ArmedAt), DueAt: formatTime(w.DueAt), Checks: w.Checks, TTL: w.DueAt.Add(s.retention).Unix(),
		GSI3PK: DuePartitionKey(DuePartitionOf(w.DueAt, w.ID, watchChannel)), GSI3SK: dueSortKey(w.DueAt, w.ID, watchChannel)}
	for _, e := range w.Entries {
		it.Entries = append(it.Entries, watchEntryItem{N: e.NotificationID, C: string(e.Channel)})
	}
	return it
}

func decodeWatch(av map[string]types.AttributeValue) (*recovery.Watch, error) {
	var it watchItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return nil, fmt.Errorf("unmarshal watch: %w", err)
	}
	w := &recovery.Watch{ID: it.PK[min(len(it.PK), len(watchPrefix)):], Priority: domain.Priority(it.Priority),
		ArmedAt: parseTime(it.ArmedAt), DueAt: parseTime(it.DueAt), Checks: it.Checks}
	for _, e := range it.Entries {
		w.Entries = append(w.Entries, recovery.WatchEntry{NotificationID: e.N, Channel: domain.Channel(e.C)})
	}
	return w, nil
}

// ArmWatch writes a new watch (one PutItem; its due-index entry).
func (s *Scheduling) ArmWatch(ctx context.Context, w recovery.Watch) error {
	if len(w.Entries) == 0 {
		return nil
	}
	av, err := attributevalue.MarshalMap(s.toWatchItem(w))
	if err != nil {
		return fmt.Errorf("marshal watch: %w", err)
	}
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: av}); err != nil {
		return fmt.Errorf("arm watch %s: %w", w.ID, err)
	}
	return nil
}

// LoadWatch reads a watch (strongly consistent); nil when it has ended.
func (s *Scheduling) LoadWatch(ctx context.Context, id string) (*recovery.Watch, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: key(watchPrefix+id, watchSK), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("load watch %s: %w", id, err)
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return decodeWatch(out.Item)
}

// WatchedDeliveries reads the deliveries of keys (eventually consistent,
// 100 a call): a watch's check needs only whether each has moved on in the
// last StuckAfter. Keys with no item are absent from the map.
func (s *Scheduling) WatchedDeliveries(ctx context.Context, keys []domain.DeliveryKey) (map[domain.DeliveryKey]*domain.Delivery, error) {
	seen := map[domain.DeliveryKey]bool{}
	var ks []map[string]types.AttributeValue
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			ks = append(ks, key(NotificationPK(k.NotificationID), deliveryPrefix+string(k.Channel)))
		}
	}
	items, err := s.batchGet(ctx, "read watched deliveries", ks, types.KeysAndAttributes{})
	if err != nil {
		return nil, err
	}
	out := make(map[domain.DeliveryKey]*domain.Delivery, len(items))
	for _, av := range items {
		d, err := decodeDelivery(av)
		if err != nil {
			return nil, err
		}
		out[domain.DeliveryKey{NotificationID: d.NotificationID, Channel: d.Channel}] = d
	}
	return out, nil
}

// RearmWatch replaces a watch read at w.DueAt with its remaining entries,
// due at next after checks checks, unless another check moved it meanwhile.
func (s *Scheduling) RearmWatch(ctx context.Context, w recovery.Watch, remaining []recovery.WatchEntry, next time.Time, checks int) error {
	seen := w.DueAt
	w.Entries, w.DueAt, w.Checks = remaining, next, checks
	av, err := attributevalue.MarshalMap(s.toWatchItem(w))
	if err != nil {
		return fmt.Errorf("marshal watch: %w", err)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.table), Item: av,
		ConditionExpression:       aws.String("dueAt = :seen"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":seen": str(formatTime(seen))},
	})
	if isConditionFailed(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("rearm watch %s: %w", w.ID, err)
	}
	return nil
}

// EndWatch deletes a watch read at w.DueAt whose deliveries have all ended,
// unless another check moved it meanwhile.
func (s *Scheduling) EndWatch(ctx context.Context, w recovery.Watch) error {
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(watchPrefix+w.ID, watchSK),
		ConditionExpression:       aws.String("dueAt = :seen"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":seen": str(formatTime(w.DueAt))},
	})
	if isConditionFailed(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("end watch %s: %w", w.ID, err)
	}
	return nil
}
