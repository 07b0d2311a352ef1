package devstack

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	neturl "net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	smsvoicetypes "github.com/aws/aws-sdk-go-v2/service/pinpointsmsvoicev2/types"
	sestypes "github.com/aws/aws-sdk-go-v2/service/sesv2/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/heraldhq/herald/internal/devstack/iam"
	"github.com/heraldhq/herald/internal/devstack/pushsink"
	"github.com/heraldhq/herald/internal/devstack/smssink"
	"github.com/heraldhq/herald/internal/domain"
)

// FaultMode is what an injected fault does.
type FaultMode string

// Fault modes of POST /_dev/faults.
const (
	FaultTransient FaultMode = "transient"
	FaultPermanent FaultMode = "permanent"
	// FaultRefused is the provider refusing the account, not the message
	// (an SES sending pause, SNS refusing the caller, a push service
	// refusing the VAPID key): a worker retries it and raises an operator
	// alert.
	FaultRefused FaultMode = "refused"
	// FaultSlow holds the provider call for a delay, then lets it through:
	// a provider that answers late. A call its caller abandons first (the
	// worker's send deadline) is not carried out, as a provider does not
	// accept a request it never answered — so a late answer is a retry,
	// never a second send, locally (docs/decisions.md says why a real
	// provider can still send twice there).
	FaultSlow FaultMode = "slow"
	FaultOff  FaultMode = "off"
)

// FaultOutage fails every call of a provider (POST /_dev/faults with a
// provider) until off, as a provider that is down answers: SES 503
// ServiceUnavailable, SNS 500 InternalError, End User Messaging SMS 500
// InternalServerException — transient errors whose outcome is known
// (nothing was sent).
const FaultOutage FaultMode = "outage"

// Provider fault switches of POST /_dev/faults {"provider": …}: one
// provider of a channel with failover (channel faults are the primary's).
const (
	FaultSESPrimary   = "ses-primary"
	FaultSESSecondary = "ses-secondary"
	// SMS's providers by name, whichever is the primary (SmsPrimaryProvider).
	FaultSNS      = "sns"
	FaultSMSVoice = "sms-voice"
)

// FaultProviders are the provider switches, in the order GET /_dev/faults
// lists them.
var FaultProviders = []string{FaultSESPrimary, FaultSESSecondary, FaultSNS, FaultSMSVoice}

// Template parameters of the SMS failover the runner reads: End User
// Messaging SMS's origination identity (its endpoint accepts that one) and
// the primary (channel faults on sms are its).
const (
	SMSVoiceIdentityParam   = "SmsVoiceOriginationIdentity"
	SMSPrimaryProviderParam = "SmsPrimaryProvider"
)

// LocalSMSVoiceIdentity is an origination identity for local stacks with
// SMS failover (internal/e2e/failover, the IAM conformance check): a phone
// number of the local account and region.
const LocalSMSVoiceIdentity = "arn:aws:sms-voice:" + LocalRegion + ":" + LocalAccountID + ":phone-number/phone-00000000000000000000000000000001"

// providerFault is the pending-fault key of a provider switch.
func providerFault(provider string) domain.Channel { return domain.Channel("provider:" + provider) }

