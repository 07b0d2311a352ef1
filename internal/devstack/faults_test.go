package devstack

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/pinpointsmsvoicev2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	sestypes "github.com/aws/aws-sdk-go-v2/service/sesv2/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/smithy-go/middleware"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/devstack/pushsink"
	"github.com/heraldhq/herald/internal/devstack/smssink"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/email"
	pushpkg "github.com/heraldhq/herald/internal/push"
	"github.com/heraldhq/herald/internal/sms"
	"github.com/heraldhq/herald/internal/snspush"
)

// faultedConfig is an injector and an aws.Config that runs it, whose
// requests reach a server that counts them in served and answers 418.
func faultedConfig(t *testing.T, served *atomic.Int32) (*Faults, aws.Config) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		http.Error(w, "unexpected request", http.StatusTeapot)
	}))
	t.Cleanup(srv.Close)
	push, _ := pushsink.New(srv.URL, nil)
	f := NewFaults(push, time.Now)
	return f, aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""), BaseEndpoint: aws.String(srv.URL),
		APIOptions: []func(*middleware.Stack) error{f.Middleware}}
}

// TestFaultMiddleware: injected faults reach the providers' classifiers as
// the real service errors would, one per operation call, without a request.
func TestFaultMiddleware(t *testing.T) {
	var served atomic.Int32
	f, cfg := faultedConfig(t, &served)
	requests := func() int { return int(served.Load()) }
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
		{domain.ChannelEmail, FaultRefused, sendEmail, true, "SendingPausedException"},
		{domain.ChannelSMS, FaultTransient, publish, true, "Throttled"},
		{domain.ChannelSMS, FaultPermanent, publish, false, "InvalidParameter"},
		{domain.ChannelSMS, FaultRefused, publish, true, "AuthorizationError"},
	}
	emailFaults := 0
	for _, tt := range tests {
		if err := f.Set(tt.ch, tt.mode, 2); err != nil {
			t.Fatal(err)
		}
		if tt.ch == domain.ChannelEmail {
			emailFaults += 2
		}
		for i := range 2 {
			pe := classify(tt.ch, tt.call())
			// A refusal of the account is retried and alerts an operator.
			if pe == nil || pe.Transient != tt.transient || pe.Code != tt.code || pe.Alert != (tt.mode == FaultRefused) {
				t.Fatalf("%s %s call %d: %+v, want transient=%v code=%s alert=%v", tt.ch, tt.mode, i, pe, tt.transient, tt.code, tt.mode == FaultRefused)
			}
		}
		// The third call is real (and reaches the server).
		before := requests()
		if err := tt.call(); err == nil || requests() == before {
			t.Fatalf("%s: third call did not reach the service", tt.ch)
		}
	}
	if n := len(f.Hits(domain.ChannelEmail)); n != emailFaults {
		t.Errorf("%d email hits, want %d", n, emailFaults)
	}

	// Until off; other operations pass through.
	_ = f.Set(domain.ChannelEmail, FaultTransient, 0)
	for range 5 {
		if pe := classify(domain.ChannelEmail, sendEmail()); pe == nil || !pe.Transient {
			t.Fatal("fault until off stopped early")
		}
	}
	before := requests()
	_, _ = ses.GetAccount(context.Background(), &sesv2.GetAccountInput{})
	if requests() == before {
		t.Error("a fault hit an operation other than SendEmail")
	}
	_ = f.Set(domain.ChannelEmail, FaultOff, 0)
	before = requests()
	_ = sendEmail()
	if requests() == before {
		t.Error("fault still active after off")
	}

	for _, bad := range []struct {
		ch   domain.Channel
		mode FaultMode
	}{{"fax", FaultTransient}, {domain.ChannelSMS, "sometimes"}, {EventsChannel, FaultRefused}} {
		if err := f.Set(bad.ch, bad.mode, 1); err == nil {
			t.Errorf("Set(%s, %s) = %v", bad.ch, bad.mode, err)
		}
	}
}

