package sms

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/pinpointsmsvoicev2"
	"github.com/aws/aws-sdk-go-v2/service/pinpointsmsvoicev2/types"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/devstack/smssink"
	"github.com/heraldhq/herald/internal/domain"
)

const testIdentity = "arn:aws:sms-voice:us-east-1:000000000000:phone-number/phone-0123456789abcdef0123456789abcdef"

// voiceClient is the real SDK client talking to the sink's End User
// Messaging SMS endpoint, with the provider's retry policy (its backoff cut to 1 ms).
func voiceClient(t *testing.T, h http.Handler) *pinpointsmsvoicev2.Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return pinpointsmsvoicev2.New(pinpointsmsvoicev2.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
		Retryer:     retry.AddWithMaxBackoffDelay(VoiceRetryer(), time.Millisecond),
	})
}

func TestVoiceSendsThroughTheSink(t *testing.T) {
	sink := smssink.New(nil)
	sink.AddOriginationIdentity(testIdentity)
	p := NewVoice(voiceClient(t, sink.SMSVoiceHandler()), VoiceConfig{OriginationIdentity: testIdentity, ConfigurationSet: "herald"})
	for _, tc := range []struct {
		pr   domain.Priority
		want string
	}{{domain.PriorityHigh, "TRANSACTIONAL"}, {domain.PriorityNormal, "TRANSACTIONAL"}, {domain.PriorityLow, "PROMOTIONAL"}} {
		sink.Reset()
		id, err := p.Send(context.Background(), message(tc.pr, "+15550001111"))
		if err != nil || id == "" {
			t.Fatalf("%s: Send = %q, %v", tc.pr, id, err)
		}
		msgs := sink.Messages()
		if len(msgs) != 1 || msgs[0].To != "+15550001111" || msgs[0].Text != "Your code is 123456" || msgs[0].Type != tc.want ||
			msgs[0].Provider != smssink.ProviderSMSVoice || msgs[0].Origination != testIdentity || msgs[0].ConfigurationSet != "herald" || msgs[0].MessageID != id {
			t.Fatalf("%s: captured %+v", tc.pr, msgs)
		}
	}
}

// The sink answers as End User Messaging does; the provider classifies it.
func TestVoiceErrorsFromTheSink(t *testing.T) {
	sink := smssink.New(nil)
	sink.AddOriginationIdentity(testIdentity)
	sink.OptOut("+15550002222")
	send := func(identity, to string) error {
		_, err := NewVoice(voiceClient(t, sink.SMSVoiceHandler()), VoiceConfig{OriginationIdentity: identity}).Send(context.Background(), message(domain.PriorityHigh, to))
		return err
	}
	var pe *channel.ProviderError
	if err := send(testIdentity, "+15550002222"); !errors.As(err, &pe) || !pe.Drop || pe.Reason != domain.ReasonOptedOut {
		t.Errorf("opted out: %v; want dropped opted_out", err)
	}
	if err := send(testIdentity, "15550003333"); !errors.As(err, &pe) || pe.Transient || pe.Reason != domain.ReasonRejected || pe.Code != "ValidationException:INVALID_PARAMETER" {
		t.Errorf("malformed number: %v; want failed rejected", err)
	}
	if err := send(testIdentity+"x", "+15550003333"); !errors.As(err, &pe) || !pe.Transient || !pe.Alert || pe.Code != "ResourceNotFoundException" {
		t.Errorf("unknown identity: %v; want transient with an operator alert", err)
	}
	sink.FailNext(3, smssink.FaultThrottling) // the SDK's 3 attempts
	if err := send(testIdentity, "+15550003333"); !errors.As(err, &pe) || !pe.Transient || pe.Unknown || !pe.Throttle() {
		t.Errorf("throttled: %v; want a known transient throttle", err)
	}
	if n := len(sink.Messages()); n != 0 {
		t.Errorf("%d texts captured, want none", n)
	}
}

func TestClassifyVoice(t *testing.T) {
	type want struct {
		transient, alert, drop, unknown bool
		reason                          domain.Reason
	}
	retry, alert, rejected := want{transient: true}, want{transient: true, alert: true}, want{reason: domain.ReasonRejected}
	for _, tc := range []struct {
		name string
		err  error
		want want
	}{
		{"throttling", &types.ThrottlingException{}, retry},
		{"internal", &types.InternalServerException{}, retry},
		{"account disabled", &types.AccessDeniedException{Reason: types.AccessDeniedExceptionReasonAccountDisabled}, alert},
		{"spend limit", &types.ServiceQuotaExceededException{Reason: types.ServiceQuotaExceededExceptionReasonMonthlySpendLimitReachedForText}, alert},
		{"identity gone", &types.ResourceNotFoundException{ResourceType: types.ResourceTypePhoneNumber}, alert},
		{"identity not active", &types.ConflictException{Reason: types.ConflictExceptionReasonResourceNotActive}, alert},
		{"opted out", &types.ConflictException{Reason: types.ConflictExceptionReasonDestinationPhoneNumberOptedOut}, want{drop: true, reason: domain.ReasonOptedOut}},
		{"sandbox number", &types.ConflictException{Reason: types.ConflictExceptionReasonDestinationPhoneNumberNotVerified}, rejected},
		{"protect blocks", &types.ConflictException{Reason: types.ConflictExceptionReasonDestinationCountryBlockedByProtectConfiguration}, rejected},
		{"country blocked", &types.ValidationException{Reason: types.ValidationExceptionReasonDestinationCountryBlocked}, rejected},
		{"bad parameter", &types.ValidationException{Reason: types.ValidationExceptionReasonInvalidParameter}, rejected},
		{"bad identity arn", &types.ValidationException{Reason: types.ValidationExceptionReasonInvalidArn}, alert},
		{"answer lost", &net.OpError{Op: "read", Err: io.ErrUnexpectedEOF}, want{transient: true, unknown: true}},
		{"never connected", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, retry},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pe *channel.ProviderError
			if !errors.As(ClassifyVoice("send", tc.err), &pe) {
				t.Fatal("not a ProviderError")
			}
			got := want{transient: pe.Transient, alert: pe.Alert, drop: pe.Drop, unknown: pe.Unknown, reason: pe.Reason}
			if got != tc.want {
				t.Errorf("got %+v, want %+v (code %s)", got, tc.want, pe.Code)
			}
		})
	}
}
