package dynamo

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
)

// Topic subscriptions, two items each, written together:
//
//   - the subscriber item T#<topic>#<shard>/<user> (shard: the user id's
//     FNV-1a hash mod domain.TopicShards), what a topic send reads: one
//     query per shard, in parallel, so a topic of 10 M subscribers is 16
//     partitions of 625 k items, none hot;
//   - the user's item U#<user>/TOPIC#<topic>, so a user's topics are one
//     query of their partition (no index: an index would copy every
//     subscriber item, one more write per subscription, and could not be
//     read strongly consistent).
//
// Both carry muted; a mute writes both in one transaction.
const (
	topicPrefix     = "T#"
	userTopicPrefix = "TOPIC#"
)

// TopicShardPK is the partition of shard of topic's subscribers.
func TopicShardPK(topic string, shard int) string {
	return topicPrefix + topic + "#" + strconv.Itoa(shard)
}

type subscriptionItem struct {
	PK           string `dynamodbav:"pk"`
	SK           string `dynamodbav:"sk"`
	Kind         string `dynamodbav:"kind"`
	Topic        string `dynamodbav:"topic"`
	UserID       string `dynamodbav:"userId"`
	Muted        bool   `dynamodbav:"muted"`
	SubscribedAt string `dynamodbav:"subscribedAt"`
}

func (it *subscriptionItem) toDomain() domain.Subscription {
	return domain.Subscription{Topic: it.Topic, UserID: it.UserID, Muted: it.Muted, SubscribedAt: parseTime(it.SubscribedAt)}
}

// subscriptionItems are the two items of (topic, user): subscriber, user's.
func subscriptionItems(topic, userID, at string) (subscriber, user subscriptionItem) {
	subscriber = subscriptionItem{PK: TopicShardPK(topic, domain.TopicShard(userID)), SK: userID, Kind: "topicSubscriber", Topic: topic, UserID: userID, SubscribedAt: at}
	user = subscriptionItem{PK: UserPK(userID), SK: userTopicPrefix + topic, Kind: "userTopic", Topic: topic, UserID: userID, SubscribedAt: at}
	return subscriber, user
}

// subscribeParallel bounds the BatchWriteItem requests one call sends at once.
const subscribeParallel = 8

// SubscribeToTopic subscribes users to topic and reports how many were not
// subscribed before. It reads which users are subscribed already (their
// own items, strongly consistent, 100 a BatchGetItem) and writes both items
// of the others only (BatchWriteItem, 12 subscriptions a request): a user
// subscribed already keeps their subscription as it is (its time, a mute),
// so subscribing twice stores once. The writes are not conditional
// (a transaction per subscription is 4 write units and, on 1,000 users, a
// thousand round trips): two calls racing over a new subscriber both write
// it, the same subscription (docs/decisions.md, "Topic subscriptions").
func (s *Topics) SubscribeToTopic(ctx context.Context, topic string, users []string) (added int, err error) {
	keys := make([]map[string]types.AttributeValue, 0, len(users))
	seen := make(map[string]bool, len(users))
	for _, u := range users {
		if !seen[u] {
			seen[u] = true
			keys = append(keys, key(UserPK(u), userTopicPrefix+topic))
		}
	}
	existing, err := s.batchGet(ctx, "read subscriptions", keys, types.KeysAndAttributes{ConsistentRead: aws.Bool(true), ProjectionExpression: aws.String("pk")})
	if err != nil {
		return 0, err
	}
	for _, av := range existing {
		delete(seen, strings.TrimPrefix(stringAttr(av, "pk"), userPrefix))
	}
	at := formatTime(s.now())
	var batches [][]types.WriteRequest
	var batch []types.WriteRequest
	for _, u := range users {
		if !seen[u] {
			continue
		}
		delete(seen, u) // once, in the order given
		sub, own := subscriptionItems(topic, u, at)
		for _, it := range []subscriptionItem{sub, own} {
			av, err := attributevalue.MarshalMap(it)
			if err != nil {
				return 0, fmt.Errorf("marshal subscription: %w", err)
			}
			batch = append(batch, types.WriteRequest{PutRequest: &types.PutRequest{Item: av}})
		}
		if added++; len(batch)+2 > batchWriteSize {
			batches, batch = append(batches, batch), nil
		}
	}
	if len(batch) > 0 {
		batches = append(batches, batch)
	}
	var mu sync.Mutex
	var firstErr error
	sem := make(chan struct{}, subscribeParallel)
	var wg sync.WaitGroup
	for _, b := range batches {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := s.writeBatch(ctx, "subscribe to topic "+topic, b); err != nil {
				mu.Lock()
				firstErr = cmp.Or(firstErr, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	return added, nil
}

// UnsubscribeFromTopic removes a user's subscription to topic (both items, in one
// transaction); removing one that does not exist is no error.
func (s *Topics) UnsubscribeFromTopic(ctx context.Context, topic, userID string) error {
	sub, own := subscriptionItems(topic, userID, "")
	_, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Delete: &types.Delete{TableName: aws.String(s.table), Key: key(sub.PK, sub.SK)}},
		{Delete: &types.Delete{TableName: aws.String(s.table), Key: key(own.PK, own.SK)}},
	}})
	if err != nil {
		return fmt.Errorf("unsubscribe from topic %s: %w", topic, err)
	}
	return nil
}

