package devstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/app/apifn"
	"github.com/heraldhq/herald/internal/app/campaignfn"
	"github.com/heraldhq/herald/internal/app/emailfn"
	"github.com/heraldhq/herald/internal/app/feedbackfn"
	"github.com/heraldhq/herald/internal/app/liveauthorizerfn"
	"github.com/heraldhq/herald/internal/app/livefn"
	"github.com/heraldhq/herald/internal/app/livepostfn"
	"github.com/heraldhq/herald/internal/app/pushfn"
	"github.com/heraldhq/herald/internal/app/relayfn"
	"github.com/heraldhq/herald/internal/app/schedulerfn"
	"github.com/heraldhq/herald/internal/app/smsfn"
	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/devstack/eventpattern"
	"github.com/heraldhq/herald/internal/devstack/iam"
	"github.com/heraldhq/herald/internal/devstack/pushsink"
	"github.com/heraldhq/herald/internal/devstack/smssink"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/ops"
	"github.com/heraldhq/herald/internal/scheduler"
	"github.com/heraldhq/herald/internal/webpush"
)

// Config configures a local stack.
type Config struct {
	// Root is the repository root (template.yaml, infra/local).
	Root string
	// Template is the SAM template; default Root/template.yaml. Tests point
	// it at a modified copy (e.g. with a permission removed).
	Template string
	// APIAddr is where the HTTP API listens; default 127.0.0.1:3000. Use
	// 127.0.0.1:0 for a free port.
	APIAddr string
	// Overrides sets template parameters (e.g. MaxReceiveCount, BackoffBase).
	Overrides map[string]string
	// ScheduleInterval replaces the scheduler's schedule; default its
	// rate() expression in the template (rate(1 minute)).
	ScheduleInterval time.Duration
	// PollInterval is how often an idle stream shard is polled; default 100ms.
	PollInterval time.Duration
	// Logs receives the functions' JSON logs; nil discards them.
	Logs io.Writer
	// EmulatorLogs receives the emulators' output; nil discards it.
	EmulatorLogs io.Writer
	// MeasureCapacity makes every DynamoDB call return its consumed capacity
	// per table and index, added up in Stack.Usage (the cost benchmark).
	MeasureCapacity bool
	// DataDir keeps the stack's state across restarts (HERALD_DEV_DATA): the
	// table, the queues with their messages, the relay's stream position and
	// the local secrets. Empty: everything is lost when the stack stops.
	DataDir string
	// DynamoDB, when set, is the endpoint of a DynamoDB Local started without
	// -sharedDb (make test's, scripts/testdynamodb) that the stack keeps its
	// table in instead of starting its own: under an access key of the
	// stack's own, so in a database no other stack sees. Not with DataDir.
	DynamoDB string
	// LowPollers bounds the pollers of each low-priority queue's mapping
	// (the template's LowMaximumConcurrency, 7): on AWS each invocation has
	// a CPU of its own, here every poller shares this process's cores with
	// high priority, and seven low pollers with their emulator calls took
	// both cores of the project's machine (docs/decisions.md, "Local low
	// pollers"). 0: the template's, as before (make test's packages were
	// not measured with fewer).
	LowPollers int
}

