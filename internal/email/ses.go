// Package email is the SES v2 provider of the email worker.
package email

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"
	"github.com/aws/smithy-go"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/sendretry"
)

// API is the subset of the SES v2 client used.
type API interface {
	SendEmail(context.Context, *sesv2.SendEmailInput, ...func(*sesv2.Options)) (*sesv2.SendEmailOutput, error)
}

var _ API = (*sesv2.Client)(nil)

// UnsubscribeLinks makes the signed one-click unsubscribe URL for a user and
// notification type (the signing key may be fetched on first use).
type UnsubscribeLinks interface {
	URL(ctx context.Context, userID, notificationType string) (string, error)
}

// Config is the sender's fixed configuration.
type Config struct {
	From             string
	ConfigurationSet string // optional; its event destination feeds the feedback function
	// Unsubscribe, when set, adds RFC 8058 one-click unsubscribe headers to
	// every email of a non-mandatory type.
	Unsubscribe UnsubscribeLinks
}

// Provider sends email through SES v2.
type Provider struct {
	api API
	cfg Config
}

var _ channel.Provider = (*Provider)(nil)

// New returns an SES provider.
func New(api API, cfg Config) *Provider { return &Provider{api: api, cfg: cfg} }

// Channel implements channel.Provider.
func (p *Provider) Channel() domain.Channel { return domain.ChannelEmail }

// Tag names set on every email; SES events carry them back to the feedback
// function. They never carry PII.
const (
	TagNotificationID = domain.EmailTagNotificationID
	TagType           = "type"
	TagDueAt          = domain.EmailTagDueAt
)

// Send implements channel.Provider.
func (p *Provider) Send(ctx context.Context, m *channel.Message) (string, error) {
	in, err := p.input(ctx, m)
	if err != nil {
		return "", &channel.ProviderError{Transient: true, Code: "unsubscribe_link", Err: err}
	}
	out, err := p.api.SendEmail(ctx, in)
	if err != nil {
		return "", Classify(err)
	}
	return aws.ToString(out.MessageId), nil
}

func (p *Provider) input(ctx context.Context, m *channel.Message) (*sesv2.SendEmailInput, error) {
	msg := &types.Message{
		Subject: &types.Content{Data: aws.String(m.Content.Subject), Charset: aws.String("UTF-8")},
		Body: &types.Body{
			Text: &types.Content{Data: aws.String(m.Content.Text), Charset: aws.String("UTF-8")},
			Html: &types.Content{Data: aws.String(m.Content.HTML), Charset: aws.String("UTF-8")},
		},
	}
	if p.cfg.Unsubscribe != nil && !m.Type.Mandatory {
		// RFC 8058: the HTTPS URI in List-Unsubscribe receives a POST with
		// the body "List-Unsubscribe=One-Click"; mailbox providers require
		// both headers from bulk senders. Mandatory types (security, codes)
		// cannot be turned off, so they carry no unsubscribe link.
		url, err := p.cfg.Unsubscribe.URL(ctx, m.Notification.Recipient.UserID, m.Notification.Type)
		if err != nil {
			return nil, err
		}
		msg.Headers = []types.MessageHeader{
			{Name: aws.String("List-Unsubscribe"), Value: aws.String("<" + url + ">")},
			{Name: aws.String("List-Unsubscribe-Post"), Value: aws.String("List-Unsubscribe=One-Click")},
		}
	}
	in := &sesv2.SendEmailInput{
		FromEmailAddress: aws.String(p.cfg.From),
		Destination:      &types.Destination{ToAddresses: []string{m.Contact}},
		Content:          &types.EmailContent{Simple: msg},
		EmailTags: []types.MessageTag{
			{Name: aws.String(TagNotificationID), Value: aws.String(tagValue(m.Notification.ID))},
			{Name: aws.String(TagType), Value: aws.String(tagValue(m.Notification.Type))},
			{Name: aws.String(TagDueAt), Value: aws.String(strconv.FormatInt(m.Notification.DueAt().UnixMilli(), 10))},
		},
	}
	if p.cfg.ConfigurationSet != "" {
		in.ConfigurationSetName = aws.String(p.cfg.ConfigurationSet)
	}
	return in, nil
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

// Retryer is the SDK retry policy of the SES client. SendEmail has no
// idempotency token: sendretry retries only what SES provably did not send.
func Retryer() aws.Retryer { return sendretry.New() }

// errorClass is how an SES error code is handled.
type errorClass struct {
	transient bool
	alert     bool // the account cannot send: an operator must act
}

// account is the class of a condition of the account or its configuration:
// no recipient is at fault and every email fails alike, so it is never a
// permanent failure of the delivery. Retried (then parked in the DLQ for a
// redrive once fixed), with the operator's alert.
var account = errorClass{transient: true, alert: true}

// sesErrors classifies the SendEmail errors of the SES v2 API model by code
// (the SDK reports the modelled name; both spellings are listed).
var sesErrors = map[string]errorClass{
	// Retrying later can succeed.
	"TooManyRequestsException": {transient: true}, "TooManyRequests": {transient: true},
	"LimitExceededException": {transient: true}, "LimitExceeded": {transient: true},
	"Throttling": {transient: true}, "ThrottlingException": {transient: true},
	"InternalFailure": {transient: true}, "ServiceUnavailable": {transient: true},
	// This message is wrong: retrying cannot fix it.
	"MessageRejected":     {},
	"BadRequestException": {}, "BadRequest": {},
	// The account cannot send at all (sending paused for the account or the
	// configuration set, the account suspended), or its configuration is
	// broken (the MAIL FROM domain unverified, the configuration set gone).
	"AccountSuspendedException": account, "AccountSuspended": account,
	"SendingPausedException": account, "SendingPaused": account,
	"MailFromDomainNotVerifiedException": account, "MailFromDomainNotVerified": account,
	"NotFoundException": account, "NotFound": account,
}

// Classify turns an SES SendEmail error into a *channel.ProviderError:
// modelled codes by the table above; everything else — 5xx, timeouts,
// connection errors, and codes not in the table (e.g. AccessDenied after an
// IAM mistake) — transient: after the retries it ends in the DLQ, where an
// operator can redrive it once the cause is fixed, instead of failing for good.
func Classify(err error) error {
	code := "transport"
	var api smithy.APIError
	if errors.As(err, &api) {
		code = api.ErrorCode()
		if c, ok := sesErrors[code]; ok {
			if c.transient {
				return &channel.ProviderError{Transient: true, Code: code, Alert: c.alert, Err: fmt.Errorf("ses send: %w", err)}
			}
			return &channel.ProviderError{Reason: domain.ReasonRejected, Code: code, Err: fmt.Errorf("ses send: %w", err)}
		}
	}
	return &channel.ProviderError{Transient: true, Code: code, Unknown: code == "transport" && sendretry.OutcomeUnknown(err), Err: fmt.Errorf("ses send: %w", err)}
}