// TestSMSProviderFaults: a provider switch fails only its own API's sends
// (SNS Publish, End User Messaging SendTextMessage), as that service's
// error; a channel fault on sms fails only the primary's (SmsPrimaryProvider).
func TestSMSProviderFaults(t *testing.T) {
	var served atomic.Int32
	f, cfg := faultedConfig(t, &served)
	snsc, voice := sns.NewFromConfig(cfg), pinpointsmsvoicev2.NewFromConfig(cfg)
	publish := func() *channel.ProviderError {
		_, err := snsc.Publish(context.Background(), &sns.PublishInput{Message: aws.String("x"), PhoneNumber: aws.String("+15550001111")})
		var pe *channel.ProviderError
		errors.As(sms.Classify("publish", err), &pe)
		return pe
	}
	sendText := func() *channel.ProviderError {
		_, err := voice.SendTextMessage(context.Background(), &pinpointsmsvoicev2.SendTextMessageInput{DestinationPhoneNumber: aws.String("+15550001111")})
		var pe *channel.ProviderError
		errors.As(sms.ClassifyVoice("send", err), &pe)
		return pe
	}
	reached := func(call func() *channel.ProviderError) bool {
		before := served.Load()
		call()
		return served.Load() > before
	}
	if err := f.SetProvider(FaultSMSVoice, FaultOutage, 0); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if pe := sendText(); pe == nil || !pe.Transient || pe.Unknown || pe.Code != "InternalServerException" {
			t.Fatalf("sms-voice in outage: %+v, want a known transient InternalServerException", pe)
		}
	}
	if !reached(publish) {
		t.Error("an sms-voice outage failed an SNS publish")
	}
	_ = f.SetProvider(FaultSMSVoice, FaultOff, 0)
	_ = f.SetProvider(FaultSNS, FaultOutage, 0)
	if pe := publish(); pe == nil || !pe.Transient || pe.Code != "InternalError" {
		t.Errorf("sns in outage: %+v, want InternalError", pe)
	}
	if !reached(sendText) {
		t.Error("an sns outage failed a SendTextMessage")
	}
	_ = f.SetProvider(FaultSNS, FaultOff, 0)

	// Channel faults: the primary's only, in its own API's terms.
	for _, primary := range []string{"", FaultSMSVoice} {
		f.SMSPrimary = primary
		_ = f.Set(domain.ChannelSMS, FaultRefused, 0)
		hit, spared := publish, sendText
		code := "AuthorizationError"
		if primary == FaultSMSVoice {
			hit, spared, code = sendText, publish, "AccessDeniedException"
		}
		if pe := hit(); pe == nil || !pe.Alert || pe.Code != code {
			t.Errorf("primary %q: %+v, want a refusal %s", primary, pe, code)
		}
		if !reached(spared) {
			t.Errorf("primary %q: a channel fault failed the secondary", primary)
		}
		_ = f.Set(domain.ChannelSMS, FaultOff, 0)
	}
}

