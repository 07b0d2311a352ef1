// Package app wires each Lambda function from its environment. The Lambda
// mains and the local runner call the same constructors, so what runs locally
// is exactly what Lambda runs; only the environment differs.
package app

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/heraldhq/herald/internal/api"
	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/email"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/policy"
	"github.com/heraldhq/herald/internal/push"
	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/relay"
	"github.com/heraldhq/herald/internal/scheduler"
	"github.com/heraldhq/herald/internal/sms"
	"github.com/heraldhq/herald/internal/webpush"
	"github.com/heraldhq/herald/internal/worker"
)

// Deps are the process-wide dependencies every function shares.
type Deps struct {
	AWS    aws.Config
	Getenv func(string) string
	Now    func() time.Time
	Log    *slog.Logger
	// Catalog is the embedded catalog, parsed once per process.
	Catalog *catalog.Catalog
	// Metrics records operational metrics (EMF on stdout in Lambda); nil
	// records nothing.
	Metrics metrics.Recorder
}

// Recorder is the metrics recorder handlers take: Metrics, or a no-op.
func (d Deps) Recorder() metrics.Recorder {
	if d.Metrics == nil {
		return metrics.Nop{}
	}
	return d.Metrics
}

func (d Deps) require(names ...string) (map[string]string, error) {
	out := map[string]string{}
	var missing []string
	for _, n := range names {
		v := d.Getenv(n)
		if v == "" {
			missing = append(missing, n)
		}
		out[n] = v
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing environment: %s", strings.Join(missing, ", "))
	}
	return out, nil
}

func (d Deps) store() (*dynamo.Store, error) {
	env, err := d.require("TABLE_NAME")
	if err != nil {
		return nil, err
	}
	opts := []dynamo.Option{dynamo.WithClock(d.Now)}
	if v := d.Getenv("RETENTION_DAYS"); v != "" {
		days, err := strconv.Atoi(v)
		if err != nil || days < 1 {
			return nil, fmt.Errorf("RETENTION_DAYS %q: want a positive integer", v)
		}
		opts = append(opts, dynamo.WithRetention(time.Duration(days)*24*time.Hour))
	}
	return dynamo.New(dynamodb.NewFromConfig(d.AWS), env["TABLE_NAME"], opts...), nil
}

// NewAPI wires the HTTP API function.
func NewAPI(d Deps) (*api.Handler, error) {
	st, err := d.store()
	if err != nil {
		return nil, err
	}
	return api.New(api.Deps{Notifications: st, Inbox: st, Announcements: st, Catalog: d.Catalog, Now: d.Now, NewID: randomID, Log: d.Log, Metrics: d.Recorder(),
		Users: st, PushSubscriptions: st, Preferences: st,
		AllowInsecurePushLoopback: d.Getenv("PUSH_ALLOW_INSECURE_LOOPBACK") == "true",
		Unsubscribe:               api.Unsubscribe{Store: st, Tokens: &lazyUnsubscribeSigner{d: d}}}), nil
}

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	return api.NewRandomID(b[:])
}

// NewRelay wires the stream relay function.
func NewRelay(d Deps) (*relay.Handler, error) {
	st, err := d.store()
	if err != nil {
		return nil, err
	}
	pub, err := d.publisher()
	if err != nil {
		return nil, err
	}
	limits, err := policy.LimitsFromEnv(d.Getenv)
	if err != nil {
		return nil, err
	}
	return relay.New(st, pub, dynamo.DecodeStreamNotification, d.Catalog, d.Now, d.Log, relay.WithLimits(limits), relay.WithMetrics(d.Recorder())), nil
}

// NewScheduler wires the scheduler function.
func NewScheduler(d Deps) (*scheduler.Handler, error) {
	st, err := d.store()
	if err != nil {
		return nil, err
	}
	pub, err := d.publisher()
	if err != nil {
		return nil, err
	}
	env, err := d.require(queue.ReleaseQueueEnv)
	if err != nil {
		return nil, err
	}
	releases := queue.NewReleases(sqs.NewFromConfig(d.AWS), env[queue.ReleaseQueueEnv])
	return scheduler.New(st, pub, releases, d.Now, d.Log).WithMetrics(d.Recorder()), nil
}

// publisher sends work messages to the nine queues named in the environment.
func (d Deps) publisher() (*queue.Publisher, error) {
	urls, err := queue.URLsFromEnv(d.Getenv)
	if err != nil {
		return nil, err
	}
	return queue.NewPublisher(sqs.NewFromConfig(d.AWS), urls), nil
}

