// Package email is the SES v2 provider of the email worker.
package email

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"
	"github.com/aws/smithy-go"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/domain"
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

// Retryer is the SDK retry policy of the SES client: the standard retryer
// (3 attempts, throttling and 5xx answers) with backoff capped at 2 s, so
// that in-invocation retries stay well inside the function timeout; longer
// outages are the queue's backoff. SendEmail has no idempotency token, so of
// the connection errors the standard retryer retries, only those where the
// request never reached SES are retried here (see sentNothing); a request
// that got no answer may have been sent, and is left to the worker, which
// records the attempt and retries after its backoff (docs/decisions.md).
func Retryer() aws.Retryer {
	return retry.AddWithMaxBackoffDelay(retry.NewStandard(func(o *retry.StandardOptions) {
		o.Retryables = make([]retry.IsErrorRetryable, 0, len(retry.DefaultRetryables))
		for _, r := range retry.DefaultRetryables {
			if _, ok := r.(retry.RetryableConnectionError); ok {
				r = retry.IsErrorRetryableFunc(sentNothing)
			}
			o.Retryables = append(o.Retryables, r)
		}
	}), 2*time.Second)
}

// sentNothing decides the connection errors of a call: retryable when the
// request provably never reached SES — no connection was made (dial, DNS,
// refused), or the server closed an idle connection the request was written
// to (Go's keep-alive race: the server never read it) — and not retryable
// for any other connection error (reset, EOF or timeout after the request
// was written), where SES may have sent the email.
func sentNothing(err error) aws.Ternary {
	var conn interface{ ConnectionError() bool }
	var op *net.OpError
	var dns *net.DNSError
	switch {
	case errors.As(err, &op) && op.Op == "dial", errors.As(err, &dns) && !dns.IsNotFound:
		return aws.TrueTernary
	case strings.Contains(err.Error(), "server closed idle connection"), strings.Contains(err.Error(), "connection refused"):
		return aws.TrueTernary
	case errors.As(err, &conn) && conn.ConnectionError():
		return aws.FalseTernary
	}
	return aws.UnknownTernary
}

// errorClass is how an SES error code is handled.
type errorClass struct {
	transient bool
	alert     bool // the account cannot send: an operator must act
}

// sesErrors classifies the SendEmail errors of the SES v2 API model by code
// (the SDK reports the modelled name; both spellings are listed).
var sesErrors = map[string]errorClass{
	// Retrying later can succeed.
	"TooManyRequestsException": {transient: true}, "TooManyRequests": {transient: true},
	"LimitExceededException": {transient: true}, "LimitExceeded": {transient: true},
	"Throttling": {transient: true}, "ThrottlingException": {transient: true},
	"InternalFailure": {transient: true}, "ServiceUnavailable": {transient: true},
	// The message or the configuration is wrong: retrying cannot fix it.
	"MessageRejected":                    {},
	"MailFromDomainNotVerifiedException": {}, "MailFromDomainNotVerified": {},
	"BadRequestException": {}, "BadRequest": {},
	"NotFoundException": {}, "NotFound": {},
	// The account cannot send at all.
	"AccountSuspendedException": {alert: true}, "AccountSuspended": {alert: true},
	"SendingPausedException": {alert: true}, "SendingPaused": {alert: true},
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
				return &channel.ProviderError{Transient: true, Code: code, Err: fmt.Errorf("ses send: %w", err)}
			}
			return &channel.ProviderError{Reason: domain.ReasonRejected, Code: code, Alert: c.alert, Err: fmt.Errorf("ses send: %w", err)}
		}
	}
	return &channel.ProviderError{Transient: true, Code: code, Err: fmt.Errorf("ses send: %w", err)}
}