// TestMobileFaults: mobile faults hit only a Publish to an endpoint (not an
// SMS), one per call; a permanent one disables the endpoint in the runner's
// SNS, as SNS does when the platform refuses the token.
func TestMobileFaults(t *testing.T) {
	sink := smssink.New(nil)
	const app = "arn:aws:sns:us-east-1:000000000000:app/GCM/t"
	if err := sink.AddPlatformApplication(app); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sink.APIHandler())
	defer srv.Close()
	push, _ := pushsink.New(srv.URL, nil)
	f := NewFaults(push, time.Now)
	f.SNS = sink
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""), BaseEndpoint: aws.String(srv.URL),
		APIOptions: []func(*middleware.Stack) error{f.Middleware}, HTTPClient: srv.Client()}
	adapter := snspush.New(sns.NewFromConfig(cfg), snspush.Applications{domain.PlatformFCM: app})
	ctx := context.Background()
	arn, err := adapter.Register(ctx, domain.PlatformFCM, "tok", "{}")
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := pushpkg.BuildMobile(domain.PlatformFCM, pushpkg.MobileContent{Payload: catalog.PushPayload{ID: "n1", Title: "t"}, TTL: time.Hour})
	if err := f.Set(FaultMobile, FaultTransient, 1); err != nil {
		t.Fatal(err)
	}
	// An SMS publish is not a mobile one: it passes (and the sink accepts it).
	if _, err := sns.NewFromConfig(cfg).Publish(ctx, &sns.PublishInput{PhoneNumber: aws.String("+15550001111"), Message: aws.String("x")}); err != nil {
		t.Fatalf("SMS publish hit by a mobile fault: %v", err)
	}
	var me *pushpkg.MobileError
	if _, err := adapter.Publish(ctx, arn, msg); !errors.As(err, &me) || me.Kind != pushpkg.MobileTransient || me.Code != "Throttled" {
		t.Fatalf("transient: %v", err)
	}
	if _, err := adapter.Publish(ctx, arn, msg); err != nil {
		t.Fatalf("after the fault: %v", err)
	}
	_ = f.Set(FaultMobile, FaultPermanent, 1)
	if _, err := adapter.Publish(ctx, arn, msg); !errors.As(err, &me) || me.Kind != pushpkg.MobileGone {
		t.Fatalf("permanent: %v", err)
	}
	if sink.EndpointAttributes(arn)["Enabled"] != "false" {
		t.Error("a permanent fault left the endpoint enabled")
	}
	// Disabled for real now: the next publish fails without a fault.
	if _, err := adapter.Publish(ctx, arn, msg); !errors.As(err, &me) || me.Code != "EndpointDisabled" {
		t.Errorf("after a permanent fault: %v", err)
	}
	if n := len(f.Hits(FaultMobile)); n != 2 {
		t.Errorf("%d mobile hits, want 2", n)
	}
}