// TopicSubscribers reads up to limit subscriptions of one shard of topic
// after the user id after ("" from the start), in user id order; next is
// the last user id read when the shard may hold more, else "".
func (s *Topics) TopicSubscribers(ctx context.Context, topic string, shard int, after string, limit int) ([]domain.Subscription, string, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(TopicShardPK(topic, shard))},
		Limit:                     aws.Int32(int32(limit)),
	}
	if after != "" {
		in.ExclusiveStartKey = key(TopicShardPK(topic, shard), after)
	}
	out, err := s.db.Query(ctx, in)
	if err != nil {
		return nil, "", fmt.Errorf("read subscribers of topic %s shard %d: %w", topic, shard, err)
	}
	subs, err := decodeSubscriptions(out.Items)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(out.LastEvaluatedKey) > 0 {
		next = stringAttr(out.LastEvaluatedKey, "sk")
	}
	return subs, next, nil
}

// ScanSubscribers is TopicSubscribers as the campaign fan-out reads it:
// the user ids only.
func (s *Topics) ScanSubscribers(ctx context.Context, topic string, shard int, after string, limit int) ([]string, string, error) {
	subs, next, err := s.TopicSubscribers(ctx, topic, shard, after, limit)
	ids := make([]string, len(subs))
	for i, sub := range subs {
		ids[i] = sub.UserID
	}
	return ids, next, err
}

// UserTopics reads up to limit of a user's subscriptions after the topic
// after ("" from the first), in topic order, with one query; next is the
// last topic read when more may follow, else "".
func (s *Topics) UserTopics(ctx context.Context, userID, after string, limit int) ([]domain.Subscription, string, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("pk = :pk AND begins_with(sk, :topic)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(UserPK(userID)), ":topic": str(userTopicPrefix)},
		Limit:                     aws.Int32(int32(limit)),
		ConsistentRead:            aws.Bool(true),
	}
	if after != "" {
		in.ExclusiveStartKey = key(UserPK(userID), userTopicPrefix+after)
	}
	out, err := s.db.Query(ctx, in)
	if err != nil {
		return nil, "", fmt.Errorf("read topics of a user: %w", err)
	}
	subs, err := decodeSubscriptions(out.Items)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(out.LastEvaluatedKey) > 0 {
		next = strings.TrimPrefix(stringAttr(out.LastEvaluatedKey, "sk"), userTopicPrefix)
	}
	return subs, next, nil
}

func decodeSubscriptions(items []map[string]types.AttributeValue) ([]domain.Subscription, error) {
	subs := make([]domain.Subscription, 0, len(items))
	for _, av := range items {
		var it subscriptionItem
		if err := attributevalue.UnmarshalMap(av, &it); err != nil {
			return nil, fmt.Errorf("unmarshal subscription: %w", err)
		}
		subs = append(subs, it.toDomain())
	}
	return subs, nil
}

// SetTopicMuted mutes or unmutes a user's subscription to topic (both
// items, one transaction) and returns it; domain.ErrNotFound when the user
// is not subscribed.
func (s *Topics) SetTopicMuted(ctx context.Context, userID, topic string, muted bool) (*domain.Subscription, error) {
	sub, own := subscriptionItems(topic, userID, "")
	update := func(it subscriptionItem) types.TransactWriteItem {
		return types.TransactWriteItem{Update: &types.Update{
			TableName: aws.String(s.table), Key: key(it.PK, it.SK),
			UpdateExpression:          aws.String("SET muted = :muted"),
			ConditionExpression:       aws.String("attribute_exists(pk)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":muted": &types.AttributeValueMemberBOOL{Value: muted}},
		}}
	}
	err := s.transactContended(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{update(sub), update(own)}})
	if failedCondition(err) {
		return nil, fmt.Errorf("subscription to topic %s: %w", topic, domain.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("mute topic %s: %w", topic, err)
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: key(own.PK, own.SK), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("read subscription to topic %s: %w", topic, err)
	}
	if len(out.Item) == 0 { // unsubscribed since
		return nil, fmt.Errorf("subscription to topic %s: %w", topic, domain.ErrNotFound)
	}
	subs, err := decodeSubscriptions([]map[string]types.AttributeValue{out.Item})
	if err != nil {
		return nil, err
	}
	return &subs[0], nil
}

// MutedSubscribers reports which of users have muted topic, from their own
// items (strongly consistent, 100 keys a BatchGetItem): what a topic
// send's lot reads before creating its notifications.
func (s *Topics) MutedSubscribers(ctx context.Context, topic string, users []string) (map[string]bool, error) {
	keys := make([]map[string]types.AttributeValue, len(users))
	for i, u := range users {
		keys[i] = key(UserPK(u), userTopicPrefix+topic)
	}
	items, err := s.batchGet(ctx, "read topic mutes", keys, types.KeysAndAttributes{
		ConsistentRead: aws.Bool(true), ProjectionExpression: aws.String("pk, muted"),
	})
	if err != nil {
		return nil, err
	}
	muted := map[string]bool{}
	for _, av := range items {
		if b, ok := av["muted"].(*types.AttributeValueMemberBOOL); ok && b.Value {
			muted[strings.TrimPrefix(stringAttr(av, "pk"), userPrefix)] = true
		}
	}
	return muted, nil
}

// SubscriptionItemKeys builds the two items of a subscription with the
// code SubscribeToTopic uses and returns their keys and billed sizes (the
// capacity model reads them; docs/capacity.md).
func (s *Table) SubscriptionItemKeys(topic, userID string) (subscriber, user ItemKeys, err error) {
	sub, own := subscriptionItems(topic, userID, formatTime(s.now()))
	a, err := attributevalue.MarshalMap(sub)
	if err != nil {
		return subscriber, user, fmt.Errorf("marshal subscription: %w", err)
	}
	b, err := attributevalue.MarshalMap(own)
	if err != nil {
		return subscriber, user, fmt.Errorf("marshal subscription: %w", err)
	}
	return keysOf(a, nil), keysOf(b, nil), nil
}