// Stack is a running local Herald.
type Stack struct {
	cfg       Config
	Emulators *Emulators
	Template  *Template
	Resources *Resources
	Clock     *Clock
	Calls     *Calls
	// Usage counts invocations, their duration, log bytes and (with
	// MeasureCapacity) consumed DynamoDB capacity, per function.
	Usage *Usage
	// APIURL is the base URL of the HTTP API and the /_dev routes.
	APIURL string
	// WebSocketURL is the live inbox's WebSocket API stage (the template's
	// WebSocketUrl output): ws://<runner>/<stage>; "" without one.
	WebSocketURL string
	// AWS is the configuration the functions use (endpoints on the emulators).
	AWS       aws.Config
	Scheduler *scheduler.Handler
	// Push is the local Web Push service; SMS the local SNS SMS endpoint.
	Push *pushsink.Sink
	SMS  *smssink.Sink
	// Faults injects provider failures (POST /_dev/faults).
	Faults *Faults
	// Retried are the messages the SQS mappings left in flight for a retry
	// (a test makes them visible when it moves the clock past their wait).
	Retried *RetriedMessages
	// invoking counts the invocations under way (Running).
	invoking atomic.Int32
	// StoreFaults fails one chosen DynamoDB or SQS call of a function (the
	// fault sweep's hook).
	StoreFaults *StoreFaults
	// Bus plays the template's event bus and its rules (nil without one).
	Bus *EventBus
	// IAM checks every AWS call a function makes against that function's
	// role as the SAM transform produces it, and records the calls.
	IAM *iam.Enforcer

	// accessKey is the static access key of every client of the stack; ""
	// is the emulators' "local" (ops.LocalState.Env).
	accessKey string
	mux       *http.ServeMux
	server    *http.Server
	// ws plays the template's WebSocket API (nil without one).
	ws     *wsGateway
	jwt    *jwtIssuer
	vapid  webpush.VAPIDKeys
	sqs    *sqs.Client
	cancel context.CancelFunc
	// running ends when the stack stops; the functions' triggers run under it.
	running context.Context
	wg      sync.WaitGroup
	relay   *streamMapping
	// feedback is the SES feedback function (POST /_dev/ses-events).
	feedback          FeedbackHandler
	feedbackTimeout   time.Duration
	unsubscribeSecret string
	log               *slog.Logger
	stopOnce          sync.Once
	// done closes when the stack fails on its own (an emulator died); err says why.
	done chan struct{}
	err  error
}

