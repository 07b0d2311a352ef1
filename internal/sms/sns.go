// Package sms holds the SMS worker's providers: SNS (this file) and AWS End
// User Messaging SMS (smsvoice.go), either one the primary, the other its
// failover (issue 38).
//
// Opt-outs: SNS accepts a Publish to a number that replied STOP and drops the
// message afterwards (only the delivery-status log says so), so Publish
// errors never reveal an opt-out. The provider asks
// CheckIfPhoneNumberIsOptedOut first and records dropped: opted_out without
// publishing.
package sms

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/smithy-go"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/sendretry"
)

// API is the subset of the SNS client used.
type API interface {
	CheckIfPhoneNumberIsOptedOut(context.Context, *sns.CheckIfPhoneNumberIsOptedOutInput, ...func(*sns.Options)) (*sns.CheckIfPhoneNumberIsOptedOutOutput, error)
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

var (
	_ channel.Provider      = (*Provider)(nil)
	_ channel.ContentBudget = (*Provider)(nil)
)

// New returns an SNS SMS provider.
func New(api API, cfg Config) *Provider { return &Provider{api: api, cfg: cfg} }

// Channel implements channel.Provider.
func (p *Provider) Channel() domain.Channel { return domain.ChannelSMS }

// Fits reports whether an SMS text fits one segment; the worker renders
// digests to this budget (fewer items, the rest counted).
func (p *Provider) Fits(c catalog.Content) bool { return fitsOneSegment(c) }

func fitsOneSegment(c catalog.Content) bool {
	fits, _, _ := catalog.SMSFitsOneSegment(c.Text)
	return fits
}

// SMSType is Transactional for high and normal priority (routed for
// reliability), Promotional for low (routed for cost).
func SMSType(pr domain.Priority) string {
	if pr == domain.PriorityLow {
		return "Promotional"
	}
	return "Transactional"
}

// Send implements channel.Provider.
func (p *Provider) Send(ctx context.Context, m *channel.Message) (string, error) {
	check, err := p.api.CheckIfPhoneNumberIsOptedOut(ctx, &sns.CheckIfPhoneNumberIsOptedOutInput{PhoneNumber: aws.String(m.Contact)})
	if err != nil {
		// Nothing is sent by the check: its lost answer is no unknown send.
		pe := Classify("sns opt-out check", err).(*channel.ProviderError)
		pe.Unknown = false
		return "", pe
	}
	if check.IsOptedOut {
		return "", &channel.ProviderError{Drop: true, Reason: domain.ReasonOptedOut, Code: "opted_out", Err: errors.New("phone number opted out of SMS")}
	}
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
		return "", Classify("sns publish", err)
	}
	return aws.ToString(out.MessageId), nil
}

// permanentCodes are SNS errors that retrying this message cannot fix: a
// malformed number or attribute. Everything else (Throttling, Throttled,
// InternalError, 5xx, timeouts, unknown codes) is transient and ends in the
// DLQ if it persists.
var permanentCodes = map[string]bool{
	"InvalidParameter": true, "InvalidParameterException": true,
	"InvalidParameterValue": true, "InvalidParameterValueException": true, "ParameterValueInvalid": true,
}

// accountCodes are conditions of the account, not of the number: the role
// may not publish (an IAM change), the request's signature is refused.
// Every SMS fails alike and none by the recipient's fault, so they are
// transient (retried, then parked in the DLQ for a redrive) with the
// operator's alert — never failed: rejected.
var accountCodes = map[string]bool{
	"AuthorizationError": true, "AuthorizationErrorException": true,
	"InvalidSecurity": true, "InvalidSecurityException": true,
}

// Classify turns an SNS error into a *channel.ProviderError.
func Classify(op string, err error) error {
	var api smithy.APIError
	if errors.As(err, &api) {
		code := api.ErrorCode()
		if permanentCodes[code] {
			return &channel.ProviderError{Reason: domain.ReasonRejected, Code: code, Err: fmt.Errorf("%s: %w", op, err)}
		}
		return &channel.ProviderError{Transient: true, Code: code, Alert: accountCodes[code], Err: fmt.Errorf("%s: %w", op, err)}
	}
	return &channel.ProviderError{Transient: true, Code: "transport", Unknown: sendretry.OutcomeUnknown(err), Err: fmt.Errorf("%s: %w", op, err)}
}

// Retryer is the SDK retry policy of the SNS client: sendretry's (Publish has
// no idempotency token, so only what SNS provably did not send is retried),
// also retrying SNS's modelled "Throttled" (429), which the SDK does not know
// as a throttle.
func Retryer() aws.Retryer { return sendretry.New("Throttled") }
