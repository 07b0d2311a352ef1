package email

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/sesv2"
)

// NarrowClient returns the operations of c that the provider calls, as method
// values. The wiring passes it instead of c: a client converted to an
// interface keeps every exported operation (with its serializers and types)
// in the binary once anything links reflect's method lookup, as text/template
// does; method values keep only these.
func NarrowClient(c *sesv2.Client) API {
	return narrowClient{sendEmail: c.SendEmail}
}

type narrowClient struct {
	sendEmail func(context.Context, *sesv2.SendEmailInput, ...func(*sesv2.Options)) (*sesv2.SendEmailOutput, error)
}

func (n narrowClient) SendEmail(ctx context.Context, in *sesv2.SendEmailInput, opts ...func(*sesv2.Options)) (*sesv2.SendEmailOutput, error) {
	return n.sendEmail(ctx, in, opts...)
}