// Start starts the emulators, creates the resources and runs the functions.
// It sets the process's AWS_ENDPOINT_URL_* variables and local credentials so
// that every SDK client in the process talks to the emulators.
func Start(ctx context.Context, cfg Config) (_ *Stack, err error) {
	if cfg.APIAddr == "" {
		cfg.APIAddr = "127.0.0.1:3000"
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 100 * time.Millisecond
	}
	logs := cfg.Logs
	if logs == nil {
		logs = io.Discard
	}
	s := &Stack{cfg: cfg, Clock: &Clock{}, Calls: NewCalls(), Usage: NewUsage(), mux: http.NewServeMux(), done: make(chan struct{}),
		log: slog.New(slog.NewJSONHandler(logs, nil)).With("component", "runner")}
	if cfg.DynamoDB != "" && cfg.DataDir != "" {
		return nil, errors.New("a data directory needs the stack's own DynamoDB Local (Config.DynamoDB is set)")
	}
	if cfg.DynamoDB != "" {
		s.accessKey = NewAccessKey()
	}
	// Listening first: the emulators' free ports are released just before
	// they bind them, so the API must not take one meanwhile.
	ln, err := net.Listen("tcp", cfg.APIAddr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (set HERALD_API_PORT to change): %w", cfg.APIAddr, err)
	}
	s.APIURL = "http://" + ln.Addr().String()
	// The emulators boot (a JVM and two Node processes, seconds) while the
	// template and the IAM policies load (about a second under -race). A
	// refused template cancels their start, so the refusal is as quick.
	emulatorCtx, cancelEmulators := context.WithCancel(ctx)
	defer cancelEmulators()
	emulators := make(chan error, 1)
	emulatorOpts := EmulatorOptions{InfraDir: filepath.Join(cfg.Root, "infra", "local"), Log: cfg.EmulatorLogs, DataDir: cfg.DataDir, DynamoDB: cfg.DynamoDB}
	if cfg.Overrides[EmailSecondaryRegionParam] != "" {
		// The email failover's region: a second SES of its own.
		emulatorOpts.Services = []string{"dynamodb", "sqs", "ses", "ses2"}
	}
	go func() {
		var err error
		s.Emulators, err = StartEmulators(emulatorCtx, emulatorOpts)
		emulators <- err
	}()
	awaited := false
	awaitEmulators := func() error {
		awaited = true
		return <-emulators
	}
	defer func() {
		if err != nil {
			ln.Close() // not served yet
			if !awaited {
				cancelEmulators()
				_ = awaitEmulators()
			}
			s.Stop()
		}
	}()

	if cfg.Template == "" {
		cfg.Template = filepath.Join(cfg.Root, "template.yaml")
		s.cfg.Template = cfg.Template
	}
	// The push function's key pair is made per run (kept in the data
	// directory when there is one); its public half is the VapidPublicKey
	// parameter, which the template requires (no default).
	// (The IAM policies are transformed with cfg.Overrides only: no policy
	// names the per-run key, and the transform's cache stays valid.)
	// Native mobile push always has its three platforms locally: the
	// parameters' applications, or the runner's own (deterministic, so the
	// IAM transform's cache holds).
	cfg.Overrides = WithLocalPlatformApplications(cfg.Overrides)
	s.cfg.Overrides = cfg.Overrides
	secrets, err := loadSecrets(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	s.vapid, s.unsubscribeSecret = secrets.VAPID, secrets.UnsubscribeSecret
	overrides := map[string]string{"VapidPublicKey": s.vapid.PublicKey}
	maps.Copy(overrides, cfg.Overrides)
	if cfg.Root != "" {
		if err = CheckRelease(cfg.Root, cfg.Template, s.log); err != nil {
			return nil, err
		}
	}
	// One SAM transform (cached) gives the functions' IAM policies and the
	// template the runner plays: the one CloudFormation receives, resolved
	// with this run's parameters.
	policies, err := s.LoadPolicies(ctx, cfg.Template)
	var params map[string]string
	if err == nil {
		params, err = TemplateParams(policies.Template, overrides)
	}
	if err == nil {
		s.Template, err = ParseTransformed(policies.Template, localOverrides(overrides, params["PushEndpointAllowList"], ln.Addr().String()))
	}
	if err != nil {
		return nil, err
	}
	s.IAM = s.newIAM(policies)
	s.server = newHTTPServer(s.mux)

	if err = awaitEmulators(); err != nil {
		return nil, err
	}
	// The same environment `herald dlq` derives from the state file, with the
	// caller's session and profile unset.
	env := ops.LocalState{Region: LocalRegion, Endpoints: s.endpoints(), AccessKeyID: s.accessKey}.Env()
	env["AWS_SESSION_TOKEN"], env["AWS_PROFILE"] = "", ""
	for k, v := range env {
		if v == "" {
			os.Unsetenv(k)
		} else {
			os.Setenv(k, v)
		}
	}
	s.AWS, err = config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("aws config: %w", err)
	}
	s.AWS.HTTPClient = app.NewHTTPClient() // the functions' client in Lambda (app.EnvAWSConfig)
	s.AWS.APIOptions = append(s.AWS.APIOptions, s.Calls.Middleware)
	if cfg.MeasureCapacity {
		s.AWS.APIOptions = append(s.AWS.APIOptions, s.Usage.CapacityMiddleware)
	}
	s.sqs = sqs.NewFromConfig(s.AWS)
	s.Resources, err = CreateResources(ctx, s.Template, dynamodb.NewFromConfig(s.AWS), s.sqs, LocalResourcePrefix)
	if err != nil {
		return nil, err
	}
	if s.Push, err = pushsink.New(s.APIURL, s.Clock.Now); err != nil {
		return nil, err
	}
	s.SMS = smssink.New(s.Clock.Now)
	for _, param := range PlatformApplicationParams {
		if arn := s.Template.Params[param]; arn != "" {
			if err := s.SMS.AddPlatformApplication(arn); err != nil {
				return nil, fmt.Errorf("parameter %s: %w", param, err)
			}
		}
	}
	if arn := s.Template.Params[SMSVoiceIdentityParam]; arn != "" {
		s.SMS.AddOriginationIdentity(arn)
	}
	s.Faults = NewFaults(s.Push, s.Clock.Now)
	s.Faults.SecondaryRegion = s.Template.Params[EmailSecondaryRegionParam]
	s.Faults.SMSPrimary = s.Template.Params[SMSPrimaryProviderParam]
	s.Faults.SNS = s.SMS
	s.StoreFaults = NewStoreFaults()
	s.Retried = &RetriedMessages{held: map[string][]string{}, sqs: s.sqs}
	if s.Bus, err = s.newEventBus(); err != nil {
		return nil, err
	}
	if err := s.wire(); err != nil {
		return nil, err
	}
	if stage := s.webSocketStage(); stage != "" {
		s.WebSocketURL = "ws://" + ln.Addr().String() + "/" + stage
	}
	s.routeDev()
	s.wg.Add(1)
	go s.watchEmulators()
	go func() {
		if err := s.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("api server stopped", "error", err)
		}
	}()
	return s, nil
}

// Done closes when the stack has failed on its own: an emulator stopped
// while the stack ran. Err says which. Stop is still the caller's to call.
func (s *Stack) Done() <-chan struct{} { return s.done }