// SetProvider makes provider's next calls fail in mode (outage: every call
// until off; transient, permanent or refused: the next times calls, times ≤
// 0 until off).
func (f *Faults) SetProvider(provider string, mode FaultMode, times int) error {
	if !slices.Contains(FaultProviders, provider) {
		return fmt.Errorf("provider %q: want one of %s", provider, strings.Join(FaultProviders, ", "))
	}
	switch mode {
	case FaultOutage:
		times = 0
	case FaultTransient, FaultPermanent, FaultRefused, FaultOff:
	default:
		return fmt.Errorf("mode %q: a provider has outage, transient, permanent, refused or off", mode)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	key := providerFault(provider)
	delete(f.pending, key)
	if mode != FaultOff {
		remaining := times
		if remaining <= 0 {
			remaining = -1
		}
		f.pending[key] = &pendingFault{mode: mode, remaining: remaining}
	}
	return nil
}

// ProviderHits are the times provider's injected faults were served.
func (f *Faults) ProviderHits(provider string) []time.Time { return f.Hits(providerFault(provider)) }

// FaultMobile names the faults of native mobile push (SNS Publish to a
// platform endpoint), which are part of the push channel's deliveries.
const FaultMobile domain.Channel = "mobile"

// FaultChannels are the fault switches, in the order GET /_dev/faults and
// the console show them: POST /_dev/faults accepts these and no other.
var FaultChannels = []domain.Channel{domain.ChannelEmail, domain.ChannelSMS, domain.ChannelPush, FaultMobile, EventsChannel}

// Faults makes a channel's next provider calls fail, for developers and
// tests (POST /_dev/faults). Email and SMS faults are an SDK middleware on
// the email and SMS functions' aws.Config that answers SES SendEmail or SNS
// Publish with the error the service would return, before the request is
// sent — so the handler code runs unchanged and has no local branch. The
// middleware sits in the Initialize step, outside the SDK's retry loop: one
// fault is one failed operation call as the provider sees it, whatever the
// client's retry policy. Push faults are the push sink's (one per push
// request, i.e. per subscription). Mobile faults are the same middleware on
// the push function's SNS Publish to an endpoint (one per device publish); a
// permanent one disables the endpoint in the runner's SNS first, as SNS does
// when the platform refuses a token, so the endpoint's state tells the truth.
//
//	email  transient: TooManyRequestsException (429)   permanent: MessageRejected (400)                         refused: SendingPausedException (400)
//	sms    transient: Throttled (429)                  permanent: InvalidParameter (400)                        refused: AuthorizationError (403)
//	       (End User Messaging SMS: ThrottlingException, ValidationException INVALID_PARAMETER, AccessDeniedException ACCOUNT_DISABLED)
//	push   transient: 503 Service Unavailable          permanent: 400 Bad Request                               refused: 403 Forbidden
//	mobile transient: Throttled (429)                  permanent: EndpointDisabled (400), endpoint disabled     refused: PlatformApplicationDisabled (400)
//
// slow (every channel but events) holds the call for its delay, then sends
// it; the caller's giving up first cancels it (SlowCalls lists them).
type Faults struct {
	push *pushsink.Sink
	now  func() time.Time
	// SNS is the runner's SNS, whose endpoints a permanent mobile fault
	// disables (nil: none is disabled).
	SNS *smssink.Sink
	// SecondaryRegion is the email failover's region: its SES calls are the
	// ses-secondary provider's, every other SES call ses-primary's.
	SecondaryRegion string
	// SMSPrimary is the SMS primary's provider switch (sns, the default, or
	// sms-voice): a channel fault on sms fails its calls only.
	SMSPrimary string

	mu      sync.Mutex
	pending map[domain.Channel]*pendingFault
	hits    map[domain.Channel][]time.Time
	slow    map[domain.Channel][]pushsink.SlowCall
}

type pendingFault struct {
	mode      FaultMode
	remaining int           // < 0: until turned off
	delay     time.Duration // FaultSlow's
}

// NewFaults returns an injector; push faults go to the push sink.
func NewFaults(push *pushsink.Sink, now func() time.Time) *Faults {
	return &Faults{push: push, now: now, pending: map[domain.Channel]*pendingFault{}, hits: map[domain.Channel][]time.Time{}, slow: map[domain.Channel][]pushsink.SlowCall{}}
}

// Set makes the next times provider calls of ch fail in mode; times ≤ 0
// means until Set(ch, FaultOff, 0). FaultSlow takes its delay from SetSlow.
func (f *Faults) Set(ch domain.Channel, mode FaultMode, times int) error {
	if mode == FaultSlow {
		return fmt.Errorf("mode slow: give its delay (delayMs)")
	}
	return f.set(ch, mode, times, 0)
}

// SetSlow makes the next times provider calls of ch answer only after
// delay (times ≤ 0: until off).
func (f *Faults) SetSlow(ch domain.Channel, delay time.Duration, times int) error {
	if delay <= 0 || delay > MaxFaultDelay {
		return fmt.Errorf("mode slow: delayMs must be 1 to %d", MaxFaultDelay.Milliseconds())
	}
	return f.set(ch, FaultSlow, times, delay)
}

// MaxFaultDelay bounds a slow fault's delay: longer than any function's
// timeout, short enough that a forgotten fault does not hold calls for long.
const MaxFaultDelay = 15 * time.Minute

// SlowCalls are the calls of ch a slow fault held, oldest first.
func (f *Faults) SlowCalls(ch domain.Channel) []pushsink.SlowCall {
	if ch == domain.ChannelPush {
		return f.push.SlowCalls()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.slow[ch])
}

func (f *Faults) set(ch domain.Channel, mode FaultMode, times int, delay time.Duration) error {
	if !slices.Contains(FaultChannels, ch) {
		return fmt.Errorf("channel %q: want email, sms, push, mobile or events (the event bus's PutEvents)", ch)
	}
	switch mode {
	case FaultTransient, FaultPermanent, FaultOff:
	case FaultRefused, FaultSlow:
		if ch == EventsChannel {
			return fmt.Errorf("mode %s: the event bus has transient, permanent or off", mode)
		}
	default:
		return fmt.Errorf("mode %q: want transient, permanent, refused, slow or off", mode)
	}
	if ch == domain.ChannelPush {
		f.push.ClearFaults()
		if mode == FaultSlow {
			n := times
			if n <= 0 {
				n = math.MaxInt32
			}
			f.push.SlowNext(n, delay)
		} else if mode != FaultOff {
			n := times
			if n <= 0 {
				n = math.MaxInt32
			}
			status := http.StatusServiceUnavailable
			switch mode {
			case FaultPermanent:
				status = http.StatusBadRequest
			case FaultRefused:
				status = http.StatusForbidden
			}
			f.push.FailNext(n, status, 0)
		}
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.pending, ch)
	if mode != FaultOff {
		remaining := times
		if remaining <= 0 {
			remaining = -1
		}
		f.pending[ch] = &pendingFault{mode: mode, remaining: remaining, delay: delay}
	}
	return nil
}

// Hits are the times injected email, SMS or mobile faults were served, oldest first.
func (f *Faults) Hits(ch domain.Channel) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.hits[ch])
}

