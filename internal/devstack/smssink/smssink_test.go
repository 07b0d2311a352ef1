package smssink_test

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/smithy-go"

	"github.com/heraldhq/herald/internal/devstack/smssink"
)

var fixedNow = time.Date(2026, 7, 4, 10, 30, 0, 0, time.UTC)

// startSink mounts the sink the way the dev runner does: the SNS API under
// /_dev/sns and the listing at /_dev/sms.
func startSink(t *testing.T) (*smssink.Sink, *httptest.Server) {
	t.Helper()
	sink := smssink.New(func() time.Time { return fixedNow })
	mux := http.NewServeMux()
	mux.Handle("/_dev/sns", sink.APIHandler())
	mux.Handle("/_dev/sms", sink.ListHandler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return sink, srv
}

// newClient is the production SNS client pointed at the sink. attempts 1
// turns SDK retries off so each call meets exactly one injected fault.
func newClient(srv *httptest.Server, attempts int) *sns.Client {
	cfg := aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDLOCAL", "local-secret", ""),
		HTTPClient:  srv.Client(),
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = attempts
				o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
			})
		},
	}
	return sns.NewFromConfig(cfg, func(o *sns.Options) { o.BaseEndpoint = aws.String(srv.URL + "/_dev/sns") })
}

func smsAttributes(smsType, senderID string) map[string]types.MessageAttributeValue {
	attrs := map[string]types.MessageAttributeValue{}
	if smsType != "" {
		attrs["AWS.SNS.SMS.SMSType"] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(smsType)}
	}
	if senderID != "" {
		attrs["AWS.SNS.SMS.SenderID"] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(senderID)}
	}
	return attrs
}

