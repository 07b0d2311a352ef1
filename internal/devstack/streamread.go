package devstack

import (
	"context"
	"errors"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// StreamRecords reads the table's stream from the trim horizon, every shard,
// and returns the records that keep(record) accepts, in the shape Lambda
// delivers them to the relay. Tests use it to replay a batch the stream
// mapping already delivered (a stream retry).
func (s *Stack) StreamRecords(ctx context.Context, keep func(events.DynamoDBEventRecord) bool) ([]events.DynamoDBEventRecord, error) {
	if s.relay == nil {
		return nil, errors.New("no stream mapping")
	}
	client := dynamodbstreams.NewFromConfig(s.AWS)
	var out []events.DynamoDBEventRecord
	var start *string
	for {
		desc, err := client.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(s.relay.streamARN), ExclusiveStartShardId: start})
		if err != nil {
			return nil, err
		}
		for _, sh := range desc.StreamDescription.Shards {
			it, err := client.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
				StreamArn: aws.String(s.relay.streamARN), ShardId: sh.ShardId, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon,
			})
			if err != nil {
				return nil, err
			}
			for iter := it.ShardIterator; iter != nil; {
				page, err := client.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
				if err != nil {
					return nil, err
				}
				for _, r := range page.Records {
					ev, err := toStreamEventRecord(r, s.relay.streamARN)
					if err != nil {
						return nil, err
					}
					if keep(ev) {
						out = append(out, ev)
					}
				}
				if len(page.Records) == 0 {
					break // an open shard's iterator never ends: stop at its tip
				}
				iter = page.NextShardIterator
			}
		}
		if desc.StreamDescription.LastEvaluatedShardId == nil {
			return out, nil
		}
		start = desc.StreamDescription.LastEvaluatedShardId
	}
}
