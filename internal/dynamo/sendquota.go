package dynamo

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
)

// Send-quota counters: one item per channel × shard × quota slot,
// pk SQ#<channel>#<shard>, sk W#<slot start, Unix milliseconds>, removed by
// TTL ten minutes after the slot. The rules (shards, slots, caps) are
// policy.SendQuota's.
const (
	sendQuotaPrefix = "SQ#"
	sendQuotaKeep   = 10 * time.Minute
)

// SendQuotaKey is the key of one shard's counter in one slot (or window:
// any start, to the millisecond).
func SendQuotaKey(c domain.Channel, shard int, windowStart time.Time) (pk, sk string) {
	return sendQuotaPrefix + string(c) + "#" + strconv.Itoa(shard), rateWindowPrefix + strconv.FormatInt(windowStart.UnixMilli(), 10)
}

// TakeSendToken takes one send from shard's counter of the window starting at
// windowStart if it holds fewer than limit, and reports whether it did. It is
// ONE conditional UpdateItem:
//
//	ADD count :1  IF attribute_not_exists(count) OR count < :limit
//
// A refused write (the shard is full for this caller's limit) is not an error.
// limit ≤ 0 admits nothing and costs no request.
func (s *Quotas) TakeSendToken(ctx context.Context, c domain.Channel, shard int, windowStart time.Time, window time.Duration, limit int) (bool, error) {
	if limit <= 0 {
		return false, nil
	}
	pk, sk := SendQuotaKey(c, shard, windowStart)
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.table),
		Key:                      key(pk, sk),
		UpdateExpression:         aws.String("ADD #count :one SET #ttl = if_not_exists(#ttl, :ttl)"),
		ConditionExpression:      aws.String("attribute_not_exists(#count) OR #count < :limit"),
		ExpressionAttributeNames: map[string]string{"#count": "count", "#ttl": "ttl"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one": num(1), ":limit": num(int64(limit)),
			":ttl": num(windowStart.Add(window + sendQuotaKeep).Unix()),
		},
	})
	if err == nil {
		return true, nil
	}
	if isConditionFailed(err) {
		return false, nil
	}
	return false, fmt.Errorf("take %s send token (shard %d): %w", c, shard, err)
}