// Err is why the stack failed (an *EmulatorExitError), or nil.
func (s *Stack) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// watchEmulators stops the functions as soon as an emulator dies: every
// trigger would otherwise poll a dead endpoint and log a failure per poll.
func (s *Stack) watchEmulators() {
	defer s.wg.Done()
	select {
	case <-s.running.Done():
	case err := <-s.Emulators.Exited():
		if s.cfg.DataDir != "" {
			err = fmt.Errorf("%w\nthe state is kept in %s: start again with the same HERALD_DEV_DATA to go on", err, s.cfg.DataDir)
		} else {
			err = fmt.Errorf("%w\nthe stack's state was in memory and is lost", err)
		}
		s.log.Error("emulator stopped; stopping the functions", "error", err)
		s.err = err
		close(s.done)
		s.cancel()
	}
}

// PlatformApplicationParams are the template parameters naming SNS platform
// applications (native mobile push).
var PlatformApplicationParams = []string{"ApnsApplicationArn", "ApnsSandboxApplicationArn", "FcmApplicationArn"}

// LocalPlatformApplications are the applications the runner's SNS serves for
// the parameters a run leaves unset, so that `make dev` has all three
// platforms; `make aws-check`'s IAM conformance transforms the template with
// them too.
var LocalPlatformApplications = map[string]string{
	"ApnsApplicationArn":        "arn:aws:sns:" + LocalRegion + ":" + LocalAccountID + ":app/APNS/herald-local",
	"ApnsSandboxApplicationArn": "arn:aws:sns:" + LocalRegion + ":" + LocalAccountID + ":app/APNS_SANDBOX/herald-local",
	"FcmApplicationArn":         "arn:aws:sns:" + LocalRegion + ":" + LocalAccountID + ":app/GCM/herald-local",
}

// WithLocalPlatformApplications returns overrides plus LocalPlatformApplications
// for the parameters it does not set (set to "": that platform is off).
func WithLocalPlatformApplications(overrides map[string]string) map[string]string {
	out := maps.Clone(overrides)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range LocalPlatformApplications {
		if _, ok := out[k]; !ok {
			out[k] = v
		}
	}
	return out
}

// LocalLinkHosts is the LinkHosts the local stack runs with unless given:
// https to any host, as the template's default, and plain http to this
// machine.
const LocalLinkHosts = "*,http://localhost,http://127.0.0.1"

// localOverrides are the template parameters the runner sets itself:
//   - PushEndpointAllowList gets the local push service (served by the runner
//     on addr, its endpoint path only: not /_dev/faults or any other runner
//     route) appended: the explicit configuration that, with
//     PUSH_ALLOW_INSECURE_LOOPBACK, lets the functions accept and reach it.
//     Production lists only public push services.
//   - JwtIssuer is the runner itself (an OIDC-shaped issuer at its base URL,
//     which mints /_dev/token), unless the caller overrides it.
//   - LinkHosts, unless given, admits plain http to the machine itself
//     besides https to any host (LocalLinkHosts): a local app on
//     http://localhost, the console's own pages.
func localOverrides(overrides map[string]string, pushList, addr string) map[string]string {
	out := maps.Clone(overrides)
	if out == nil {
		out = map[string]string{}
	}
	if pushList != "" {
		pushList += ","
	}
	out["PushEndpointAllowList"] = pushList + addr + pushsink.EndpointPath // its endpoints only, no other runner route
	if _, ok := out["JwtIssuer"]; !ok {
		out["JwtIssuer"] = "http://" + addr
	}
	if _, ok := out["LinkHosts"]; !ok {
		out["LinkHosts"] = LocalLinkHosts
	}
	// Send rates are required on AWS; locally they, and the campaign's
	// fan-out rate, default to 0 (no pacing) unless given
	// (HERALD_EMAIL_SEND_RATE…, HERALD_CAMPAIGN_FANOUT_RATE, a test's override).
	for _, p := range []string{"EmailSendRate", "SmsSendRate", "PushSendRate", "CampaignFanOutRate", "SchedulerReleaseRate"} {
		if _, ok := out[p]; !ok {
			out[p] = "0"
		}
	}
	// The console's own origin (its demo inbox) always; HERALD_CORS_ORIGINS
	// (the override) adds the app's.
	origins := "http://" + addr
	if o := strings.Trim(out["CorsAllowedOrigins"], ", "); o != "" {
		origins = o + "," + origins
	}
	out["CorsAllowedOrigins"] = origins
	return out
}