// take consumes one pending fault of ch, if any.
func (f *Faults) take(ch domain.Channel) (FaultMode, bool) {
	p, ok := f.takePending(ch)
	if !ok {
		return "", false
	}
	return p.mode, true
}

// takePending consumes one pending fault of ch, if any, and returns it
// (its mode and delay are never changed).
func (f *Faults) takePending(ch domain.Channel) (*pendingFault, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.pending[ch]
	if !ok {
		return nil, false
	}
	if p.remaining > 0 {
		p.remaining--
		if p.remaining == 0 {
			delete(f.pending, ch)
		}
	}
	f.hits[ch] = append(f.hits[ch], f.now())
	return p, true
}

// holdSlow delays a call of ch by a slow fault's delay; a non-nil error
// means the caller gave up first and the call must not be made.
func (f *Faults) holdSlow(ctx context.Context, ch domain.Channel, delay time.Duration) error {
	call, err := pushsink.HoldSlow(ctx, delay)
	f.mu.Lock()
	f.slow[ch] = append(f.slow[ch], call)
	f.mu.Unlock()
	return err
}

// faultTargets are the provider calls a channel's faults replace.
var faultTargets = map[string]domain.Channel{
	"SESv2.SendEmail": domain.ChannelEmail,
	"SNS.Publish":     domain.ChannelSMS,
	// End User Messaging SMS, SMS's other provider.
	"Pinpoint SMS Voice V2.SendTextMessage": domain.ChannelSMS,
}

// Middleware registers the injector on an SDK client's stack.
func (f *Faults) Middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("HeraldFaultInjection",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			service, operation := iam.ServiceOperation(ctx)
			ch, ok := faultTargets[service+"."+operation]
			if !ok {
				return next.HandleInitialize(ctx, in)
			}
			target := ""
			if p, isPublish := in.Parameters.(*sns.PublishInput); isPublish && aws.ToString(p.TargetArn) != "" {
				ch, target = FaultMobile, aws.ToString(p.TargetArn)
			}
			if ch == domain.ChannelEmail {
				provider := FaultSESPrimary
				if f.SecondaryRegion != "" && awsmiddleware.GetRegion(ctx) == f.SecondaryRegion {
					provider = FaultSESSecondary
				}
				if p, ok := f.takePending(providerFault(provider)); ok {
					return middleware.InitializeOutput{}, middleware.Metadata{}, injectedError(ch, p.mode)
				}
				if provider == FaultSESSecondary {
					return next.HandleInitialize(ctx, in) // channel faults are the primary's
				}
			}
			smsProvider := FaultSNS
			if ch == domain.ChannelSMS {
				if service != "SNS" {
					smsProvider = FaultSMSVoice
				}
				if p, ok := f.takePending(providerFault(smsProvider)); ok {
					return middleware.InitializeOutput{}, middleware.Metadata{}, injectedSMSError(smsProvider, p.mode)
				}
				if smsProvider != cmp.Or(f.SMSPrimary, FaultSNS) {
					return next.HandleInitialize(ctx, in) // channel faults are the primary's
				}
			}
			p, ok := f.takePending(ch)
			if !ok {
				return next.HandleInitialize(ctx, in)
			}
			mode := p.mode
			if mode == FaultSlow {
				if err := f.holdSlow(ctx, ch, p.delay); err != nil {
					return middleware.InitializeOutput{}, middleware.Metadata{}, err
				}
				return next.HandleInitialize(ctx, in)
			}
			if ch == FaultMobile && mode == FaultPermanent && f.SNS != nil {
				f.SNS.DisableEndpoint(target)
			}
			if ch == domain.ChannelSMS {
				return middleware.InitializeOutput{}, middleware.Metadata{}, injectedSMSError(smsProvider, mode)
			}
			return middleware.InitializeOutput{}, middleware.Metadata{}, injectedError(ch, mode)
		}), middleware.Before)
}

