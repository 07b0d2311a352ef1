package sms

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/sns"
)

// NarrowClient returns the operations of c that the provider calls, as method
// values. The wiring passes it instead of c: a client converted to an
// interface keeps every exported operation (with its serializers and types)
// in the binary once anything links reflect's method lookup, as text/template
// does; method values keep only these.
func NarrowClient(c *sns.Client) API {
	return narrowClient{checkIfPhoneNumberIsOptedOut: c.CheckIfPhoneNumberIsOptedOut, publish: c.Publish}
}

type narrowClient struct {
	checkIfPhoneNumberIsOptedOut func(context.Context, *sns.CheckIfPhoneNumberIsOptedOutInput, ...func(*sns.Options)) (*sns.CheckIfPhoneNumberIsOptedOutOutput, error)
	publish                      func(context.Context, *sns.PublishInput, ...func(*sns.Options)) (*sns.PublishOutput, error)
}

func (n narrowClient) CheckIfPhoneNumberIsOptedOut(ctx context.Context, in *sns.CheckIfPhoneNumberIsOptedOutInput, opts ...func(*sns.Options)) (*sns.CheckIfPhoneNumberIsOptedOutOutput, error) {
	return n.checkIfPhoneNumberIsOptedOut(ctx, in, opts...)
}

func (n narrowClient) Publish(ctx context.Context, in *sns.PublishInput, opts ...func(*sns.Options)) (*sns.PublishOutput, error) {
	return n.publish(ctx, in, opts...)
}
