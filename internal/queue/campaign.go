package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/heraldhq/herald/internal/domain"
)

// CampaignQueueEnv names the campaign work queue's URL.
const CampaignQueueEnv = "CAMPAIGN_QUEUE_URL"

// CampaignQueue sends the steps of campaigns' fan-out (plan, scan, lot, reconcile)
// to the campaign queue.
type CampaignQueue struct {
	api API
	url string
}

// NewCampaignQueue returns a sender for the campaign queue at url.
func NewCampaignQueue(api API, url string) *CampaignQueue { return &CampaignQueue{api: api, url: url} }

// SendCampaign sends msgs, each delayed by delay (at most 15 minutes), ten
// per call, calls in parallel; entries SQS fails through no fault of the
// sender are retried.
func (q *CampaignQueue) SendCampaign(ctx context.Context, msgs []domain.CampaignMessage, delay time.Duration) error {
	delay = min(max(delay, 0), maxDelay)
	errs := make([]error, (len(msgs)+maxBatch-1)/maxBatch)
	var wg sync.WaitGroup
	for c := range errs {
		chunk := msgs[c*maxBatch : min((c+1)*maxBatch, len(msgs))]
		wg.Go(func() { errs[c] = q.send(ctx, chunk, int32(delay/time.Second)) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (q *CampaignQueue) send(ctx context.Context, chunk []domain.CampaignMessage, delaySeconds int32) error {
	pending := make([]int, len(chunk))
	for i := range pending {
		pending[i] = i
	}
	for attempt := 1; ; attempt++ {
		entries := make([]types.SendMessageBatchRequestEntry, 0, len(pending))
		for _, i := range pending {
			body, err := json.Marshal(chunk[i])
			if err != nil {
				return fmt.Errorf("encode campaign message: %w", err)
			}
			entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(string(body)), DelaySeconds: delaySeconds})
		}
		out, err := q.api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.url), Entries: entries})
		if err != nil {
			return fmt.Errorf("send campaign messages: %w", err)
		}
		if len(out.Failed) == 0 {
			return nil
		}
		var retry []int
		var failed []error
		for _, f := range out.Failed {
			i, _ := strconv.Atoi(aws.ToString(f.Id))
			if f.SenderFault || attempt >= maxAttempts {
				failed = append(failed, fmt.Errorf("send campaign message: %s: %s", aws.ToString(f.Code), aws.ToString(f.Message)))
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
