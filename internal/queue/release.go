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

	"github.com/heraldhq/herald/internal/domain"
)

// ReleaseQueueEnv names the scheduler's release queue URL.
const ReleaseQueueEnv = "RELEASE_QUEUE_URL"

// Releases sends the scheduler's release messages, one per due-index
// partition, to the release queue.
type Releases struct {
	api API
	url string
}

// NewReleases returns a sender for the release queue at url.
func NewReleases(api API, url string) *Releases { return &Releases{api: api, url: url} }

// EnqueueReleases sends one message per partition, ten per call, calls in
// parallel; entries SQS fails through no fault of the sender are retried.
func (r *Releases) EnqueueReleases(ctx context.Context, parts []domain.DuePartition) error {
	errs := make([]error, (len(parts)+maxBatch-1)/maxBatch)
	var wg sync.WaitGroup
	for c := range errs {
		chunk := parts[c*maxBatch : min((c+1)*maxBatch, len(parts))]
		wg.Go(func() { errs[c] = r.send(ctx, chunk) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (r *Releases) send(ctx context.Context, chunk []domain.DuePartition) error {
	pending := make([]int, len(chunk))
	for i := range pending {
		pending[i] = i
	}
	for attempt := 1; ; attempt++ {
		entries := make([]types.SendMessageBatchRequestEntry, 0, len(pending))
		for _, i := range pending {
			body, err := json.Marshal(chunk[i])
			if err != nil {
				return fmt.Errorf("encode release message: %w", err)
			}
			entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(string(body))})
		}
		out, err := r.api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(r.url), Entries: entries})
		if err != nil {
			return fmt.Errorf("send release batch: %w", err)
		}
		if len(out.Failed) == 0 {
			return nil
		}
		var retry []int
		var failed []error
		for _, f := range out.Failed {
			i, _ := strconv.Atoi(aws.ToString(f.Id))
			if f.SenderFault || attempt >= maxAttempts {
				failed = append(failed, fmt.Errorf("send release message: %s: %s", aws.ToString(f.Code), aws.ToString(f.Message)))
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
