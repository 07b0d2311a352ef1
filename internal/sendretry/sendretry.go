// Package sendretry is the SDK retry policy of provider calls that have no
// idempotency token (SES SendEmail, SNS Publish): a resend after a lost
// answer can deliver the message twice, so the SDK may retry only when the
// provider said it did not act (throttling, 5xx) or the request provably
// never reached it. Anything else is left to the worker, which records the
// attempt and retries after its backoff (docs/decisions.md).
package sendretry

import (
	"errors"
	"net"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
)

// MaxBackoff caps the SDK's backoff between attempts so that in-invocation
// retries stay well inside the function timeout; longer outages are the
// queue's backoff.
const MaxBackoff = 2 * time.Second

// New is the standard retryer (3 attempts; throttling, 5xx and timeout
// answers) plus the given error codes, with backoff capped at MaxBackoff, in
// which connection errors are retried only when nothing was sent (see
// sentNothing).
func New(extraCodes ...string) aws.Retryer {
	var r aws.Retryer = retry.NewStandard(func(o *retry.StandardOptions) {
		o.Retryables = make([]retry.IsErrorRetryable, 0, len(retry.DefaultRetryables))
		for _, r := range retry.DefaultRetryables {
			if _, ok := r.(retry.RetryableConnectionError); ok {
				r = retry.IsErrorRetryableFunc(sentNothing)
			}
			o.Retryables = append(o.Retryables, r)
		}
	})
	if len(extraCodes) > 0 {
		r = retry.AddWithErrorCodes(r, extraCodes...)
	}
	return retry.AddWithMaxBackoffDelay(r, MaxBackoff)
}

// sentNothing decides the connection errors of a call: retryable when the
// request provably never reached the provider — no connection was made (dial,
// DNS, refused), or the server closed an idle connection the request was
// written to (Go's keep-alive race: the server never read it) — and not
// retryable for any other connection error (reset, EOF or timeout after the
// request was written), where the provider may have sent the message.
func sentNothing(err error) aws.Ternary {
	var conn interface{ ConnectionError() bool }
	var op *net.OpError
	var dns *net.DNSError
	switch {
	case errors.As(err, &op) && op.Op == "dial", errors.As(err, &dns) && !dns.IsNotFound:
		return aws.TrueTernary
	case strings.Contains(err.Error(), "server closed idle connection"), strings.Contains(err.Error(), "connection refused"):
		return aws.TrueTernary
	case errors.As(err, &conn) && conn.ConnectionError():
		return aws.FalseTernary
	}
	return aws.UnknownTernary
}

// OutcomeUnknown reports whether a provider call that failed with err (not a
// provider's answer) may still have been carried out: everything but a
// request that provably never reached the provider (sentNothing).
func OutcomeUnknown(err error) bool {
	return sentNothing(err) != aws.TrueTernary
}
