package queue

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// VisibilityAPI is the subset of the SQS client used to delay retries.
type VisibilityAPI interface {
	GetQueueUrl(context.Context, *sqs.GetQueueUrlInput, ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	ChangeMessageVisibility(context.Context, *sqs.ChangeMessageVisibilityInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

var _ VisibilityAPI = (*sqs.Client)(nil)

// Visibility changes message visibility. SQS events name their queue by ARN,
// while the API wants its URL: the URL is resolved once per queue and cached
// for the life of the execution environment.
type Visibility struct {
	api  VisibilityAPI
	mu   sync.Mutex
	urls map[string]string
}

// NewVisibility returns a Visibility over api.
func NewVisibility(api VisibilityAPI) *Visibility {
	return &Visibility{api: api, urls: map[string]string{}}
}

// maxVisibility is SQS's upper bound for a visibility timeout (12 hours).
const maxVisibility = 12 * time.Hour

// SetVisibility makes the message invisible for timeout from now.
func (v *Visibility) SetVisibility(ctx context.Context, queueARN, receiptHandle string, timeout time.Duration) error {
	url, err := v.url(ctx, queueARN)
	if err != nil {
		return err
	}
	timeout = min(timeout, maxVisibility)
	_, err = v.api.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(url), ReceiptHandle: aws.String(receiptHandle),
		VisibilityTimeout: int32(timeout / time.Second),
	})
	if err != nil {
		return fmt.Errorf("change visibility: %w", err)
	}
	return nil
}

func (v *Visibility) url(ctx context.Context, arn string) (string, error) {
	v.mu.Lock()
	url, ok := v.urls[arn]
	v.mu.Unlock()
	if ok {
		return url, nil
	}
	account, name, err := ParseARN(arn)
	if err != nil {
		return "", err
	}
	out, err := v.api.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name), QueueOwnerAWSAccountId: aws.String(account)})
	if err != nil {
		return "", fmt.Errorf("resolve queue %s: %w", name, err)
	}
	url = aws.ToString(out.QueueUrl)
	v.mu.Lock()
	v.urls[arn] = url
	v.mu.Unlock()
	return url, nil
}

// ParseARN splits arn:aws:sqs:region:account:name into account and name.
func ParseARN(arn string) (account, name string, err error) {
	parts := strings.Split(arn, ":")
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "sqs" {
		return "", "", fmt.Errorf("not an SQS queue ARN: %q", arn)
	}
	return parts[4], parts[5], nil
}

// Requeuer sends a copy of a received message back to its own queue,
// delayed: the copy starts with a fresh receive count. Queue URLs are
// resolved through a Visibility's cache.
type Requeuer struct {
	api API
	vis *Visibility
}

// NewRequeuer returns a Requeuer sending with api, resolving URLs with vis.
func NewRequeuer(api API, vis *Visibility) *Requeuer { return &Requeuer{api: api, vis: vis} }

// maxDelay is SQS's upper bound for a message delay (15 minutes).
const maxDelay = 15 * time.Minute

// Requeue sends body to the queue named by queueARN, invisible for delay.
func (r *Requeuer) Requeue(ctx context.Context, queueARN, body string, delay time.Duration) error {
	url, err := r.vis.url(ctx, queueARN)
	if err != nil {
		return err
	}
	out, err := r.api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.SendMessageBatchRequestEntry{{
		Id: aws.String("0"), MessageBody: aws.String(body), DelaySeconds: int32(min(delay, maxDelay) / time.Second),
	}}})
	if err != nil {
		return fmt.Errorf("requeue: %w", err)
	}
	if len(out.Failed) > 0 {
		return fmt.Errorf("requeue: %s: %s", aws.ToString(out.Failed[0].Code), aws.ToString(out.Failed[0].Message))
	}
	return nil
}
