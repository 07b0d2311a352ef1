package queue

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// NarrowClient returns the operations of c that the publisher and Visibility call, as method
// values. The wiring passes it instead of c: a client converted to an
// interface keeps every exported operation (with its serializers and types)
// in the binary once anything links reflect's method lookup, as text/template
// does; method values keep only these.
func NarrowClient(c *sqs.Client) Client {
	return narrowClient{sendMessageBatch: c.SendMessageBatch, getQueueUrl: c.GetQueueUrl, changeMessageVisibility: c.ChangeMessageVisibility}
}

type narrowClient struct {
	sendMessageBatch        func(context.Context, *sqs.SendMessageBatchInput, ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	getQueueUrl             func(context.Context, *sqs.GetQueueUrlInput, ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	changeMessageVisibility func(context.Context, *sqs.ChangeMessageVisibilityInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

func (n narrowClient) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	return n.sendMessageBatch(ctx, in, opts...)
}

func (n narrowClient) GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, opts ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	return n.getQueueUrl(ctx, in, opts...)
}

func (n narrowClient) ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	return n.changeMessageVisibility(ctx, in, opts...)
}

// Client is what the publisher and Visibility call.
type Client interface {
	API
	VisibilityAPI
}