// WorkerConfig reads the retry settings shared by the channel functions.
func WorkerConfig(d Deps) (worker.Config, error) {
	env, err := d.require("BACKOFF_BASE", "BACKOFF_CAP", "MAX_RECEIVE_COUNT")
	if err != nil {
		return worker.Config{}, err
	}
	var cfg worker.Config
	if cfg.BackoffBase, err = time.ParseDuration(env["BACKOFF_BASE"]); err != nil || cfg.BackoffBase <= 0 {
		return cfg, fmt.Errorf("BACKOFF_BASE %q: want a positive Go duration", env["BACKOFF_BASE"])
	}
	if cfg.BackoffCap, err = time.ParseDuration(env["BACKOFF_CAP"]); err != nil || cfg.BackoffCap < cfg.BackoffBase {
		return cfg, fmt.Errorf("BACKOFF_CAP %q: want a Go duration ≥ BACKOFF_BASE", env["BACKOFF_CAP"])
	}
	if cfg.MaxReceiveCount, err = strconv.Atoi(env["MAX_RECEIVE_COUNT"]); err != nil || cfg.MaxReceiveCount < 1 {
		return cfg, fmt.Errorf("MAX_RECEIVE_COUNT %q: want a positive integer", env["MAX_RECEIVE_COUNT"])
	}
	return cfg, nil
}

func (d Deps) worker(p worker.Provider) (*worker.Handler, error) {
	st, err := d.store()
	if err != nil {
		return nil, err
	}
	return d.workerOn(st, p)
}

// workerOn wires a worker on a store the provider may share (push deletes
// gone subscriptions through it).
func (d Deps) workerOn(st *dynamo.Store, p worker.Provider) (*worker.Handler, error) {
	cfg, err := WorkerConfig(d)
	if err != nil {
		return nil, err
	}
	return worker.New(cfg, st, queue.NewVisibility(sqs.NewFromConfig(d.AWS)), p, d.Catalog, d.Now, d.Log).WithMetrics(d.Recorder()), nil
}

// NewEmail wires the email function. UNSUBSCRIBE_URL is the public URL of
// the API's /v1/unsubscribe route, put in List-Unsubscribe with a signed token.
func NewEmail(d Deps) (*worker.Handler, error) {
	env, err := d.require("EMAIL_FROM", "UNSUBSCRIBE_URL")
	if err != nil {
		return nil, err
	}
	signer, err := newLazyUnsubscribeSigner(d)
	if err != nil {
		return nil, err
	}
	client := sesv2.NewFromConfig(d.AWS, func(o *sesv2.Options) { o.Retryer = email.Retryer() })
	return d.worker(email.New(client, email.Config{
		From: env["EMAIL_FROM"], ConfigurationSet: d.Getenv("SES_CONFIGURATION_SET"),
		Unsubscribe: unsubscribeLinks{signer: signer, base: env["UNSUBSCRIBE_URL"]},
	}))
}

// NewSMS wires the SMS function.
func NewSMS(d Deps) (*worker.Handler, error) {
	client := sns.NewFromConfig(d.AWS, func(o *sns.Options) { o.Retryer = sms.Retryer() })
	return d.worker(sms.New(client, sms.Config{SenderID: d.Getenv("SMS_SENDER_ID")}))
}

// NewPush wires the push function. The VAPID private key comes from the
// environment when given (VAPID_PRIVATE_KEY, the local stack's configuration),
// else from the SSM SecureString parameter VAPID_PRIVATE_KEY_PARAMETER.
func NewPush(ctx context.Context, d Deps) (*worker.Handler, error) {
	env, err := d.require("VAPID_PUBLIC_KEY", "VAPID_SUBJECT")
	if err != nil {
		return nil, err
	}
	private := d.Getenv("VAPID_PRIVATE_KEY")
	if private == "" {
		name := d.Getenv("VAPID_PRIVATE_KEY_PARAMETER")
		if name == "" {
			return nil, fmt.Errorf("missing environment: VAPID_PRIVATE_KEY_PARAMETER")
		}
		out, err := ssm.NewFromConfig(d.AWS).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name), WithDecryption: aws.Bool(true)})
		if err != nil {
			return nil, fmt.Errorf("read VAPID private key parameter %s: %w", name, err)
		}
		private = aws.ToString(out.Parameter.Value)
	}
	keys, err := webpush.ParseVAPIDKeys(env["VAPID_PUBLIC_KEY"], private)
	if err != nil {
		return nil, err
	}
	sender, err := webpush.NewSender(webpush.SenderConfig{
		Keys: keys, Contact: env["VAPID_SUBJECT"], Now: d.Now,
		AllowInsecureLoopback: d.Getenv("PUSH_ALLOW_INSECURE_LOOPBACK") == "true",
	})
	if err != nil {
		return nil, err
	}
	st, err := d.store()
	if err != nil {
		return nil, err
	}
	return d.workerOn(st, push.New(sender, st, d.Now))
}
