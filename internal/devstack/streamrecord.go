package devstack

import (
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/heraldhq/herald/internal/dynamo"
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

// toEventImage converts a Streams API image through the SDK's own
// Streams → DynamoDB conversion and the adapter's Lambda image conversion.
func toEventImage(img map[string]streamtypes.AttributeValue) (map[string]events.DynamoDBAttributeValue, error) {
	if img == nil {
		return nil, nil
	}
	av, err := attributevalue.FromDynamoDBStreamsMap(img)
	if err != nil {
		return nil, err
	}
	return dynamo.ToStreamImage(av)
}
