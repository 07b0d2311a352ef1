package devstack

import (
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// toStreamEventRecord converts a DynamoDB Streams API record to the shape
// Lambda delivers to the function.
func toStreamEventRecord(r streamtypes.Record, streamARN string) (events.DynamoDBEventRecord, error) {
	ev := events.DynamoDBEventRecord{
		AWSRegion: LocalRegion, EventID: aws.ToString(r.EventID), EventName: string(r.EventName),
		EventSource: "aws:dynamodb", EventVersion: aws.ToString(r.EventVersion), EventSourceArn: streamARN,
	}
	sr := r.Dynamodb
	if sr == nil {
		return ev, fmt.Errorf("record %s has no dynamodb section", ev.EventID)
	}
	var err error
	ev.Change = events.DynamoDBStreamRecord{
		SequenceNumber: aws.ToString(sr.SequenceNumber), SizeBytes: aws.ToInt64(sr.SizeBytes),
		StreamViewType: string(sr.StreamViewType),
	}
	if sr.ApproximateCreationDateTime != nil {
		ev.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: *sr.ApproximateCreationDateTime}
	} else {
		ev.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: time.Now()}
	}
	if ev.Change.Keys, err = toEventImage(sr.Keys); err != nil {
		return ev, err
	}
	if ev.Change.NewImage, err = toEventImage(sr.NewImage); err != nil {
		return ev, err
	}
	if ev.Change.OldImage, err = toEventImage(sr.OldImage); err != nil {
		return ev, err
	}
	return ev, nil
}

func toEventImage(img map[string]streamtypes.AttributeValue) (map[string]events.DynamoDBAttributeValue, error) {
	if img == nil {
		return nil, nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(img))
	for k, v := range img {
		ev, err := toEventValue(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %w", k, err)
		}
		out[k] = ev
	}
	return out, nil
}

func toEventValue(v streamtypes.AttributeValue) (events.DynamoDBAttributeValue, error) {
	switch v := v.(type) {
	case *streamtypes.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value), nil
	case *streamtypes.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value), nil
	case *streamtypes.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(v.Value), nil
	case *streamtypes.AttributeValueMemberNULL:
		return events.NewNullAttribute(), nil
	case *streamtypes.AttributeValueMemberB:
		return events.NewBinaryAttribute(v.Value), nil
	case *streamtypes.AttributeValueMemberSS:
		return events.NewStringSetAttribute(v.Value), nil
	case *streamtypes.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(v.Value), nil
	case *streamtypes.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(v.Value), nil
	case *streamtypes.AttributeValueMemberL:
		list := make([]events.DynamoDBAttributeValue, len(v.Value))
		for i, e := range v.Value {
			ev, err := toEventValue(e)
			if err != nil {
				return events.DynamoDBAttributeValue{}, err
			}
			list[i] = ev
		}
		return events.NewListAttribute(list), nil
	case *streamtypes.AttributeValueMemberM:
		m, err := toEventImage(v.Value)
		if err != nil {
			return events.DynamoDBAttributeValue{}, err
		}
		return events.NewMapAttribute(m), nil
	}
	return events.DynamoDBAttributeValue{}, fmt.Errorf("unsupported attribute type %T", v)
}
