// Package sms is the SNS provider of the SMS worker.
package sms

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/smithy-go"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/worker"
)

// API is the subset of the SNS client used.
type API interface {
	Publish(context.Context, *sns.PublishInput, ...func(*sns.Options)) (*sns.PublishOutput, error)
}

var _ API = (*sns.Client)(nil)

// Config is the sender's fixed configuration.
type Config struct {
	SenderID string // optional alphanumeric sender id
}

// Provider sends SMS through SNS.
type Provider struct {
	api API
	cfg Config
}

var _ worker.Provider = (*Provider)(nil)

// New returns an SNS SMS provider.
func New(api API, cfg Config) *Provider { return &Provider{api: api, cfg: cfg} }

// Channel implements worker.Provider.
func (p *Provider) Channel() domain.Channel { return domain.ChannelSMS }

// SMSType is Transactional for high and normal priority (routed for
// reliability), Promotional for low (routed for cost).
func SMSType(pr domain.Priority) string {
	if pr == domain.PriorityLow {
		return "Promotional"
	}
	return "Transactional"
}

// Send implements worker.Provider.
func (p *Provider) Send(ctx context.Context, m *worker.Message) (string, error) {
	attrs := map[string]types.MessageAttributeValue{
		"AWS.SNS.SMS.SMSType": {DataType: aws.String("String"), StringValue: aws.String(SMSType(m.Notification.Priority))},
	}
	if p.cfg.SenderID != "" {
		attrs["AWS.SNS.SMS.SenderID"] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(p.cfg.SenderID)}
	}
	out, err := p.api.Publish(ctx, &sns.PublishInput{
		PhoneNumber: aws.String(m.Contact), Message: aws.String(m.Content.Text), MessageAttributes: attrs,
	})
	if err != nil {
		return "", classify(err)
	}
	return aws.ToString(out.MessageId), nil
}

func classify(err error) error {
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "InvalidParameter", "InvalidParameterValue", "AuthorizationError":
			return &worker.ProviderError{Reason: domain.ReasonRejected, Code: api.ErrorCode(), Err: err}
		}
		return &worker.ProviderError{Transient: true, Code: api.ErrorCode(), Err: fmt.Errorf("sns publish: %w", err)}
	}
	return &worker.ProviderError{Transient: true, Code: "transport", Err: fmt.Errorf("sns publish: %w", err)}
}
