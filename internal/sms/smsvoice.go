package sms

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/pinpointsmsvoicev2"
	"github.com/aws/aws-sdk-go-v2/service/pinpointsmsvoicev2/types"
	"github.com/aws/smithy-go"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/sendretry"
)

// VoiceAPI is the subset of the AWS End User Messaging SMS (pinpoint-sms-voice-v2)
// client used.
type VoiceAPI interface {
	SendTextMessage(context.Context, *pinpointsmsvoicev2.SendTextMessageInput, ...func(*pinpointsmsvoicev2.Options)) (*pinpointsmsvoicev2.SendTextMessageOutput, error)
}

var _ VoiceAPI = (*pinpointsmsvoicev2.Client)(nil)

// VoiceConfig is the End User Messaging sender's fixed configuration.
type VoiceConfig struct {
	// OriginationIdentity is the ARN of the phone number, pool or sender ID
	// the texts go out from (the grant of sms-voice:SendTextMessage names it).
	OriginationIdentity string
	// ConfigurationSet is an optional configuration set name (its event
	// destinations log each text's delivery).
	ConfigurationSet string
}

// Voice sends SMS through AWS End User Messaging SMS (SendTextMessage): the
// SMS channel's second provider beside SNS (issue 38). Unlike SNS it refuses
// a text to an opted-out number itself (ConflictException
// DESTINATION_PHONE_NUMBER_OPTED_OUT), so it needs no opt-out check first.
type Voice struct {
	api VoiceAPI
	cfg VoiceConfig
}

var (
	_ channel.Provider      = (*Voice)(nil)
	_ channel.ContentBudget = (*Voice)(nil)
)

// NewVoice returns an End User Messaging SMS provider.
func NewVoice(api VoiceAPI, cfg VoiceConfig) *Voice { return &Voice{api: api, cfg: cfg} }

// Channel implements channel.Provider.
func (p *Voice) Channel() domain.Channel { return domain.ChannelSMS }

// Fits reports whether an SMS text fits one segment, as SNS's (Provider.Fits).
func (p *Voice) Fits(c catalog.Content) bool { return fitsOneSegment(c) }

// MessageType is TRANSACTIONAL for high and normal priority, PROMOTIONAL for
// low: End User Messaging's names for SNS's SMSType (SMSType).
func MessageType(pr domain.Priority) types.MessageType {
	if pr == domain.PriorityLow {
		return types.MessageTypePromotional
	}
	return types.MessageTypeTransactional
}

// Send implements channel.Provider.
func (p *Voice) Send(ctx context.Context, m *channel.Message) (string, error) {
	in := &pinpointsmsvoicev2.SendTextMessageInput{
		DestinationPhoneNumber: aws.String(m.Contact),
		MessageBody:            aws.String(m.Content.Text),
		MessageType:            MessageType(m.Notification.Priority),
	}
	if p.cfg.OriginationIdentity != "" {
		in.OriginationIdentity = aws.String(p.cfg.OriginationIdentity)
	}
	if p.cfg.ConfigurationSet != "" {
		in.ConfigurationSetName = aws.String(p.cfg.ConfigurationSet)
	}
	out, err := p.api.SendTextMessage(ctx, in)
	if err != nil {
		return "", ClassifyVoice("sms-voice send", err)
	}
	return aws.ToString(out.MessageId), nil
}

// recipientConflicts are ConflictException reasons about the destination
// number: retrying it, or sending it through SNS, cannot help.
var recipientConflicts = map[types.ConflictExceptionReason]bool{
	types.ConflictExceptionReasonDestinationPhoneNumberNotVerified:                    true, // the account's sandbox
	types.ConflictExceptionReasonDestinationCountryBlockedByProtectConfiguration:      true,
	types.ConflictExceptionReasonDestinationPhoneNumberBlockedByProtectNumberOverride: true,
}

// configValidation are ValidationException reasons that say the stack's own
// configuration is wrong (the identity's ARN, a channel not enabled on it),
// not the message: every text fails alike.
var configValidation = map[types.ValidationExceptionReason]bool{
	types.ValidationExceptionReasonInvalidArn:            true,
	types.ValidationExceptionReasonChannelNotEnabled:     true,
	types.ValidationExceptionReasonMissingParameter:      true,
	types.ValidationExceptionReasonUnknownOperation:      true,
	types.ValidationExceptionReasonSenderIdNotRegistered: true,
}

// ClassifyVoice turns an End User Messaging SMS error into a
// *channel.ProviderError, from SendTextMessage's errors in the API reference:
//
//   - ThrottlingException, InternalServerException: transient (the provider
//     did not send; a breaker counts it, HIGH fails over at once).
//   - AccessDeniedException (the account disabled, its reputation too low),
//     ServiceQuotaExceededException (e.g. the monthly spend limit reached),
//     ResourceNotFoundException (the origination identity or configuration
//     set is gone) and a ConflictException about the identity (not active,
//     a message type or keyword mismatch): conditions of the account, not of
//     the number — transient with an operator alert, never failed: rejected
//     (and a reason to fail over to SNS).
//   - ConflictException DESTINATION_PHONE_NUMBER_OPTED_OUT: dropped
//     opted_out, as SNS's opt-out check; the other recipient conflicts (an
//     unverified number in the sandbox, a protect configuration blocking
//     it): failed rejected, never failed over.
//   - ValidationException: the message or number is malformed — failed
//     rejected — unless its reason names the configuration (configValidation).
//   - Anything else answered by the service: transient; no answer at all:
//     transient, its outcome unknown unless nothing was sent (sendretry).
func ClassifyVoice(op string, err error) error {
	wrapped := fmt.Errorf("%s: %w", op, err)
	var (
		api      smithy.APIError
		conflict *types.ConflictException
		invalid  *types.ValidationException
	)
	switch {
	case errors.As(err, &conflict):
		code := "ConflictException:" + string(conflict.Reason)
		switch {
		case conflict.Reason == types.ConflictExceptionReasonDestinationPhoneNumberOptedOut:
			return &channel.ProviderError{Drop: true, Reason: domain.ReasonOptedOut, Code: "opted_out", Err: wrapped}
		case recipientConflicts[conflict.Reason]:
			return &channel.ProviderError{Reason: domain.ReasonRejected, Code: code, Err: wrapped}
		}
		return &channel.ProviderError{Transient: true, Alert: true, Code: code, Err: wrapped}
	case errors.As(err, &invalid):
		code := "ValidationException:" + string(invalid.Reason)
		if configValidation[invalid.Reason] {
			return &channel.ProviderError{Transient: true, Alert: true, Code: code, Err: wrapped}
		}
		return &channel.ProviderError{Reason: domain.ReasonRejected, Code: code, Err: wrapped}
	case errors.As(err, &api):
		code := api.ErrorCode()
		return &channel.ProviderError{Transient: true, Alert: voiceAccountCodes[code], Code: code, Err: wrapped}
	}
	return &channel.ProviderError{Transient: true, Code: "transport", Unknown: sendretry.OutcomeUnknown(err), Err: wrapped}
}

// voiceAccountCodes are End User Messaging errors about the account or the
// stack's resources: every text fails alike, an operator must act.
var voiceAccountCodes = map[string]bool{
	"AccessDeniedException": true, "ServiceQuotaExceededException": true, "ResourceNotFoundException": true,
}

// VoiceRetryer is the SDK retry policy of the End User Messaging client:
// sendretry's, as for SNS — SendTextMessage has no idempotency token either.
func VoiceRetryer() aws.Retryer { return sendretry.New() }
