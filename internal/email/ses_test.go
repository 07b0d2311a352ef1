package email

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"
	"github.com/aws/smithy-go"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/domain"
)

type fakeSES struct {
	in  *sesv2.SendEmailInput
	err error
}

func (f *fakeSES) SendEmail(_ context.Context, in *sesv2.SendEmailInput, _ ...func(*sesv2.Options)) (*sesv2.SendEmailOutput, error) {
	f.in = in
	if f.err != nil {
		return nil, f.err
	}
	return &sesv2.SendEmailOutput{MessageId: aws.String("ses-1")}, nil
}

type links struct{ err error }

func (l links) URL(_ context.Context, userID, typ string) (string, error) {
	return "https://api.example.com/v1/unsubscribe?token=" + userID + "." + typ, l.err
}

func message(t *testing.T, typ string) *channel.Message {
	t.Helper()
	ty, ok := catalog.MustLoad().Lookup(typ)
	if !ok {
		t.Fatalf("no type %s", typ)
	}
	return &channel.Message{
		Notification: &domain.Notification{ID: "n-1", Type: typ, Recipient: domain.Recipient{UserID: "u1"}, CreatedAt: time.UnixMilli(1796533200123)},
		Type:         ty,
		Content:      catalog.Content{Subject: "S", Text: "T", HTML: "<p>H</p>"},
		Contact:      "u1@example.com",
	}
}

func header(in *sesv2.SendEmailInput, name string) (string, bool) {
	for _, h := range in.Content.Simple.Headers {
		if aws.ToString(h.Name) == name {
			return aws.ToString(h.Value), true
		}
	}
	return "", false
}

func TestSendBuildsTheRequest(t *testing.T) {
	api := &fakeSES{}
	p := New(api, Config{From: "Herald <n@example.com>", ConfigurationSet: "herald-events", Unsubscribe: links{}})
	id, err := p.Send(context.Background(), message(t, "reservation.approved"))
	if err != nil || id != "ses-1" {
		t.Fatalf("Send = %q, %v", id, err)
	}
	in := api.in
	if aws.ToString(in.FromEmailAddress) != "Herald <n@example.com>" || aws.ToString(in.ConfigurationSetName) != "herald-events" ||
		len(in.Destination.ToAddresses) != 1 || in.Destination.ToAddresses[0] != "u1@example.com" {
		t.Errorf("envelope: %+v", in)
	}
	s := in.Content.Simple
	if aws.ToString(s.Subject.Data) != "S" || aws.ToString(s.Body.Text.Data) != "T" || aws.ToString(s.Body.Html.Data) != "<p>H</p>" {
		t.Errorf("content: %+v", s)
	}
	tags := map[string]string{}
	for _, tg := range in.EmailTags {
		tags[aws.ToString(tg.Name)] = aws.ToString(tg.Value)
	}
	if len(tags) != 3 || tags["notificationId"] != "n-1" || tags["type"] != "reservation_approved" || tags["dueAt"] != "1796533200123" {
		t.Errorf("tags %v: want notification id, type and due time (Unix ms) only", tags)
	}
	if v, _ := header(in, "List-Unsubscribe"); v != "<https://api.example.com/v1/unsubscribe?token=u1.reservation.approved>" {
		t.Errorf("List-Unsubscribe = %q", v)
	}
	if v, _ := header(in, "List-Unsubscribe-Post"); v != "List-Unsubscribe=One-Click" {
		t.Errorf("List-Unsubscribe-Post = %q", v)
	}
}

func TestMandatoryTypesHaveNoUnsubscribeLink(t *testing.T) {
	api := &fakeSES{}
	p := New(api, Config{From: "n@example.com", Unsubscribe: links{}})
	if _, err := p.Send(context.Background(), message(t, "security.login_alert")); err != nil {
		t.Fatal(err)
	}
	if _, ok := header(api.in, "List-Unsubscribe"); ok || api.in.ConfigurationSetName != nil {
		t.Errorf("mandatory type: headers %v, configuration set %v", api.in.Content.Simple.Headers, api.in.ConfigurationSetName)
	}
}

// TestUnsubscribeKeyUnavailableIsTransient: if the signing key cannot be
// read, the email is retried, never sent without its unsubscribe link.
func TestUnsubscribeKeyUnavailableIsTransient(t *testing.T) {
	api := &fakeSES{}
	_, err := New(api, Config{From: "n@example.com", Unsubscribe: links{err: errors.New("secrets manager unavailable")}}).Send(context.Background(), message(t, "reservation.approved"))
	var pe *channel.ProviderError
	if !errors.As(err, &pe) || !pe.Transient || api.in != nil {
		t.Fatalf("err = %v, sent = %v; want a transient error and no send", err, api.in != nil)
	}
}

func opErr(err error) error {
	return &smithy.OperationError{ServiceID: "SESv2", OperationName: "SendEmail", Err: err}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		transient bool
		alert     bool
		code      string
	}{
		{"message rejected", opErr(&types.MessageRejected{Message: aws.String("Email address is not verified.")}), false, false, "MessageRejected"},
		{"bad request", opErr(&types.BadRequestException{}), false, false, "BadRequestException"},
		// The account or its configuration cannot send: not the recipient's
		// fault, so never failed: the deliveries wait (retried, then parked
		// in the DLQ for a redrive) and the operator is alerted.
		{"mail from not verified", opErr(&types.MailFromDomainNotVerifiedException{}), true, true, "MailFromDomainNotVerifiedException"},
		{"not found (configuration set)", opErr(&types.NotFoundException{}), true, true, "NotFoundException"},
		{"account suspended", opErr(&types.AccountSuspendedException{}), true, true, "AccountSuspendedException"},
		{"sending paused", opErr(&types.SendingPausedException{}), true, true, "SendingPausedException"},
		{"too many requests", opErr(&types.TooManyRequestsException{}), true, false, "TooManyRequestsException"},
		{"limit exceeded", opErr(&types.LimitExceededException{}), true, false, "LimitExceededException"},
		{"generic throttling", opErr(&smithy.GenericAPIError{Code: "Throttling"}), true, false, "Throttling"},
		{"5xx", opErr(&smithy.GenericAPIError{Code: "InternalFailure", Fault: smithy.FaultServer}), true, false, "InternalFailure"},
		{"unknown code", opErr(&smithy.GenericAPIError{Code: "AccessDeniedException"}), true, false, "AccessDeniedException"},
		{"timeout", opErr(context.DeadlineExceeded), true, false, "transport"},
		{"connection refused", opErr(&net.OpError{Op: "dial", Err: errors.New("connection refused")}), true, false, "transport"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pe *channel.ProviderError
			if !errors.As(Classify(tt.err), &pe) {
				t.Fatalf("not a ProviderError")
			}
			if pe.Transient != tt.transient || pe.Alert != tt.alert || pe.Code != tt.code {
				t.Errorf("got transient=%v alert=%v code=%q, want %v %v %q", pe.Transient, pe.Alert, pe.Code, tt.transient, tt.alert, tt.code)
			}
			if !pe.Transient && pe.Reason != domain.ReasonRejected {
				t.Errorf("reason %q", pe.Reason)
			}
			if !errors.Is(pe, tt.err) {
				t.Error("cause not wrapped")
			}
			if strings.Contains(fmt.Sprint(pe), "u1@example.com") {
				t.Error("address in error")
			}
		})
	}
}