// Handle adds a route to the runner's HTTP server (dev routes).
func (s *Stack) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// Stop stops the functions, the HTTP server and the emulators.
func (s *Stack) Stop() {
	s.stopOnce.Do(func() {
		if s.ws != nil {
			s.ws.closeAll() // each connection's $disconnect runs while the table is up
		}
		if s.cancel != nil {
			s.cancel()
		}
		if s.server != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = s.server.Shutdown(ctx)
			cancel()
		}
		s.wg.Wait()
		if s.Emulators != nil {
			s.Emulators.Stop()
		}
	})
}

// Token mints a user JWT as the configured issuer would.
func (s *Stack) Token(sub string, ttl time.Duration) string {
	return s.jwt.mint(sub, s.Clock.Now(), ttl)
}

// SignToken signs any claims with the dev issuer's key and kid (RS256), for
// tests that need a correctly signed token with wrong claims.
func (s *Stack) SignToken(claims map[string]any) string {
	return s.jwt.sign(claims)
}

// functionEnv resolves a function's template environment to local values.
func (s *Stack) functionEnv(fn FunctionSpec) (map[string]string, error) {
	env := map[string]string{}
	for k, v := range fn.Env {
		r, err := s.Resources.Resolve(v)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", fn.LogicalID, k, err)
		}
		env[k] = r
	}
	maps.Copy(env, s.localEnv(fn.LogicalID))
	return env, nil
}

func (s *Stack) deps(fn FunctionSpec, cat *catalog.Catalog) (app.Deps, error) {
	env, err := s.functionEnv(fn)
	if err != nil {
		return app.Deps{}, err
	}
	logs := s.cfg.Logs
	if logs == nil {
		logs = io.Discard
	}
	return app.Deps{
		AWS: s.functionAWS(fn.LogicalID), Getenv: func(k string) string { return env[k] }, Now: s.Clock.Now,
		// The Lambda mains' logger: the same JSON keys and LOG_LEVEL.
		Log:     app.NewLogger(s.Usage.logWriter(fn.LogicalID, logs), func(k string) string { return env[k] }).With("function", fn.LogicalID),
		Catalog: cat,
		// As in Lambda, EMF documents go to the function's log stream.
		Metrics: metrics.NewEMF(s.Usage.logWriter(fn.LogicalID, logs), "", s.Clock.Now),
	}, nil
}

// wire builds every function with the constructors the Lambda mains use and
// attaches its triggers as the template declares them.
func (s *Stack) wire() error {
	cat, err := catalog.Load()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.running, s.cancel = ctx, cancel
	sqsHandlers := map[string]SQSHandler{}
	timeouts := map[string]time.Duration{}
	streamHandlers := map[string]StreamHandler{}
	wsRoutes := map[string]WebSocketRouteHandler{}
	wsAuthorizers := map[string]WebSocketAuthorizer{}
	apiHandlers := map[string]APIHandler{}
	for _, fn := range s.Template.Functions() {
		d, err := s.deps(fn, cat)
		if err != nil {
			return err
		}
		timeouts[fn.LogicalID] = time.Duration(fn.Timeout) * time.Second
		switch fn.LogicalID {
		case "ApiFunction":
			h, err := apifn.New(d)
			if err != nil {
				return fmt.Errorf("%s: %w", fn.LogicalID, err)
			}
			apiHandlers[fn.LogicalID] = h.Handle
		case "RelayFunction", "RelayHighFunction": // one code, one stream mapping each
			h, err := relayfn.New(d)
			if err != nil {
				return fmt.Errorf("%s: %w", fn.LogicalID, err)
			}
			streamHandlers[fn.LogicalID] = h.Handle
		case "FeedbackFunction":
			h, err := feedbackfn.New(d)
			if err != nil {
				return fmt.Errorf("%s: %w", fn.LogicalID, err)
			}
			s.feedback, s.feedbackTimeout = h.Handle, timeouts[fn.LogicalID]
		case "LiveFunction":
			h, err := livefn.New(d)
			if err != nil {
				return fmt.Errorf("%s: %w", fn.LogicalID, err)
			}
			wsRoutes[fn.LogicalID] = h.Handle
		case "LiveAuthorizerFunction":
			h, err := liveauthorizerfn.New(d)
			if err != nil {
				return fmt.Errorf("%s: %w", fn.LogicalID, err)
			}
			wsAuthorizers[fn.LogicalID] = h.Handle
		case "LivePostFunction":
			h, err := livepostfn.New(d)
			if err != nil {
				return fmt.Errorf("%s: %w", fn.LogicalID, err)
			}
			sqsHandlers[fn.LogicalID] = h.Handle
		case "CampaignFunction":
			h, err := campaignfn.New(d)
			if err != nil {
				return fmt.Errorf("%s: %w", fn.LogicalID, err)
			}
			sqsHandlers[fn.LogicalID] = h.Handle
		case "SchedulerFunction":
			h, err := schedulerfn.New(d)
			if err != nil {
				return fmt.Errorf("%s: %w", fn.LogicalID, err)
			}
			s.Scheduler = h
			sqsHandlers[fn.LogicalID] = h.HandleRelease
			if fn.Schedule != "" {
				every := s.cfg.ScheduleInterval
				if every == 0 {
					if every, err = rateInterval(fn.Schedule); err != nil {
						return fmt.Errorf("%s: %w", fn.LogicalID, err)
					}
				}
				s.wg.Add(1)
				go s.runSchedule(ctx, fn, h, every)
			}
		default:
			if fn.Schedule != "" {
				return fmt.Errorf("%s: the local runner plays SchedulerFunction's schedule only", fn.LogicalID)
			}
			build, ok := channelFunctions[fn.LogicalID]
			if !ok {
				return fmt.Errorf("the local runner does not know function %s", fn.LogicalID)
			}
			h, err := build(d)
			if err != nil {
				return fmt.Errorf("%s: %w", fn.LogicalID, err)
			}
			sqsHandlers[fn.LogicalID] = h
		}
	}
	if err := s.newHTTPGateway(apiHandlers, timeouts); err != nil {
		return err
	}
	if s.ws, err = s.newWSGateway(wsRoutes, wsAuthorizers, timeouts); err != nil {
		return err
	}
	if s.ws != nil {
		s.ws.mount(s.mux)
	}
	return s.startMappings(ctx, sqsHandlers, streamHandlers, timeouts)
}