// faultsRoute serves a stack's fault switches alone (its push sink
// reaches nothing).
func faultsRoute(t *testing.T) (*Stack, *httptest.Server) {
	push, _ := pushsink.New("http://127.0.0.1:1", nil)
	s := &Stack{Faults: NewFaults(push, time.Now)}
	mux := http.NewServeMux()
	s.routeFaults(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return s, srv
}

// GET /_dev/faults lists every fault POST /_dev/faults accepts, with the
// switch just set; a channel POST refuses is listed nowhere.
func TestFaultsRouteListsEveryFault(t *testing.T) {
	s, srv := faultsRoute(t)
	candidates := []string{"mobile", "events", "bogus", "inbox", ""}
	for _, c := range domain.Channels {
		candidates = append(candidates, string(c))
	}
	accepted := 0
	for _, ch := range candidates {
		resp, err := http.Post(srv.URL+"/_dev/faults", "application/json", strings.NewReader(`{"channel":"`+ch+`","mode":"transient","times":2}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		resp, err = http.Get(srv.URL + "/_dev/faults")
		if err != nil {
			t.Fatal(err)
		}
		var state map[string]FaultState
		err = json.NewDecoder(resp.Body).Decode(&state)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		listed, ok := state[ch]
		switch {
		case resp.StatusCode != http.StatusOK:
			t.Fatalf("GET: %d", resp.StatusCode)
		case ok && listed != (FaultState{Mode: FaultTransient, Remaining: 2}):
			t.Errorf("%q accepted, listed as %+v, want transient ×2", ch, listed)
		case !ok && s.Faults.Set(domain.Channel(ch), FaultOff, 0) == nil:
			t.Errorf("POST accepts %q, GET does not list it (lists %v)", ch, state)
		}
		if ok {
			accepted++
		}
		_ = s.Faults.Set(domain.Channel(ch), FaultOff, 0)
	}
	if accepted != len(FaultChannels) {
		t.Errorf("%d channels accepted and listed, want %d (%v)", accepted, len(FaultChannels), FaultChannels)
	}
}

// TestSlowFault: a slow fault holds SendEmail (SNS Publish takes the same
// path) for its delay, then the request reaches the service; a call whose
// context ends first is abandoned without a request, and each is listed in
// SlowCalls.
func TestSlowFault(t *testing.T) {
	var requests atomic.Int32
	f, cfg := faultedConfig(t, &requests)
	ses := sesv2.NewFromConfig(cfg)
	const delay = 200 * time.Millisecond
	if err := f.SetSlow(domain.ChannelEmail, delay, 2); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, _ = ses.SendEmail(context.Background(), &sesv2.SendEmailInput{Content: &sestypes.EmailContent{}})
	if waited := time.Since(start); waited < delay || requests.Load() != 1 {
		t.Fatalf("held call: %v, %d requests; want ≥ %v and the request made", waited, requests.Load(), delay)
	}
	ctx, cancel := context.WithTimeout(context.Background(), delay/4)
	defer cancel()
	_, err := ses.SendEmail(ctx, &sesv2.SendEmailInput{Content: &sestypes.EmailContent{}})
	if !errors.Is(err, context.DeadlineExceeded) || requests.Load() != 1 {
		t.Fatalf("abandoned call: %v, %d requests; want the deadline's error and no request", err, requests.Load())
	}
	calls := f.SlowCalls(domain.ChannelEmail)
	if len(calls) != 2 || calls[0].Abandoned || !calls[1].Abandoned || calls[1].Waited >= delay {
		t.Fatalf("slow calls %+v, want one answered, one abandoned before its delay", calls)
	}
	// The fault was for two calls: the next is at once.
	start = time.Now()
	_, _ = ses.SendEmail(context.Background(), &sesv2.SendEmailInput{Content: &sestypes.EmailContent{}})
	if time.Since(start) >= delay || requests.Load() != 2 {
		t.Fatal("the third call was held")
	}
	for _, bad := range []struct {
		ch    domain.Channel
		delay time.Duration
	}{{EventsChannel, delay}, {domain.ChannelSMS, 0}, {domain.ChannelSMS, MaxFaultDelay + time.Millisecond}} {
		if err := f.SetSlow(bad.ch, bad.delay, 1); err == nil {
			t.Errorf("SetSlow(%s, %v) accepted", bad.ch, bad.delay)
		}
	}
	if err := f.Set(domain.ChannelSMS, FaultSlow, 1); err == nil {
		t.Error("Set(slow) without a delay accepted")
	}
}

// TestFaultsRouteSlow: POST /_dev/faults takes a slow fault with its delay
// (and only then a delay), and GET lists it.
func TestFaultsRouteSlow(t *testing.T) {
	s, srv := faultsRoute(t)
	post := func(body string) int {
		resp, err := http.Post(srv.URL+"/_dev/faults", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, ch := range []string{"email", "sms", "push", "mobile"} {
		if code := post(`{"channel":"` + ch + `","mode":"slow","delayMs":26000,"times":1}`); code != http.StatusNoContent {
			t.Fatalf("slow %s = %d", ch, code)
		}
		if st := s.Faults.state()[domain.Channel(ch)]; st.Mode != FaultSlow || st.Remaining != 1 {
			t.Errorf("%s listed as %+v, want slow ×1", ch, st)
		}
	}
	for _, bad := range []string{`{"channel":"email","mode":"slow"}`, `{"channel":"email","mode":"transient","delayMs":5}`,
		`{"channel":"events","mode":"slow","delayMs":5}`, `{"channel":"sms","mode":"slow","delayMs":-1}`} {
		if code := post(bad); code != http.StatusBadRequest {
			t.Errorf("POST %s = %d, want 400", bad, code)
		}
	}
}
