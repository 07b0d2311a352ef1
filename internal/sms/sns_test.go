package sms

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/smithy-go"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/devstack/smssink"
	"github.com/heraldhq/herald/internal/domain"
)

// sinkClient is the real SDK client talking to the local SNS sink, with the
// provider's retry policy.
func sinkClient(t *testing.T) (*sns.Client, *smssink.Sink) {
	t.Helper()
	sink := smssink.New(nil)
	srv := httptest.NewServer(sink.APIHandler())
	t.Cleanup(srv.Close)
	client := sns.New(sns.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
		Retryer:     Retryer(),
	})
	return client, sink
}

func message(pr domain.Priority, to string) *channel.Message {
	ty, _ := catalog.MustLoad().Lookup("otp.code")
	return &channel.Message{
		Notification: &domain.Notification{ID: "n1", Type: "otp.code", Priority: pr},
		Type:         ty, Content: catalog.Content{Text: "Your code is 123456"}, Contact: to,
	}
}

func TestSendThroughTheSink(t *testing.T) {
	client, sink := sinkClient(t)
	p := New(client, Config{SenderID: "Herald"})
	for _, tc := range []struct {
		pr   domain.Priority
		want string
	}{{domain.PriorityHigh, "Transactional"}, {domain.PriorityNormal, "Transactional"}, {domain.PriorityLow, "Promotional"}} {
		sink.Reset()
		id, err := p.Send(context.Background(), message(tc.pr, "+15550001111"))
		if err != nil || id == "" {
			t.Fatalf("%s: Send = %q, %v", tc.pr, id, err)
		}
		msgs := sink.Messages()
		if len(msgs) != 1 || msgs[0].To != "+15550001111" || msgs[0].Text != "Your code is 123456" || msgs[0].Type != tc.want || msgs[0].SenderID != "Herald" || msgs[0].MessageID != id {
			t.Fatalf("%s: captured %+v", tc.pr, msgs)
		}
	}
}

func TestOptedOutNumberIsDroppedWithoutPublishing(t *testing.T) {
	client, sink := sinkClient(t)
	sink.OptOut("+15550002222")
	_, err := New(client, Config{}).Send(context.Background(), message(domain.PriorityHigh, "+15550002222"))
	var pe *channel.ProviderError
	if !errors.As(err, &pe) || !pe.Drop || pe.Transient || pe.Reason != domain.ReasonOptedOut {
		t.Fatalf("err = %#v, want a drop with reason opted_out", err)
	}
	if n := len(sink.Messages()) + len(sink.Suppressed()); n != 0 {
		t.Fatalf("%d publishes, want none", n)
	}
}

// TestThrottledIsRetriedBySDK: SNS's "Throttled" (429) is retried by the
// client's retryer (the SDK's default does not), and each SDK attempt consumes
// one injected sink fault.
func TestThrottledIsRetriedBySDK(t *testing.T) {
	client, sink := sinkClient(t)
	sink.FailNext(2, smssink.FaultThrottled)
	if _, err := New(client, Config{}).Send(context.Background(), message(domain.PriorityHigh, "+15550003333")); err != nil {
		t.Fatalf("Send after two throttles = %v, want success on the third attempt", err)
	}
	sink.FailNext(3, smssink.FaultThrottled)
	_, err := New(client, Config{}).Send(context.Background(), message(domain.PriorityHigh, "+15550003333"))
	var pe *channel.ProviderError
	if !errors.As(err, &pe) || !pe.Transient || pe.Code != "Throttled" {
		t.Fatalf("err = %v, want transient Throttled once the SDK's 3 attempts are used", err)
	}
}

func TestInvalidParameterIsPermanent(t *testing.T) {
	client, _ := sinkClient(t)
	_, err := New(client, Config{}).Send(context.Background(), message(domain.PriorityHigh, "555-0101"))
	var pe *channel.ProviderError
	if !errors.As(err, &pe) || pe.Transient || pe.Code != "InvalidParameter" || pe.Reason != domain.ReasonRejected {
		t.Fatalf("err = %v, want permanent InvalidParameter", err)
	}
}

func TestClassify(t *testing.T) {
	op := func(err error) error {
		return &smithy.OperationError{ServiceID: "SNS", OperationName: "Publish", Err: err}
	}
	tests := []struct {
		err       error
		transient bool
		alert     bool
		code      string
	}{
		{op(&types.InvalidParameterException{}), false, false, "InvalidParameter"},
		{op(&types.InvalidParameterValueException{}), false, false, "ParameterValueInvalid"},
		// The account may not send (IAM, signature): every SMS would fail,
		// none by the recipient's fault — retried, parked, alerted.
		{op(&types.AuthorizationErrorException{}), true, true, "AuthorizationError"},
		{op(&types.InvalidSecurityException{}), true, true, "InvalidSecurity"},
		{op(&types.ThrottledException{}), true, false, "Throttled"},
		{op(&smithy.GenericAPIError{Code: "Throttling"}), true, false, "Throttling"},
		{op(&types.InternalErrorException{}), true, false, "InternalError"},
		{op(&types.KMSThrottlingException{}), true, false, "KMSThrottling"},
		{op(context.DeadlineExceeded), true, false, "transport"},
	}
	for _, tt := range tests {
		var pe *channel.ProviderError
		if !errors.As(Classify("sns publish", tt.err), &pe) || pe.Transient != tt.transient || pe.Alert != tt.alert || pe.Code != tt.code {
			t.Errorf("%v: got %+v, want transient=%v alert=%v code=%s", tt.err, pe, tt.transient, tt.alert, tt.code)
		}
	}
}

// Fits is the budget digests are rendered to: one segment.
func TestFitsOneSegment(t *testing.T) {
	p := New(nil, Config{})
	for text, want := range map[string]bool{
		strings.Repeat("a", 160): true,
		strings.Repeat("a", 161): false,
		strings.Repeat("確", 70):  true,
		strings.Repeat("確", 71):  false,
	} {
		if got := p.Fits(catalog.Content{Text: text}); got != want {
			t.Errorf("Fits(%d runes of %q) = %v, want %v", len([]rune(text)), text[:1], got, want)
		}
	}
}
