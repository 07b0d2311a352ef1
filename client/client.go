package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
)

// DevCallerHeader is the local stack's stand-in for SigV4: its value is the
// caller of service routes (see internal/devstack).
const DevCallerHeader = "X-Herald-Dev-Caller"

// signingService is API Gateway's SigV4 service name.
const signingService = "execute-api"

// Client calls Herald's service routes. It is safe for concurrent use.
type Client struct {
	base      *url.URL
	http      *http.Client
	devCaller string
	creds     aws.CredentialsProvider
	region    string
	signer    *v4.Signer
	retry     RetryPolicy
	userAgent string

	// now, sleep and newKey are replaced by tests.
	now    func() time.Time
	sleep  func(context.Context, time.Duration) error
	newKey func() string
}

// RetryPolicy bounds retries: at most MaxAttempts tries in all, waiting a
// random time between half and all of min(Max, Base·2^(attempt-1)) between
// them (or the server's Retry-After when longer, up to Max).
type RetryPolicy struct {
	MaxAttempts int
	Base        time.Duration
	Max         time.Duration
}

// DefaultRetryPolicy tries 4 times, waiting about 0.2s, 0.4s, 0.8s.
var DefaultRetryPolicy = RetryPolicy{MaxAttempts: 4, Base: 200 * time.Millisecond, Max: 5 * time.Second}

// Option configures a Client.
type Option func(*settings)

type settings struct {
	http      *http.Client
	devCaller string
	creds     aws.CredentialsProvider
	region    string
	awsConfig *aws.Config
	retry     RetryPolicy
	userAgent string
}

// WithDevCaller targets the local stack: instead of signing, every request
// names its caller in the X-Herald-Dev-Caller header, which the local
// gateway turns into the IAM principal. No AWS credentials are needed.
func WithDevCaller(caller string) Option {
	return func(s *settings) {
		if caller == "" {
			caller = "dev"
		}
		s.devCaller = caller
	}
}

// WithAWSConfig takes credentials and region from cfg (for example from
// config.LoadDefaultConfig with a profile) instead of loading the default
// configuration.
func WithAWSConfig(cfg aws.Config) Option {
	return func(s *settings) { s.awsConfig = &cfg }
}

// WithCredentials signs with p instead of the default credentials chain.
func WithCredentials(p aws.CredentialsProvider) Option {
	return func(s *settings) { s.creds = p }
}

// WithRegion sets the signing region. By default it is read from an
// execute-api endpoint's host name, else from the AWS configuration.
func WithRegion(region string) Option {
	return func(s *settings) { s.region = region }
}

// WithHTTPClient sends requests with hc (timeouts, proxies, transports).
func WithHTTPClient(hc *http.Client) Option {
	return func(s *settings) { s.http = hc }
}

// WithRetryPolicy replaces DefaultRetryPolicy; MaxAttempts 1 disables retries.
func WithRetryPolicy(p RetryPolicy) Option {
	return func(s *settings) { s.retry = p }
}

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option {
	return func(s *settings) { s.userAgent = ua }
}

// New returns a client for the Herald API at endpoint (the stack's ApiUrl
// output, e.g. https://abc123.execute-api.eu-west-1.amazonaws.com, or
// http://127.0.0.1:3000 for the local stack with WithDevCaller).
//
// Without WithDevCaller, WithCredentials or WithAWSConfig, New loads the AWS
// SDK's default configuration; credentials are resolved (and refreshed) when
// the first request is signed.
func New(endpoint string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimSuffix(endpoint, "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("herald client: endpoint %q must be an absolute http(s) URL without query", endpoint)
	}
	s := settings{retry: DefaultRetryPolicy, userAgent: "herald-go-client"}
	for _, o := range opts {
		o(&s)
	}
	if s.retry.MaxAttempts < 1 {
		s.retry.MaxAttempts = 1
	}
	c := &Client{base: u, http: s.http, devCaller: s.devCaller, retry: s.retry, userAgent: s.userAgent,
		now: time.Now, sleep: sleepContext, newKey: newIdempotencyKey}
	if c.http == nil {
		c.http = &http.Client{Timeout: 30 * time.Second}
	}
	if c.devCaller != "" {
		return c, nil
	}
	c.signer = v4.NewSigner()
	c.creds, c.region = s.creds, s.region
	if c.region == "" {
		c.region = regionFromHost(u.Hostname())
	}
	if c.creds == nil || c.region == "" {
		cfg := s.awsConfig
		if cfg == nil {
			loaded, err := config.LoadDefaultConfig(context.Background())
			if err != nil {
				return nil, fmt.Errorf("herald client: AWS configuration: %w", err)
			}
			cfg = &loaded
		}
		if c.creds == nil {
			c.creds = cfg.Credentials
		}
		if c.region == "" {
			c.region = cfg.Region
		}
	}
	if c.creds == nil {
		return nil, errors.New("herald client: no AWS credentials provider (configure the SDK's default chain, or use WithCredentials or WithDevCaller)")
	}
	if c.region == "" {
		return nil, errors.New("herald client: no AWS region (set AWS_REGION, or use WithRegion)")
	}
	if _, cached := c.creds.(*aws.CredentialsCache); !cached {
		c.creds = aws.NewCredentialsCache(c.creds)
	}
	return c, nil
}