// channelFunctions build the SQS-triggered functions by logical id.
var channelFunctions = map[string]func(app.Deps) (SQSHandler, error){
	"EmailFunction": func(d app.Deps) (SQSHandler, error) {
		h, err := emailfn.New(d)
		if err != nil {
			return nil, err
		}
		return h.Handle, nil
	},
	"SmsFunction": func(d app.Deps) (SQSHandler, error) {
		h, err := smsfn.New(d)
		if err != nil {
			return nil, err
		}
		return h.Handle, nil
	},
	"PushFunction": func(d app.Deps) (SQSHandler, error) {
		h, err := pushfn.New(context.Background(), d)
		if err != nil {
			return nil, err
		}
		return h.Handle, nil
	},
}

// localEnv is configuration the runner adds to a function's template
// environment: what AWS would read from SSM or Secrets Manager, the public
// URL of the local API, and permission to reach the local push service (which
// the PushEndpointAllowList override names) over http on loopback.
func (s *Stack) localEnv(id string) map[string]string {
	switch id {
	case "PushFunction":
		return map[string]string{
			"VAPID_PRIVATE_KEY":            s.vapid.PrivateKey,
			"PUSH_ALLOW_INSECURE_LOOPBACK": "true",
		}
	case "EmailFunction":
		return map[string]string{"UNSUBSCRIBE_SECRET": s.unsubscribeSecret, "UNSUBSCRIBE_URL": s.APIURL + "/v1/unsubscribe"}
	case "LiveFunction", "LivePostFunction":
		// The WebSocket API's management endpoint is the runner's stage.
		if stage := s.webSocketStage(); stage != "" {
			return map[string]string{"LIVE_ENDPOINT": s.APIURL + "/" + stage}
		}
	case "ApiFunction":
		// Accepts the local push service's subscriptions; verifies unsubscribe links.
		return map[string]string{"PUSH_ALLOW_INSECURE_LOOPBACK": "true", "UNSUBSCRIBE_SECRET": s.unsubscribeSecret}
	}
	return nil
}

