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

// presenceSK is the user's presence item, next to the profile under the
// user's partition: its own item so that PUT /v1/users (which replaces the
// profile) never erases it, and so that the worker's query of the user's
// partition reads it with everything else.
const presenceSK = "PRESENCE"

// TouchPresence records that the user was seen at `at`, unless a write
// within minInterval before it already did (written=false then). The
// condition makes concurrent API instances agree: at most one write per user
// per minInterval whichever instance serves the calls. lastSeenAt is kept in
// Unix milliseconds, a number, so that the condition compares times.
func (s *Live) TouchPresence(ctx context.Context, userID string, at time.Time, minInterval time.Duration) (written bool, err error) {
	ms := at.UnixMilli()
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.table),
		Key:                 key(UserPK(userID), presenceSK),
		UpdateExpression:    aws.String("SET lastSeenAt = :now, kind = :kind"),
		ConditionExpression: aws.String("attribute_not_exists(lastSeenAt) OR lastSeenAt <= :cutoff"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now":    &types.AttributeValueMemberN{Value: strconv.FormatInt(ms, 10)},
			":cutoff": &types.AttributeValueMemberN{Value: strconv.FormatInt(ms-minInterval.Milliseconds(), 10)},
			":kind":   str("presence"),
		},
	})
	if isConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("touch presence of %s: %w", userID, err)
	}
	return true, nil
}

// HoldPresence records the user seen at `at` and present until `until`: a
// live connection's lease (its connect, each ping). One unconditional
// write: a refused conditional write would be billed all the same.
func (s *Live) HoldPresence(ctx context.Context, userID string, at, until time.Time) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(s.table),
		Key:              key(UserPK(userID), presenceSK),
		UpdateExpression: aws.String("SET lastSeenAt = :now, presentUntil = :until, kind = :kind"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now":   msNum(at),
			":until": msNum(until),
			":kind":  str("presence"),
		},
	})
	if err != nil {
		return fmt.Errorf("hold presence of %s: %w", userID, err)
	}
	return nil
}

// EndPresence records the user seen at `at` and ends the live lease: the
// user's last connection closed.
func (s *Live) EndPresence(ctx context.Context, userID string, at time.Time) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(UserPK(userID), presenceSK),
		UpdateExpression:          aws.String("SET lastSeenAt = :now, kind = :kind REMOVE presentUntil"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": msNum(at), ":kind": str("presence")},
	})
	if err != nil {
		return fmt.Errorf("end presence of %s: %w", userID, err)
	}
	return nil
}

func msNum(t time.Time) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.UnixMilli(), 10)}
}

// lastSeenOf reads a presence item's lastSeenAt (zero when absent).
func lastSeenOf(av map[string]types.AttributeValue) time.Time { return msAttr(av, "lastSeenAt") }

// presentUntilOf reads a presence item's live lease (zero when none).
func presentUntilOf(av map[string]types.AttributeValue) time.Time { return msAttr(av, "presentUntil") }

// msAttr reads a Unix-milliseconds number attribute (zero when absent).
func msAttr(av map[string]types.AttributeValue, name string) time.Time {
	n, ok := av[name].(*types.AttributeValueMemberN)
	if !ok {
		return time.Time{}
	}
	ms, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