func TestPublishWithTheRealSDK(t *testing.T) {
	sink, srv := startSink(t)
	client := newClient(srv, 1)

	out, err := client.Publish(context.Background(), &sns.PublishInput{
		PhoneNumber:       aws.String("+15551234567"),
		Message:           aws.String("Your code is 123456 — valid for 10 minutes"),
		MessageAttributes: smsAttributes("Transactional", "Herald"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if requestID, ok := awsmiddleware.GetRequestIDMetadata(out.ResultMetadata); !ok || requestID == "" {
		t.Error("SDK found no request id")
	}
	msgs := sink.Messages()
	if len(msgs) != 1 {
		t.Fatalf("captured %d messages, want 1", len(msgs))
	}
	got := msgs[0]
	want := smssink.Message{
		To: "+15551234567", Text: "Your code is 123456 — valid for 10 minutes", Type: "Transactional",
		SenderID: "Herald", MessageID: aws.ToString(out.MessageId), At: fixedNow, Provider: smssink.ProviderSNS,
	}
	if got.Attributes["AWS.SNS.SMS.SMSType"] != "Transactional" || got.Attributes["AWS.SNS.SMS.SenderID"] != "Herald" {
		t.Errorf("Attributes = %v", got.Attributes)
	}
	got.Attributes = nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("captured %+v\nwant     %+v", got, want)
	}

	// Without attributes, type and sender id are empty.
	if _, err := client.Publish(context.Background(), &sns.PublishInput{PhoneNumber: aws.String("+447700900123"), Message: aws.String("hi")}); err != nil {
		t.Fatal(err)
	}
	if m := sink.Messages()[0]; m.To != "+447700900123" || m.Type != "" || m.SenderID != "" {
		t.Fatalf("newest = %+v", m)
	}
}

func TestSDKSeesSNSErrors(t *testing.T) {
	sink, srv := startSink(t)
	client := newClient(srv, 1)
	publish := func(number, text string, attrs map[string]types.MessageAttributeValue) error {
		_, err := client.Publish(context.Background(), &sns.PublishInput{PhoneNumber: aws.String(number), Message: aws.String(text), MessageAttributes: attrs})
		return err
	}
	httpStatus := func(err error) int {
		var re *awshttp.ResponseError
		if errors.As(err, &re) {
			return re.HTTPStatusCode()
		}
		return 0
	}

	t.Run("invalid phone number", func(t *testing.T) {
		for _, number := range []string{"5551234567", "+05551234567", "+1555123456789012", "+1 555 123", "+1"} {
			err := publish(number, "x", nil)
			var invalid *types.InvalidParameterException
			if !errors.As(err, &invalid) || httpStatus(err) != 400 {
				t.Errorf("%q: err = %v, want InvalidParameterException 400", number, err)
			}
			if err != nil && strings.Contains(err.Error(), number) {
				t.Errorf("%q: error message repeats the phone number: %v", number, err)
			}
		}
	})
	t.Run("invalid attribute values", func(t *testing.T) {
		for _, attrs := range []map[string]types.MessageAttributeValue{
			smsAttributes("Urgent", ""),
			smsAttributes("", "Way-Too-Long-Sender"),
			smsAttributes("", "12345"),
			smsAttributes("", "-Herald"),
			smsAttributes("", "Her ald"),
		} {
			var invalid *types.InvalidParameterValueException
			if err := publish("+15551234567", "x", attrs); !errors.As(err, &invalid) {
				t.Errorf("%v: err = %v, want InvalidParameterValueException", attrs, err)
			}
		}
		for _, ok := range []string{"H", "Herald", "HERALD-1", "A1234567890"} {
			if err := publish("+15551234567", "x", smsAttributes("Promotional", ok)); err != nil {
				t.Errorf("sender id %q rejected: %v", ok, err)
			}
		}
	})
	t.Run("injected faults", func(t *testing.T) {
		sink.Reset()
		sink.FailNext(1, smssink.FaultThrottling)
		sink.FailNext(1, smssink.FaultThrottled)
		sink.FailNext(2, smssink.FaultInternalError)
		sink.FailNext(1, smssink.FaultInvalidParameter)

		var apiErr smithy.APIError
		err := publish("+15551234567", "x", nil)
		if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "Throttling" || httpStatus(err) != 400 {
			t.Fatalf("1st: err = %v, want Throttling 400", err)
		}
		var throttled *types.ThrottledException
		if err := publish("+15551234567", "x", nil); !errors.As(err, &throttled) || httpStatus(err) != 429 {
			t.Fatalf("2nd: err = %v, want ThrottledException 429", err)
		}
		for i := range 2 {
			var internal *types.InternalErrorException
			if err := publish("+15551234567", "x", nil); !errors.As(err, &internal) || httpStatus(err) != 500 || internal.ErrorFault() != smithy.FaultServer {
				t.Fatalf("internal %d: err = %v, want InternalErrorException 500", i, err)
			}
		}
		var invalid *types.InvalidParameterException
		if err := publish("+15551234567", "x", nil); !errors.As(err, &invalid) {
			t.Fatalf("5th: err = %v, want InvalidParameterException", err)
		}
		if err := publish("+15551234567", "after the faults", nil); err != nil {
			t.Fatal(err)
		}
		if msgs := sink.Messages(); len(msgs) != 1 || msgs[0].Text != "after the faults" {
			t.Fatalf("captured %+v, want only the publish after the faults", msgs)
		}
	})
	t.Run("unsupported action", func(t *testing.T) {
		_, err := client.ListTopics(context.Background(), &sns.ListTopicsInput{})
		var apiErr smithy.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "InvalidAction" || httpStatus(err) != 400 {
			t.Fatalf("err = %v, want InvalidAction 400", err)
		}
	})
}

func TestSDKRetriesTransientFaults(t *testing.T) {
	sink, srv := startSink(t)
	client := newClient(srv, 3)
	publish := func() error {
		_, err := client.Publish(context.Background(), &sns.PublishInput{PhoneNumber: aws.String("+15551234567"), Message: aws.String("retried")})
		return err
	}
	for _, fault := range []smssink.Fault{smssink.FaultThrottling, smssink.FaultInternalError} {
		sink.Reset()
		sink.FailNext(2, fault)
		if err := publish(); err != nil {
			t.Fatalf("%s: the SDK did not retry through two faults: %v", fault, err)
		}
		if n := len(sink.Messages()); n != 1 {
			t.Fatalf("%s: %d messages, want 1", fault, n)
		}
	}

	// The SDK's standard retryer does not know SNS's modelled "Throttled"
	// code (only "ThrottledException", "Throttling", …), so a 429 from SNS
	// reaches the caller after one attempt: Herald's own classification
	// must treat types.ThrottledException as transient.
	sink.Reset()
	sink.FailNext(2, smssink.FaultThrottled)
	var throttled *types.ThrottledException
	if err := publish(); !errors.As(err, &throttled) {
		t.Fatalf("err = %v, want ThrottledException without SDK retries", err)
	}
	if err := publish(); !errors.As(err, &throttled) {
		t.Fatalf("second fault was consumed by an SDK retry: err = %v", err)
	}

	// One permanent fault: a retry would succeed, so an error proves none.
	sink.FailNext(1, smssink.FaultInvalidParameter)
	var invalid *types.InvalidParameterException
	if err := publish(); !errors.As(err, &invalid) {
		t.Fatalf("err = %v, want InvalidParameterException without SDK retries", err)
	}
}

func TestOptedOutNumberAcceptsPublishButDeliversNothing(t *testing.T) {
	sink, srv := startSink(t)
	client := newClient(srv, 1)
	const number = "+15557654321"
	isOptedOut := func() bool {
		out, err := client.CheckIfPhoneNumberIsOptedOut(context.Background(), &sns.CheckIfPhoneNumberIsOptedOutInput{PhoneNumber: aws.String(number)})
		if err != nil {
			t.Fatal(err)
		}
		return out.IsOptedOut
	}

	if isOptedOut() {
		t.Fatal("new number reported opted out")
	}
	sink.OptOut(number)
	if !isOptedOut() || !sink.IsOptedOut(number) {
		t.Fatal("OptOut not visible through CheckIfPhoneNumberIsOptedOut")
	}

	out, err := client.Publish(context.Background(), &sns.PublishInput{PhoneNumber: aws.String(number), Message: aws.String("dropped")})
	if err != nil || aws.ToString(out.MessageId) == "" {
		t.Fatalf("Publish to an opted-out number = %v, %v; real SNS accepts it with a MessageId", out, err)
	}
	if n := len(sink.Messages()); n != 0 {
		t.Fatalf("%d messages delivered to an opted-out number", n)
	}
	suppressed := sink.Suppressed()
	if len(suppressed) != 1 || suppressed[0].MessageID != aws.ToString(out.MessageId) || suppressed[0].SuppressedReason != "opted out" {
		t.Fatalf("Suppressed() = %+v", suppressed)
	}

	if _, err := client.OptInPhoneNumber(context.Background(), &sns.OptInPhoneNumberInput{PhoneNumber: aws.String(number)}); err != nil {
		t.Fatal(err)
	}
	if isOptedOut() {
		t.Fatal("OptInPhoneNumber did not opt the number back in")
	}
	if _, err := client.Publish(context.Background(), &sns.PublishInput{PhoneNumber: aws.String(number), Message: aws.String("delivered")}); err != nil {
		t.Fatal(err)
	}
	if msgs := sink.Messages(); len(msgs) != 1 || msgs[0].Text != "delivered" {
		t.Fatalf("Messages() = %+v", msgs)
	}

	for _, call := range []func() error{
		func() error {
			_, err := client.CheckIfPhoneNumberIsOptedOut(context.Background(), &sns.CheckIfPhoneNumberIsOptedOutInput{PhoneNumber: aws.String("555")})
			return err
		},
		func() error {
			_, err := client.OptInPhoneNumber(context.Background(), &sns.OptInPhoneNumberInput{PhoneNumber: aws.String("555")})
			return err
		},
	} {
		var invalid *types.InvalidParameterException
		if err := call(); !errors.As(err, &invalid) {
			t.Errorf("invalid number: err = %v, want InvalidParameterException", err)
		}
	}
}

// rawPublish posts a hand-written form, for cases the SDK cannot produce.
func rawPublish(t *testing.T, srv *httptest.Server, form url.Values) (int, http.Header, []byte) {
	t.Helper()
	resp, err := srv.Client().PostForm(srv.URL+"/_dev/sns", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, body
}

func TestWireFormat(t *testing.T) {
	sink, srv := startSink(t)
	status, header, body := rawPublish(t, srv, url.Values{
		"Action": {"Publish"}, "Version": {"2010-03-31"},
		"PhoneNumber": {"+15551234567"}, "Message": {"hello"},
		"MessageAttributes.entry.1.Name":              {"AWS.SNS.SMS.SMSType"},
		"MessageAttributes.entry.1.Value.DataType":    {"String"},
		"MessageAttributes.entry.1.Value.StringValue": {"Transactional"},
	})
	if status != 200 || header.Get("Content-Type") != "text/xml" {
		t.Fatalf("status %d, Content-Type %q", status, header.Get("Content-Type"))
	}
	var ok struct {
		XMLName   xml.Name
		MessageID string `xml:"PublishResult>MessageId"`
		RequestID string `xml:"ResponseMetadata>RequestId"`
	}
	if err := xml.Unmarshal(body, &ok); err != nil {
		t.Fatal(err)
	}
	if ok.XMLName.Space != "http://sns.amazonaws.com/doc/2010-03-31/" || ok.XMLName.Local != "PublishResponse" {
		t.Fatalf("root element %v in %s", ok.XMLName, body)
	}
	if ok.MessageID != sink.Messages()[0].MessageID || ok.RequestID != header.Get("x-amzn-RequestId") || len(ok.RequestID) != 36 {
		t.Fatalf("ids in %s do not match (header request id %q)", body, header.Get("x-amzn-RequestId"))
	}

	status, _, body = rawPublish(t, srv, url.Values{"Action": {"Publish"}, "PhoneNumber": {"12"}, "Message": {"x"}})
	var fail struct {
		XMLName xml.Name
		Type    string `xml:"Error>Type"`
		Code    string `xml:"Error>Code"`
		Message string `xml:"Error>Message"`
		Request string `xml:"RequestId"`
	}
	if err := xml.Unmarshal(body, &fail); err != nil {
		t.Fatal(err)
	}
	if status != 400 || fail.XMLName.Local != "ErrorResponse" || fail.Type != "Sender" || fail.Code != "InvalidParameter" || fail.Message == "" || fail.Request == "" {
		t.Fatalf("error answer %d %s", status, body)
	}
}

func TestPublishValidation(t *testing.T) {
	sink, srv := startSink(t)
	base := func(extra ...string) url.Values {
		v := url.Values{"Action": {"Publish"}, "PhoneNumber": {"+15551234567"}, "Message": {"hello"}}
		for i := 0; i+1 < len(extra); i += 2 {
			if extra[i+1] == "" {
				v.Del(extra[i])
			} else {
				v.Set(extra[i], extra[i+1])
			}
		}
		return v
	}
	attr := func(n int, name, dataType, value string) []string {
		p := fmt.Sprintf("MessageAttributes.entry.%d.", n)
		return []string{p + "Name", name, p + "Value.DataType", dataType, p + "Value.StringValue", value}
	}
	for _, tc := range []struct {
		name     string
		form     url.Values
		wantCode string // "" means accepted
		wantText string
	}{
		{name: "plain", form: base(), wantText: "hello"},
		{name: "1600 bytes", form: base("Message", strings.Repeat("a", 1600)), wantText: strings.Repeat("a", 1600)},
		{name: "json structure uses sms", form: base("MessageStructure", "json", "Message", `{"default":"d","sms":"s"}`), wantText: "s"},
		{name: "json structure falls back to default", form: base("MessageStructure", "json", "Message", `{"default":"d","email":"e"}`), wantText: "d"},
		{name: "custom attribute kept", form: base(attr(1, "AWS.MM.SMS.OriginationNumber", "String", "+15550001111")...), wantText: "hello"},
		{name: "no action", form: base("Action", ""), wantCode: "InvalidAction"},
		{name: "unknown action", form: base("Action", "DeleteTopic"), wantCode: "InvalidAction"},
		{name: "no phone number", form: base("PhoneNumber", ""), wantCode: "InvalidParameter"},
		{name: "topic instead of phone", form: base("PhoneNumber", "", "TopicArn", "arn:aws:sns:us-east-1:123456789012:t"), wantCode: "InvalidParameter"},
		{name: "phone and topic", form: base("TopicArn", "arn:aws:sns:us-east-1:123456789012:t"), wantCode: "InvalidParameter"},
		{name: "empty message", form: base("Message", ""), wantCode: "InvalidParameter"},
		{name: "1601 bytes", form: base("Message", strings.Repeat("a", 1601)), wantCode: "InvalidParameter"},
		{name: "invalid UTF-8", form: base("Message", "\xff"), wantCode: "InvalidParameter"},
		{name: "json structure without default", form: base("MessageStructure", "json", "Message", `{"sms":"s"}`), wantCode: "InvalidParameter"},
		{name: "json structure not json", form: base("MessageStructure", "json", "Message", `nope`), wantCode: "InvalidParameter"},
		{name: "SMSType as Number", form: base(attr(1, "AWS.SNS.SMS.SMSType", "Number", "1")...), wantCode: "ParameterValueInvalid"},
		{name: "attribute without name", form: base(attr(1, "", "String", "x")...), wantCode: "InvalidParameter"},
		{name: "attribute without value", form: base(attr(1, "a", "String", "")...), wantCode: "InvalidParameter"},
		{name: "attribute bad type", form: base(attr(1, "a", "Blob", "x")...), wantCode: "InvalidParameter"},
		{name: "attribute bad index", form: base("MessageAttributes.entry.x.Name", "a"), wantCode: "InvalidParameter"},
		{name: "duplicate attribute", form: base(append(attr(1, "a", "String", "x"), attr(2, "a", "String", "y")...)...), wantCode: "InvalidParameter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink.Reset()
			status, _, body := rawPublish(t, srv, tc.form)
			if tc.wantCode == "" {
				msgs := sink.Messages()
				if status != 200 || len(msgs) != 1 || msgs[0].Text != tc.wantText {
					t.Fatalf("status %d %s, captured %+v; want text %q", status, body, msgs, tc.wantText)
				}
				return
			}
			var fail struct {
				Code string `xml:"Error>Code"`
			}
			_ = xml.Unmarshal(body, &fail)
			if status != 400 || fail.Code != tc.wantCode {
				t.Fatalf("status %d %s, want 400 %s", status, body, tc.wantCode)
			}
			if len(sink.Messages())+len(sink.Suppressed()) != 0 {
				t.Fatal("a rejected publish was captured")
			}
		})
	}
}

func TestListHandler(t *testing.T) {
	sink, srv := startSink(t)
	client := newClient(srv, 1)
	for i, number := range []string{"+15550000001", "+15550000002", "+15550000003"} {
		if _, err := client.Publish(context.Background(), &sns.PublishInput{
			PhoneNumber: aws.String(number), Message: aws.String(fmt.Sprintf("message %d", i)), MessageAttributes: smsAttributes("Transactional", "Herald"),
		}); err != nil {
			t.Fatal(err)
		}
	}
	sink.OptOut("+15550000009")
	if _, err := client.Publish(context.Background(), &sns.PublishInput{PhoneNumber: aws.String("+15550000009"), Message: aws.String("stopped")}); err != nil {
		t.Fatal(err)
	}

	get := func(query string) []map[string]any {
		t.Helper()
		resp, err := srv.Client().Get(srv.URL + "/_dev/sms" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var list []map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("GET /_dev/sms%s = %d, %v", query, resp.StatusCode, err)
		}
		return list
	}
	list := get("")
	if len(list) != 3 || list[0]["to"] != "+15550000003" || list[2]["text"] != "message 0" {
		t.Fatalf("list = %v, want three messages newest first", list)
	}
	for _, key := range []string{"to", "text", "type", "senderId", "messageId", "at"} {
		if _, ok := list[0][key]; !ok {
			t.Errorf("listed message lacks %q", key)
		}
	}
	if list[0]["type"] != "Transactional" || list[0]["senderId"] != "Herald" || list[0]["at"] != fixedNow.Format(time.RFC3339) {
		t.Errorf("listed message = %v", list[0])
	}
	if s := get("?suppressed=true"); len(s) != 1 || s[0]["text"] != "stopped" || s[0]["suppressedReason"] != "opted out" {
		t.Fatalf("suppressed list = %v", s)
	}

	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/_dev/sms", nil)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || len(get("")) != 0 || len(get("?suppressed=1")) != 0 {
		t.Fatal("DELETE /_dev/sms did not clear the lists")
	}
	if !sink.IsOptedOut("+15550000009") {
		t.Fatal("Reset forgot an opt-out")
	}
	resp, err = srv.Client().Post(srv.URL+"/_dev/sms", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST /_dev/sms = %d, want 405", resp.StatusCode)
	}
}

func TestConcurrentPublishes(t *testing.T) {
	sink, srv := startSink(t)
	client := newClient(srv, 1)
	const workers, each = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				number := fmt.Sprintf("+1555%03d%04d", w, i)
				if _, err := client.Publish(context.Background(), &sns.PublishInput{PhoneNumber: aws.String(number), Message: aws.String("x")}); err != nil {
					errs <- err
				}
				if i%3 == 0 {
					sink.OptOut(number)
				}
				_ = sink.Messages()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := len(sink.Messages()); n != workers*each {
		t.Fatalf("%d messages, want %d", n, workers*each)
	}
}

func TestValidPhoneNumber(t *testing.T) {
	for number, want := range map[string]bool{
		"+15551234567":      true,
		"+447700900123":     true,
		"+12":               true,
		"+123456789012345":  true,
		"+1234567890123456": false,
		"+1":                false,
		"+0123":             false,
		"15551234567":       false,
		"+1 555 1234":       false,
		"+1-555-1234":       false,
		"":                  false,
		"+":                 false,
		"+١٢٣":              false,
	} {
		if got := smssink.ValidPhoneNumber(number); got != want {
			t.Errorf("ValidPhoneNumber(%q) = %v, want %v", number, got, want)
		}
	}
}