func (s *Stack) startMappings(ctx context.Context, sqsHandlers map[string]SQSHandler, streamHandlers map[string]StreamHandler, timeouts map[string]time.Duration) error {
	for id, m := range s.Template.GetAllLambdaEventSourceMappingResources() {
		fnRef := strings.TrimSuffix(strings.TrimPrefix(m.FunctionName, "${ref:"), "}")
		source, err := s.Resources.Resolve(aws.ToString(m.EventSourceArn))
		if err != nil {
			return fmt.Errorf("mapping %s: %w", id, err)
		}
		batch := int32(10)
		if m.BatchSize != nil {
			batch = int32(*m.BatchSize)
		}
		if strings.Contains(source, ":sqs:") {
			h, ok := sqsHandlers[fnRef]
			if !ok {
				return fmt.Errorf("mapping %s: no SQS function %s", id, fnRef)
			}
			q, ok := s.queueByARN(source)
			if !ok {
				return fmt.Errorf("mapping %s: unknown queue %s", id, source)
			}
			conc := 1000
			if m.ScalingConfig != nil && m.ScalingConfig.MaximumConcurrency != nil {
				conc = *m.ScalingConfig.MaximumConcurrency
			}
			if lowPriorityQueue(q.LogicalID) {
				conc = min(conc, s.lowPollers())
			}
			mapping := &sqsMapping{name: id, queueURL: q.URL, queueARN: q.ARN, batchSize: batch, concurrency: conc,
				timeout: timeouts[fnRef], handler: h, sqs: s.sqs, log: s.log, invoke: s.invoke(fnRef), onReceive: s.Usage.recordWaits,
				finishPolls: s.cfg.DataDir != "", retried: s.Retried}
			mapping.run(ctx, &s.wg)
			continue
		}
		streamHandler, ok := streamHandlers[fnRef]
		if !ok {
			return fmt.Errorf("mapping %s: no stream function %s", id, fnRef)
		}
		sm := &streamMapping{name: id, streamARN: source, batchSize: batch, startLatest: aws.ToString(m.StartingPosition) == "LATEST",
			bisect: aws.ToBool(m.BisectBatchOnFunctionError), maxRetries: -1, timeout: timeouts[fnRef], handler: streamHandler,
			streams: dynamodbstreams.NewFromConfig(s.AWS), sqs: s.sqs, log: s.log, pollInterval: s.cfg.PollInterval, invoke: s.invoke(fnRef)}
		if sm.checkpoints, err = openCheckpoints(s.cfg.DataDir, id, source); err != nil {
			return fmt.Errorf("mapping %s: %w", id, err)
		}
		if m.MaximumRetryAttempts != nil {
			sm.maxRetries = *m.MaximumRetryAttempts
		}
		if m.MaximumRecordAgeInSeconds != nil && *m.MaximumRecordAgeInSeconds > 0 {
			sm.maxRecordAge = time.Duration(*m.MaximumRecordAgeInSeconds) * time.Second
		}
		for _, t := range m.FunctionResponseTypes {
			sm.reportItems = sm.reportItems || t == "ReportBatchItemFailures"
		}
		if m.FilterCriteria != nil {
			for _, f := range m.FilterCriteria.Filters {
				p, err := eventpattern.Compile(aws.ToString(f.Pattern))
				if err != nil {
					return fmt.Errorf("mapping %s filter: %w", id, err)
				}
				sm.filters = append(sm.filters, p)
			}
		}
		if m.DestinationConfig != nil && m.DestinationConfig.OnFailure != nil {
			dest, err := s.Resources.Resolve(aws.ToString(m.DestinationConfig.OnFailure.Destination))
			if err != nil {
				return fmt.Errorf("mapping %s destination: %w", id, err)
			}
			q, ok := s.queueByARN(dest)
			if !ok {
				return fmt.Errorf("mapping %s: destination %s is not a local queue", id, dest)
			}
			sm.onFailureURL = q.URL
		}
		s.relay = sm
		sm.run(ctx, &s.wg)
	}
	return nil
}

// lowPriorityQueue reports whether a queue is a channel's low-priority
// (campaign) queue: the template's <Channel>LowQueue.
func lowPriorityQueue(logicalID string) bool { return strings.HasSuffix(logicalID, "LowQueue") }

// lowPollers is how many pollers each low-priority mapping runs locally at
// most (Config.LowPollers; unset: no bound beyond the template's).
func (s *Stack) lowPollers() int {
	if s.cfg.LowPollers > 0 {
		return s.cfg.LowPollers
	}
	return math.MaxInt
}

func (s *Stack) queueByARN(arn string) (QueueInfo, bool) {
	for _, q := range s.Resources.Queues {
		if q.ARN == arn {
			return q, true
		}
	}
	return QueueInfo{}, false
}

