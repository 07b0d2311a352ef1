package dynamo

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The live inbox's online set: LIVE#<shard> / <user>, one small item per
// user who connected in the last 2 hours (its ttl: the latest connection's
// 2-hour limit), spread over live.OnlineShards partitions. An
// announcement's broadcast pages through each shard; an entry whose user
// has no open connection any more only costs the poster a read.
const onlinePrefix = "LIVE#"

func onlinePK(shard int) string { return onlinePrefix + strconv.Itoa(shard) }

// AddOnline records user in the shard's online set until `until` (one
// PutItem: the latest connect sets the time).
func (s *Live) AddOnline(ctx context.Context, shard int, user string, until time.Time) error {
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.table),
		Item: map[string]types.AttributeValue{
			"pk": str(onlinePK(shard)), "sk": str(user), "kind": str("online"), "ttl": num(until.Unix()),
		},
	})
	if err != nil {
		return fmt.Errorf("add online: %w", err)
	}
	return nil
}

// OnlineUsers reads one page of the shard's online set after `after` (user
// order): at most limit entries evaluated, those whose time has passed at
// now skipped (TTL deletes them within days, not at once). next is the
// last entry evaluated when the page was full ("" at the shard's end).
func (s *Live) OnlineUsers(ctx context.Context, shard int, after string, now time.Time, limit int) ([]string, string, error) {
	cond := "pk = :pk"
	values := map[string]types.AttributeValue{":pk": str(onlinePK(shard)), ":now": num(now.Unix())}
	if after != "" {
		cond += " AND sk > :after"
		values[":after"] = str(after)
	}
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String(cond),
		FilterExpression:          aws.String("#ttl > :now"),
		ProjectionExpression:      aws.String("sk"),
		ExpressionAttributeNames:  map[string]string{"#ttl": "ttl"},
		ExpressionAttributeValues: values,
		Limit:                     aws.Int32(int32(limit)),
	})
	if err != nil {
		return nil, "", fmt.Errorf("query online set: %w", err)
	}
	users := make([]string, 0, len(out.Items))
	for _, it := range out.Items {
		if v, ok := it["sk"].(*types.AttributeValueMemberS); ok {
			users = append(users, v.Value)
		}
	}
	next := ""
	if v, ok := out.LastEvaluatedKey["sk"].(*types.AttributeValueMemberS); ok {
		next = v.Value
	}
	return users, next, nil
}

// MarkAnnouncementLive sets the announcement's liveAt to at unless it has
// one: the broadcast starts once whoever asks (the API, the scheduler). An
// absent announcement is not created (false).
func (s *Inbox) MarkAnnouncementLive(ctx context.Context, id string, at time.Time) (bool, error) {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(announcementPrefix+id, announcementSK),
		UpdateExpression:          aws.String("SET liveAt = :at"),
		ConditionExpression:       aws.String("attribute_exists(pk) AND attribute_not_exists(liveAt)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":at": str(formatTime(at))},
	})
	if isConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("mark announcement %s live: %w", id, err)
	}
	return true, nil
}

// UnmarkAnnouncementLive removes the mark set at `at` (a broadcast that
// could not be sent); another mark stays.
func (s *Inbox) UnmarkAnnouncementLive(ctx context.Context, id string, at time.Time) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(announcementPrefix+id, announcementSK),
		UpdateExpression:          aws.String("REMOVE liveAt"),
		ConditionExpression:       aws.String("liveAt = :at"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":at": str(formatTime(at))},
	})
	if err != nil && !isConditionFailed(err) {
		return fmt.Errorf("unmark announcement %s: %w", id, err)
	}
	return nil
}

// broadcastAttr is the announcement's attribute holding a shard's broadcast
// position ("p:<user>": at the page after that user; "done"; absent: at the
// first page).
func broadcastAttr(shard int) string { return fmt.Sprintf("bc%02d", shard) }

// AdvanceBroadcast moves the shard's broadcast position of the announcement
// from the page after `after` to the page after `next` ("done" when next is
// ""), with one conditional UpdateItem: the page is taken once, whatever
// the deliveries of its message. false when the shard stands elsewhere or
// the announcement is gone.
func (s *Inbox) AdvanceBroadcast(ctx context.Context, id string, shard int, after, next string) (bool, error) {
	to := "done"
	if next != "" {
		to = "p:" + next
	}
	cond := "attribute_exists(pk) AND attribute_not_exists(#bc)"
	values := map[string]types.AttributeValue{":to": str(to)}
	if after != "" {
		cond = "#bc = :at"
		values[":at"] = str("p:" + after)
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(announcementPrefix+id, announcementSK),
		UpdateExpression:          aws.String("SET #bc = :to"),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  map[string]string{"#bc": broadcastAttr(shard)},
		ExpressionAttributeValues: values,
	})
	if isConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("advance broadcast %s shard %d: %w", id, shard, err)
	}
	return true, nil
}
