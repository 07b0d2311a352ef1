package dynamo

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
)

// Rate-limit counters: one item per user × channel × fixed window,
// pk RL#<user>#<channel>, sk W#<window start>, removed by TTL an hour after
// the window ends.
const (
	rateLimitPrefix  = "RL#"
	rateWindowPrefix = "W#"
	rateLimitIDs     = "notificationIds"
	rateLimitKeep    = time.Hour
)

// RateLimitPK is the partition of a user's counters on one channel.
func RateLimitPK(userID string, c domain.Channel) string {
	return rateLimitPrefix + userID + "#" + string(c)
}

// CountDelivery counts notificationID against a user's limit on a channel in
// the window starting at windowStart and reports whether it is within the
// limit. It is ONE conditional UpdateItem:
//
//	ADD count :1, notificationIds {id}
//	IF (attribute_not_exists(count) OR count < :limit) AND NOT contains(notificationIds, id)
//
// The id set makes the count idempotent per notification, so a stream retry
// of the same record (after a crash, a partial batch failure or a bisect)
// never counts twice: when the condition fails, the old item returned by the
// failed write tells whether the id was already counted (allowed) or the
// window is full (limited). The set holds at most `limit` ids. A limit ≤ 0
// means unlimited and costs no request.
func (s *Quotas) CountDelivery(ctx context.Context, userID string, c domain.Channel, windowStart time.Time, window time.Duration, limit int, notificationID string) (bool, error) {
	if limit <= 0 {
		return true, nil
	}
	k := key(RateLimitPK(userID, c), rateWindowPrefix+formatTime(windowStart))
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.table),
		Key:                 k,
		UpdateExpression:    aws.String("ADD #count :one, #ids :idSet SET #ttl = :ttl"),
		ConditionExpression: aws.String("(attribute_not_exists(#count) OR #count < :limit) AND NOT contains(#ids, :id)"),
		ExpressionAttributeNames: map[string]string{
			"#count": "count", "#ids": rateLimitIDs, "#ttl": "ttl",
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one":   num(1),
			":idSet": &types.AttributeValueMemberSS{Value: []string{notificationID}},
			":id":    str(notificationID),
			":limit": num(int64(limit)),
			":ttl":   num(windowStart.Add(window + rateLimitKeep).Unix()),
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return true, nil
	}
	item, err := s.conditionItem(ctx, err, k)
	if err != nil {
		return false, fmt.Errorf("count %s on %s for %s: %w", notificationID, c, userID, err)
	}
	ids, _ := item[rateLimitIDs].(*types.AttributeValueMemberSS)
	return ids != nil && slices.Contains(ids.Value, notificationID), nil
}
