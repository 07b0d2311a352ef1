package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// sendJSON sends one JSON message per item to url, each delayed by
// delaySeconds, ten per call, calls in parallel; entries SQS fails through
// no fault of the sender are retried. what names the messages in errors
// ("release", "campaign").
func sendJSON[T any](ctx context.Context, api API, url, what string, items []T, delaySeconds int32) error {
	errs := make([]error, (len(items)+maxBatch-1)/maxBatch)
	var wg sync.WaitGroup
	for c := range errs {
		chunk := items[c*maxBatch : min((c+1)*maxBatch, len(items))]
		wg.Go(func() { errs[c] = sendJSONBatch(ctx, api, url, what, chunk, delaySeconds) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// sendJSONBatch sends up to ten items in one call, retrying the entries SQS
// failed through no fault of the sender up to maxAttempts times.
func sendJSONBatch[T any](ctx context.Context, api API, url, what string, chunk []T, delaySeconds int32) error {
	pending := make([]int, len(chunk))
	for i := range pending {
		pending[i] = i
	}
	for attempt := 1; ; attempt++ {
		entries := make([]types.SendMessageBatchRequestEntry, 0, len(pending))
		for _, i := range pending {
			body, err := json.Marshal(chunk[i])
			if err != nil {
				return fmt.Errorf("encode %s message: %w", what, err)
			}
			entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(string(body)), DelaySeconds: delaySeconds})
		}
		out, err := api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
		if err != nil {
			return fmt.Errorf("send %s messages: %w", what, err)
		}
		if len(out.Failed) == 0 {
			return nil
		}
		var retry []int
		var failed []error
		for _, f := range out.Failed {
			i, _ := strconv.Atoi(aws.ToString(f.Id))
			if f.SenderFault || attempt >= maxAttempts {
				failed = append(failed, fmt.Errorf("send %s message: %s: %s", what, aws.ToString(f.Code), aws.ToString(f.Message)))
				continue
			}
			retry = append(retry, i)
		}
		if len(failed) > 0 {
			return errors.Join(failed...)
		}
		pending = retry
	}
}
