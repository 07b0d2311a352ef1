// Package email is the SES v2 provider of the email worker.
package email

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"
	"github.com/aws/smithy-go"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/worker"
)

// API is the subset of the SES v2 client used.
type API interface {
	SendEmail(context.Context, *sesv2.SendEmailInput, ...func(*sesv2.Options)) (*sesv2.SendEmailOutput, error)
}

var _ API = (*sesv2.Client)(nil)

// Config is the sender's fixed configuration.
type Config struct {
	From             string
	ConfigurationSet string // optional
}

// Provider sends email through SES v2.
type Provider struct {
	api API
	cfg Config
}

var _ worker.Provider = (*Provider)(nil)

// New returns an SES provider.
func New(api API, cfg Config) *Provider { return &Provider{api: api, cfg: cfg} }

// Channel implements worker.Provider.
func (p *Provider) Channel() domain.Channel { return domain.ChannelEmail }

// Send implements worker.Provider.
func (p *Provider) Send(ctx context.Context, m *worker.Message) (string, error) {
	in := &sesv2.SendEmailInput{
		FromEmailAddress: aws.String(p.cfg.From),
		Destination:      &types.Destination{ToAddresses: []string{m.Contact}},
		Content: &types.EmailContent{Simple: &types.Message{
			Subject: &types.Content{Data: aws.String(m.Content.Subject), Charset: aws.String("UTF-8")},
			Body: &types.Body{
				Text: &types.Content{Data: aws.String(m.Content.Text), Charset: aws.String("UTF-8")},
				Html: &types.Content{Data: aws.String(m.Content.HTML), Charset: aws.String("UTF-8")},
			},
		}},
		// Tags identify the notification in SES events; they never carry PII.
		EmailTags: []types.MessageTag{
			{Name: aws.String("notificationId"), Value: aws.String(m.Notification.ID)},
			{Name: aws.String("type"), Value: aws.String(tagValue(m.Notification.Type))},
		},
	}
	if p.cfg.ConfigurationSet != "" {
		in.ConfigurationSetName = aws.String(p.cfg.ConfigurationSet)
	}
	out, err := p.api.SendEmail(ctx, in)
	if err != nil {
		return "", classify(err)
	}
	return aws.ToString(out.MessageId), nil
}

// tagValue keeps SES's allowed tag characters (letters, digits, _ and -).
func tagValue(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

// permanentCodes are SES errors that retrying cannot fix.
var permanentCodes = map[string]bool{
	"MessageRejected": true, "MailFromDomainNotVerifiedException": true, "MailFromDomainNotVerified": true,
	"BadRequestException": true, "BadRequest": true, "NotFoundException": true, "NotFound": true,
	"AccountSuspendedException": true, "AccountSuspended": true, "SendingPausedException": true, "SendingPaused": true,
}

func classify(err error) error {
	var api smithy.APIError
	if errors.As(err, &api) && permanentCodes[api.ErrorCode()] {
		return &worker.ProviderError{Transient: false, Reason: domain.ReasonRejected, Code: api.ErrorCode(), Err: err}
	}
	code := "transport"
	if errors.As(err, &api) {
		code = api.ErrorCode()
	}
	return &worker.ProviderError{Transient: true, Code: code, Err: fmt.Errorf("ses send: %w", err)}
}
