package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// maxBatchGetKeys is BatchGetItem's limit per call.
const maxBatchGetKeys = 100

// maxBatchGetAttempts bounds the retries of unprocessed keys.
const maxBatchGetAttempts = 5

// batchGet reads keys with BatchGetItem, 100 per call, retrying unprocessed
// keys with a short backoff. Keys with no item are simply absent from the
// result. shape sets the read's consistency and projection; its Keys are
// ignored.
func (s *Table) batchGet(ctx context.Context, what string, keys []map[string]types.AttributeValue, shape types.KeysAndAttributes) ([]map[string]types.AttributeValue, error) {
	var items []map[string]types.AttributeValue
	for start := 0; start < len(keys); start += maxBatchGetKeys {
		ka := shape
		ka.Keys = keys[start:min(start+maxBatchGetKeys, len(keys))]
		request := map[string]types.KeysAndAttributes{s.table: ka}
		for attempt := 1; len(request) > 0; attempt++ {
			if attempt > maxBatchGetAttempts {
				return nil, fmt.Errorf("%s: keys still unprocessed after %d attempts", what, maxBatchGetAttempts)
			}
			if attempt > 1 {
				if err := sleepCtx(ctx, time.Duration(attempt*attempt)*10*time.Millisecond); err != nil {
					return nil, err
				}
			}
			out, err := s.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: request})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", what, err)
			}
			items = append(items, out.Responses[s.table]...)
			request = out.UnprocessedKeys
		}
	}
	return items, nil
}

// consistentRead is the shape of a strongly consistent batch read of whole items.
var consistentRead = types.KeysAndAttributes{ConsistentRead: aws.Bool(true)}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
