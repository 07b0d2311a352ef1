package devstack

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	sestypes "github.com/aws/aws-sdk-go-v2/service/sesv2/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/smithy-go/middleware"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/devstack/pushsink"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/email"
	"github.com/heraldhq/herald/internal/sms"
)

// TestFaultMiddleware: injected faults reach the providers' classifiers as
// the real service errors would, one per operation call, without a request.
func TestFaultMiddleware(t *testing.T) {
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests++
		http.Error(w, "unexpected request", http.StatusTeapot)
	}))
	defer srv.Close()
	push, _ := pushsink.New(srv.URL, nil)
	f := NewFaults(push, time.Now)
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""), BaseEndpoint: aws.String(srv.URL),
		APIOptions: []func(*middleware.Stack) error{f.Middleware}}
	ses := sesv2.NewFromConfig(cfg)
	snsc := sns.NewFromConfig(cfg)
	sendEmail := func() error {
		_, err := ses.SendEmail(context.Background(), &sesv2.SendEmailInput{Content: &sestypes.EmailContent{}})
		return err
	}
	publish := func() error {
		_, err := snsc.Publish(context.Background(), &sns.PublishInput{Message: aws.String("x"), PhoneNumber: aws.String("+15550001111")})
		return err
	}
	classify := func(ch domain.Channel, err error) *channel.ProviderError {
		var pe *channel.ProviderError
		if ch == domain.ChannelEmail {
			errors.As(email.Classify(err), &pe)
		} else {
			errors.As(sms.Classify("publish", err), &pe)
		}
		return pe
	}
	tests := []struct {
		ch        domain.Channel
		mode      FaultMode
		call      func() error
		transient bool
		code      string
	}{
		{domain.ChannelEmail, FaultTransient, sendEmail, true, "TooManyRequestsException"},
		{domain.ChannelEmail, FaultPermanent, sendEmail, false, "MessageRejected"},
		{domain.ChannelSMS, FaultTransient, publish, true, "Throttled"},
		{domain.ChannelSMS, FaultPermanent, publish, false, "InvalidParameter"},
	}
	for _, tt := range tests {
		if err := f.Set(tt.ch, tt.mode, 2); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			pe := classify(tt.ch, tt.call())
			if pe == nil || pe.Transient != tt.transient || pe.Code != tt.code {
				t.Fatalf("%s %s call %d: %+v, want transient=%v code=%s", tt.ch, tt.mode, i, pe, tt.transient, tt.code)
			}
		}
		// The third call is real (and reaches the server).
		before := requests
		if err := tt.call(); err == nil || requests == before {
			t.Fatalf("%s: third call did not reach the service", tt.ch)
		}
	}
	if n := len(f.Hits(domain.ChannelEmail)); n != 4 {
		t.Errorf("%d email hits, want 4", n)
	}

	// Until off; other operations pass through.
	_ = f.Set(domain.ChannelEmail, FaultTransient, 0)
	for range 5 {
		if pe := classify(domain.ChannelEmail, sendEmail()); pe == nil || !pe.Transient {
			t.Fatal("fault until off stopped early")
		}
	}
	before := requests
	_, _ = ses.GetAccount(context.Background(), &sesv2.GetAccountInput{})
	if requests == before {
		t.Error("a fault hit an operation other than SendEmail")
	}
	_ = f.Set(domain.ChannelEmail, FaultOff, 0)
	before = requests
	_ = sendEmail()
	if requests == before {
		t.Error("fault still active after off")
	}

	for _, bad := range []struct {
		ch   domain.Channel
		mode FaultMode
	}{{"fax", FaultTransient}, {domain.ChannelSMS, "sometimes"}} {
		if err := f.Set(bad.ch, bad.mode, 1); err == nil {
			t.Errorf("Set(%s, %s) = %v", bad.ch, bad.mode, err)
		}
	}
}
