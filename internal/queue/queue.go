// Package queue is Herald's SQS adapter for work messages: it knows the nine
// work queues by (channel, priority) and sends ids-only messages in batches.
package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/heraldhq/herald/internal/domain"
)

// API is the subset of the SQS client used to publish.
type API interface {
	SendMessageBatch(context.Context, *sqs.SendMessageBatchInput, ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

var _ API = (*sqs.Client)(nil)

// URLs maps each work queue name ("email-high") to its URL.
type URLs map[string]string

// URLsFromEnv reads EMAIL_HIGH_QUEUE_URL … PUSH_LOW_QUEUE_URL, failing on any missing.
func URLsFromEnv(getenv func(string) string) (URLs, error) {
	u := URLs{}
	var missing []string
	for _, c := range domain.Channels {
		for _, p := range domain.Priorities {
			name := domain.QueueName(c, p)
			env := EnvName(c, p)
			if v := getenv(env); v != "" {
				u[name] = v
			} else {
				missing = append(missing, env)
			}
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing queue URLs: %s", strings.Join(missing, ", "))
	}
	return u, nil
}

// EnvName is the environment variable holding a work queue's URL.
func EnvName(c domain.Channel, p domain.Priority) string {
	return strings.ToUpper(string(c)) + "_" + strings.ToUpper(string(p)) + "_QUEUE_URL"
}

// Publisher sends work messages.
type Publisher struct {
	api  API
	urls URLs
}

// NewPublisher returns a Publisher over the given queues.
func NewPublisher(api API, urls URLs) *Publisher { return &Publisher{api: api, urls: urls} }

// maxBatch is SQS's SendMessageBatch entry limit.
const maxBatch = 10

// maxAttempts bounds retries of entries SQS reports as failed inside a batch.
const maxAttempts = 3

// Publish sends msgs grouped per queue, at most ten per call, all calls in
// parallel. It returns one error slot per message (nil when sent) so the caller
// can report exactly the records whose messages did not go out. Entries that
// fail inside a successful batch call are retried up to maxAttempts times when
// SQS marks them as not the sender's fault.
func (p *Publisher) Publish(ctx context.Context, msgs []domain.WorkItem) []error {
	errs := make([]error, len(msgs))
	byQueue := map[string][]int{}
	for i, m := range msgs {
		url, ok := p.urls[domain.QueueName(m.Message.Channel, m.Priority)]
		if !ok {
			errs[i] = fmt.Errorf("no queue for %s/%s", m.Message.Channel, m.Priority)
			continue
		}
		byQueue[url] = append(byQueue[url], i)
	}
	var wg sync.WaitGroup
	for url, idx := range byQueue {
		for start := 0; start < len(idx); start += maxBatch {
			chunk := idx[start:min(start+maxBatch, len(idx))]
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.sendChunk(ctx, url, msgs, chunk, errs)
			}()
		}
	}
	wg.Wait()
	return errs
}

// sendChunk writes only errs[i] for i in chunk, so chunks never share slots.
func (p *Publisher) sendChunk(ctx context.Context, url string, msgs []domain.WorkItem, chunk []int, errs []error) {
	pending := chunk
	for attempt := 1; len(pending) > 0; attempt++ {
		entries := make([]types.SendMessageBatchRequestEntry, 0, len(pending))
		for _, i := range pending {
			body, err := json.Marshal(msgs[i].Message)
			if err != nil {
				errs[i] = fmt.Errorf("encode work message: %w", err)
				continue
			}
			entries = append(entries, types.SendMessageBatchRequestEntry{
				Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(string(body)),
			})
		}
		if len(entries) == 0 {
			return
		}
		out, err := p.api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
		if err != nil {
			for _, i := range pending {
				errs[i] = fmt.Errorf("send message batch: %w", err)
			}
			return
		}
		var retry []int
		for _, f := range out.Failed {
			i, _ := strconv.Atoi(aws.ToString(f.Id))
			errs[i] = fmt.Errorf("send message: %s: %s", aws.ToString(f.Code), aws.ToString(f.Message))
			if !f.SenderFault && attempt < maxAttempts {
				retry = append(retry, i)
			}
		}
		for _, i := range retry {
			errs[i] = nil
		}
		pending = retry
	}
}