// invoke runs fn as one Lambda invocation of function: with a deadline of the
// function's timeout, a Lambda context carrying a request id, and a panic
// turned into an invocation error as the Lambda runtime reports it.
func (s *Stack) invoke(function string) func(ctx context.Context, timeout time.Duration, fn func(context.Context) error) error {
	return func(ctx context.Context, timeout time.Duration, fn func(context.Context) error) (err error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{
			AwsRequestID: newRequestID(), InvokedFunctionArn: "arn:aws:lambda:" + LocalRegion + ":" + LocalAccountID + ":function:" + function,
		})
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%s panicked: %v", function, r)
			}
		}()
		start := time.Now()
		s.invoking.Add(1)
		defer func() { s.invoking.Add(-1); s.Usage.invoked(function, time.Since(start), timeout) }()
		return fn(ctx)
	}
}

// Running is the number of function invocations under way (a test that
// moves the clock waits for none: a lease is as long as its invocation).
func (s *Stack) Running() int { return int(s.invoking.Load()) }

// rateInterval is a rate() schedule expression's period (EventBridge's
// rate(value unit): minute(s), hour(s), day(s)); the runner plays no cron().
func rateInterval(expr string) (time.Duration, error) {
	var n int
	var unit string
	if _, err := fmt.Sscanf(expr, "rate(%d %s", &n, &unit); err != nil || n < 1 || !strings.HasSuffix(unit, ")") {
		return 0, fmt.Errorf("schedule %q: the local runner plays rate(N unit) schedules only", expr)
	}
	switch strings.TrimSuffix(strings.TrimSuffix(unit, ")"), "s") {
	case "minute":
		return time.Duration(n) * time.Minute, nil
	case "hour":
		return time.Duration(n) * time.Hour, nil
	case "day":
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return 0, fmt.Errorf("schedule %q: unit %q is not minute(s), hour(s) or day(s)", expr, unit)
}

func (s *Stack) runSchedule(ctx context.Context, fn FunctionSpec, h *scheduler.Handler, every time.Duration) {
	defer s.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			err := s.invoke(fn.LogicalID)(ctx, time.Duration(fn.Timeout)*time.Second, func(ctx context.Context) error {
				_, err := h.Handle(ctx, events.EventBridgeEvent{DetailType: "Scheduled Event", Source: "aws.events"})
				return err
			})
			if err != nil && ctx.Err() == nil {
				s.log.Warn("scheduler run failed", "error", err)
			}
		}
	}
}

// QueueCounts is one queue's depth.
type QueueCounts struct {
	Name      string `json:"name"`
	LogicalID string `json:"logicalId"`
	DLQ       bool   `json:"dlq"`
	Visible   int    `json:"visible"`
	InFlight  int    `json:"inFlight"`
	Delayed   int    `json:"delayed"`
}

// QueueDepths reports every queue's visible, in-flight and delayed counts.
func (s *Stack) QueueDepths(ctx context.Context) ([]QueueCounts, error) {
	var out []QueueCounts
	isDLQ := map[string]bool{}
	for _, q := range s.Resources.Queues {
		if q.DLQ != "" {
			isDLQ[q.DLQ] = true
		}
	}
	for id, q := range s.Resources.Queues {
		ga, err := s.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(q.URL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
		if err != nil {
			return nil, err
		}
		var c QueueCounts
		c.Name, c.LogicalID, c.DLQ = q.Name, id, isDLQ[id] || strings.HasSuffix(id, "DLQ")
		fmt.Sscan(ga.Attributes["ApproximateNumberOfMessages"], &c.Visible)
		fmt.Sscan(ga.Attributes["ApproximateNumberOfMessagesNotVisible"], &c.InFlight)
		fmt.Sscan(ga.Attributes["ApproximateNumberOfMessagesDelayed"], &c.Delayed)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// requestReadTimeout bounds reading a whole request, headers and body, as
// API Gateway bounds a request by its 30-second integration limit: a client
// that declares a body and stalls (Content-Length: 100, one byte sent) is
// answered 408 and its connection closed, instead of holding it for good.
// A WebSocket connection is not bounded by it once upgraded (net/http
// clears the deadline of a hijacked connection).
const requestReadTimeout = 30 * time.Second

// newHTTPServer is the runner's server: the request bounds above; idle
// keep-alive connections are kept as before (no idle timeout).
func newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: requestReadTimeout, IdleTimeout: -1}
}