// regionFromHost reads the region of {api}.execute-api.{region}.amazonaws.com.
func regionFromHost(host string) string {
	parts := strings.Split(host, ".")
	for i := 0; i+2 < len(parts); i++ {
		if parts[i] == "execute-api" {
			return parts[i+1]
		}
	}
	return ""
}

// call is one API operation.
type call struct {
	method string
	path   string
	query  url.Values
	body   any
	// idempotencyKey is sent as Idempotency-Key on every attempt.
	idempotencyKey string
	// ok lists the statuses that are success; others are errors.
	ok []int
	// out receives the JSON body of a success.
	out any
}

// result is what a successful call answered.
type result struct {
	status   int
	header   http.Header
	attempts int
}

// do runs c with retries and decodes the answer.
func (c *Client) do(ctx context.Context, op call) (*result, error) {
	var payload []byte
	var err error
	if op.body != nil {
		if payload, err = json.Marshal(op.body); err != nil {
			return nil, fmt.Errorf("herald client: encode %s %s: %w", op.method, op.path, err)
		}
	}
	u := *c.base
	u.RawPath = c.base.EscapedPath() + op.path // op.path has its segments escaped
	if u.Path, err = url.PathUnescape(u.RawPath); err != nil {
		return nil, fmt.Errorf("herald client: path %q: %w", op.path, err)
	}
	if len(op.query) > 0 {
		u.RawQuery = op.query.Encode()
	}
	var lastErr error
	for attempt := 1; ; attempt++ {
		res, raw, err := c.attempt(ctx, op, u.String(), payload)
		if err == nil {
			res.attempts = attempt
			if isOK(res.status, op.ok) {
				if op.out != nil && len(raw) > 0 {
					if err := json.Unmarshal(raw, op.out); err != nil {
						return nil, fmt.Errorf("herald client: decode %s %s answer: %w", op.method, op.path, err)
					}
				}
				return res, nil
			}
			apiErr := errorFrom(res.status, res.header, raw)
			if !retryableStatus(res.status) || attempt >= c.retry.MaxAttempts {
				apiErr.Attempts = attempt
				return res, apiErr
			}
			lastErr = apiErr
			if err := c.sleep(ctx, c.backoff(attempt, retryAfter(res.header))); err != nil {
				return nil, fmt.Errorf("herald client: %s %s: %w (last answer: %v)", op.method, op.path, err, lastErr)
			}
			continue
		}
		if ctx.Err() != nil || !retryableError(err) || attempt >= c.retry.MaxAttempts {
			return nil, fmt.Errorf("herald client: %s %s after %d attempt(s): %w", op.method, op.path, attempt, err)
		}
		if err := c.sleep(ctx, c.backoff(attempt, 0)); err != nil {
			return nil, fmt.Errorf("herald client: %s %s: %w", op.method, op.path, err)
		}
	}
}

// attempt sends one request, signed anew (SigV4 signatures carry the time).
func (c *Client) attempt(ctx context.Context, op call, target string, payload []byte) (*result, []byte, error) {
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, op.method, target, body)
	if err != nil {
		return nil, nil, errPermanent{err}
	}
	req.Header.Set("Accept", "application/json, application/problem+json")
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if op.idempotencyKey != "" {
		req.Header.Set("Idempotency-Key", op.idempotencyKey)
	}
	if c.userAgent != "" {
		req.Header.Set("User-Agent", c.userAgent)
	}
	if err := c.authorize(ctx, req, payload); err != nil {
		return nil, nil, errPermanent{err}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, nil, err
	}
	return &result{status: resp.StatusCode, header: resp.Header}, raw, nil
}

// authorize signs req with SigV4 for execute-api (the payload's SHA-256 is
// part of the signature), or names the dev caller.
func (c *Client) authorize(ctx context.Context, req *http.Request, payload []byte) error {
	if c.devCaller != "" {
		req.Header.Set(DevCallerHeader, c.devCaller)
		return nil
	}
	creds, err := c.creds.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("AWS credentials: %w", err)
	}
	sum := sha256.Sum256(payload)
	return c.signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), signingService, c.region, c.now())
}

// errPermanent marks an error that a retry cannot fix.
type errPermanent struct{ error }

func (e errPermanent) Unwrap() error { return e.error }

func retryableError(err error) bool {
	var p errPermanent
	return !errors.As(err, &p)
}

func retryableStatus(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}

func isOK(status int, ok []int) bool {
	for _, s := range ok {
		if s == status {
			return true
		}
	}
	return false
}

// backoff is the wait before attempt+1: "equal jitter" on an exponential
// curve, so that clients retrying together spread out but still wait.
func (c *Client) backoff(attempt int, serverHint time.Duration) time.Duration {
	d := c.retry.Base << (attempt - 1)
	if d <= 0 || d > c.retry.Max {
		d = c.retry.Max
	}
	d = d/2 + mrand.N(d/2+1)
	if serverHint > d {
		d = min(serverHint, c.retry.Max)
	}
	return d
}

func retryAfter(h http.Header) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return time.Until(t)
	}
	return 0
}

func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// newIdempotencyKey is 128 random bits, so keys of different requests never
// collide.
func newIdempotencyKey() string {
	return "hc-" + rand.Text()
}