// injectedSMSError is the error the SDK would return for an SMS provider's
// answer: SNS's as injectedError says, End User Messaging SMS's from
// SendTextMessage's errors in its API reference.
func injectedSMSError(provider string, mode FaultMode) error {
	if provider == FaultSNS {
		return injectedError(domain.ChannelSMS, mode)
	}
	var status int
	var apiErr smithy.APIError
	switch mode {
	case FaultOutage:
		status, apiErr = http.StatusInternalServerError, &smsvoicetypes.InternalServerException{Message: aws.String("Internal error (injected outage)")}
	case FaultTransient:
		status, apiErr = http.StatusBadRequest, &smsvoicetypes.ThrottlingException{Message: aws.String("Rate exceeded (injected fault)")}
	case FaultRefused:
		status, apiErr = http.StatusBadRequest, &smsvoicetypes.AccessDeniedException{Reason: smsvoicetypes.AccessDeniedExceptionReasonAccountDisabled, Message: aws.String("Account disabled (injected fault)")}
	default:
		status, apiErr = http.StatusBadRequest, &smsvoicetypes.ValidationException{Reason: smsvoicetypes.ValidationExceptionReasonInvalidParameter, Message: aws.String("Invalid parameter (injected fault)")}
	}
	return &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}}, Err: apiErr},
		RequestID:     newRequestID(),
	}
}

// injectedError is the error the SDK would return for the service's answer.
func injectedError(ch domain.Channel, mode FaultMode) error {
	var status int
	var apiErr smithy.APIError
	switch {
	case ch == domain.ChannelEmail && mode == FaultOutage:
		status, apiErr = http.StatusServiceUnavailable, &smithy.GenericAPIError{Code: "ServiceUnavailable", Message: "Service unavailable (injected outage)", Fault: smithy.FaultServer}
	case mode == FaultOutage:
		status, apiErr = http.StatusInternalServerError, &smithy.GenericAPIError{Code: "InternalError", Message: "Internal error (injected outage)", Fault: smithy.FaultServer}
	case ch == domain.ChannelEmail && mode == FaultRefused:
		status, apiErr = http.StatusBadRequest, &sestypes.SendingPausedException{Message: aws.String("Sending is paused for this account (injected fault)")}
	case ch == domain.ChannelSMS && mode == FaultRefused:
		status, apiErr = http.StatusForbidden, &snstypes.AuthorizationErrorException{Message: aws.String("Not authorized (injected fault)")}
	case ch == FaultMobile && mode == FaultRefused:
		status, apiErr = http.StatusBadRequest, &snstypes.PlatformApplicationDisabledException{Message: aws.String("Platform application is disabled (injected fault)")}
	case ch == domain.ChannelEmail && mode == FaultTransient:
		status, apiErr = http.StatusTooManyRequests, &sestypes.TooManyRequestsException{Message: aws.String("Maximum sending rate exceeded (injected fault)")}
	case ch == domain.ChannelEmail:
		status, apiErr = http.StatusBadRequest, &sestypes.MessageRejected{Message: aws.String("Email address is not verified (injected fault)")}
	case mode == FaultTransient:
		status, apiErr = http.StatusTooManyRequests, &snstypes.ThrottledException{Message: aws.String("Rate exceeded (injected fault)")}
	case ch == FaultMobile:
		status, apiErr = http.StatusBadRequest, &snstypes.EndpointDisabledException{Message: aws.String("Endpoint is disabled (injected fault)")}
	default:
		status, apiErr = http.StatusBadRequest, &snstypes.InvalidParameterException{Message: aws.String("Invalid parameter (injected fault)")}
	}
	return &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}}, Err: apiErr},
		RequestID:     newRequestID(),
	}
}

