package dynamo

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
)

// NotificationIDFromKeys returns the notification id of a notification
// item's keys (stream records name items by key); ok is false for any other
// item.
func NotificationIDFromKeys(pk, sk string) (string, bool) {
	id, ok := strings.CutPrefix(pk, notificationPrefix)
	return id, ok && sk == notificationSK && id != ""
}

// NotificationInsertRecord reads a notification's current item and returns it
// as the stream INSERT record the relay consumes, so an operator can re-run
// the relay's planning for it (the relay DLQ's redrive). The sequence number
// is synthetic: "replan-<id>".
func (s *Notifications) NotificationInsertRecord(ctx context.Context, id string) (events.DynamoDBEventRecord, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: key(NotificationPK(id), notificationSK), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return events.DynamoDBEventRecord{}, fmt.Errorf("get notification %s: %w", id, err)
	}
	if len(out.Item) == 0 {
		return events.DynamoDBEventRecord{}, fmt.Errorf("notification %s: %w", id, domain.ErrNotFound)
	}
	image, err := ToStreamImage(out.Item)
	if err != nil {
		return events.DynamoDBEventRecord{}, fmt.Errorf("notification %s: %w", id, err)
	}
	keys := map[string]events.DynamoDBAttributeValue{
		"pk": events.NewStringAttribute(NotificationPK(id)), "sk": events.NewStringAttribute(notificationSK),
	}
	return events.DynamoDBEventRecord{
		EventName: string(events.DynamoDBOperationTypeInsert), EventSource: "aws:dynamodb",
		Change: events.DynamoDBStreamRecord{
			Keys: keys, NewImage: image, SequenceNumber: "replan-" + id,
			StreamViewType: string(events.DynamoDBStreamViewTypeNewAndOldImages),
		},
	}, nil
}

// ToStreamImage converts SDK attribute values to a Lambda stream image (the
// inverse of FromStreamImage).
func ToStreamImage(item map[string]types.AttributeValue) (map[string]events.DynamoDBAttributeValue, error) {
	out := make(map[string]events.DynamoDBAttributeValue, len(item))
	for k, v := range item {
		ev, err := toStreamValue(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %w", k, err)
		}
		out[k] = ev
	}
	return out, nil
}

func toStreamValue(v types.AttributeValue) (events.DynamoDBAttributeValue, error) {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value), nil
	case *types.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value), nil
	case *types.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(v.Value), nil
	case *types.AttributeValueMemberNULL:
		return events.NewNullAttribute(), nil
	case *types.AttributeValueMemberB:
		return events.NewBinaryAttribute(v.Value), nil
	case *types.AttributeValueMemberSS:
		return events.NewStringSetAttribute(v.Value), nil
	case *types.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(v.Value), nil
	case *types.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(v.Value), nil
	case *types.AttributeValueMemberL:
		list := make([]events.DynamoDBAttributeValue, len(v.Value))
		for i, e := range v.Value {
			ev, err := toStreamValue(e)
			if err != nil {
				return events.DynamoDBAttributeValue{}, err
			}
			list[i] = ev
		}
		return events.NewListAttribute(list), nil
	case *types.AttributeValueMemberM:
		m, err := ToStreamImage(v.Value)
		if err != nil {
			return events.DynamoDBAttributeValue{}, err
		}
		return events.NewMapAttribute(m), nil
	}
	return events.DynamoDBAttributeValue{}, fmt.Errorf("unsupported attribute type %T", v)
}