// functionAWS is the aws.Config a function gets: the runner's, plus the
// fault injector for the functions that call SES or SNS, plus the store
// fault injector (StoreFaults, idle unless a test arms it), plus the IAM check
// of the function's own role. The IAM middleware is added last with
// middleware.Before, so it runs first: AWS authorizes a call before anything
// else happens to it (a denied SendEmail is not throttled).
func (s *Stack) functionAWS(logicalID string) aws.Config {
	cfg := s.AWS.Copy()
	cfg.APIOptions = slices.Clone(s.AWS.APIOptions)
	if logicalID == "EmailFunction" || logicalID == "SmsFunction" || logicalID == "PushFunction" {
		cfg.APIOptions = append(cfg.APIOptions, s.Faults.Middleware)
	}
	if region := s.Template.Params[EmailSecondaryRegionParam]; region != "" && s.Emulators.SES2 != "" {
		cfg.APIOptions = append(cfg.APIOptions, regionEndpoint("SESv2", region, s.Emulators.SES2))
	}
	if s.StoreFaults != nil { // nil in a Stack a test builds by hand
		cfg.APIOptions = append(cfg.APIOptions, s.StoreFaults.Middleware(logicalID))
	}
	cfg.APIOptions = append(cfg.APIOptions, s.IAM.Middleware(logicalID))
	// Calls to the WebSocket management endpoint are plain signed HTTP
	// (internal/live/connections): checked against the role here.
	if api := s.webSocketAPIID(); api != "" {
		cfg.HTTPClient = &manageHTTPClient{function: logicalID, host: strings.TrimPrefix(s.APIURL, "http://"), apiID: api,
			enforcer: s.IAM, base: defaultHTTPClient()}
	}
	return cfg
}

// EmailSecondaryRegionParam is the template parameter of the email
// failover's region; locally its SES calls go to the second emulator.
const EmailSecondaryRegionParam = "EmailSecondaryRegion"

// regionEndpoint sends a service's calls made in region to url: a client
// of another region (the email failover's SES) reaches that region's
// emulator, as in AWS it reaches that region's endpoint. It runs after the
// SDK resolved the endpoint (the stack's emulator, by AWS_ENDPOINT_URL_*).
func regionEndpoint(serviceID, region, url string) func(*middleware.Stack) error {
	target, err := neturl.Parse(url)
	return func(stack *middleware.Stack) error {
		if err != nil {
			return err
		}
		return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("HeraldRegionEndpoint",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				if req, ok := in.Request.(*smithyhttp.Request); ok && awsmiddleware.GetServiceID(ctx) == serviceID && awsmiddleware.GetRegion(ctx) == region {
					req.URL.Scheme, req.URL.Host = target.Scheme, target.Host
				}
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
	}
}

// routeFaults serves the fault switches: POST /_dev/faults sets one, GET
// lists them all.
func (s *Stack) routeFaults(mux *http.ServeMux) {
	mux.HandleFunc("POST /_dev/faults", s.faultsRoute)
	mux.HandleFunc("GET /_dev/faults", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.Faults.state())
	})
}

// faultsRoute serves POST /_dev/faults
// {"channel":"email|sms|push|mobile|events","mode":"transient|permanent|refused|slow|off","times":N,"delayMs":N}.
func (s *Stack) faultsRoute(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Channel  string    `json:"channel"`
		Provider string    `json:"provider"`
		Mode     FaultMode `json:"mode"`
		Times    int       `json:"times"`
		DelayMs  int64     `json:"delayMs"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || body.Times < 0 || (body.DelayMs != 0 && body.Mode != FaultSlow) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": `body must be {"channel":"email|sms|push|mobile|events","mode":"transient|permanent|refused|slow|off","times":N (omit: until off),"delayMs":N (slow only)}`})
		return
	}
	set := func() error { return s.Faults.Set(domain.Channel(body.Channel), body.Mode, body.Times) }
	if body.Provider != "" || body.Mode == FaultOutage {
		set = func() error {
			if body.Channel != "" {
				return fmt.Errorf("give a channel or a provider, not both")
			}
			return s.Faults.SetProvider(body.Provider, body.Mode, body.Times)
		}
	} else if body.Mode == FaultSlow {
		set = func() error {
			return s.Faults.SetSlow(domain.Channel(body.Channel), time.Duration(body.DelayMs)*time.Millisecond, body.Times)
		}
	}
	if err := set(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
