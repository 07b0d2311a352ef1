package email

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	"github.com/heraldhq/herald/internal/channel"
)

// countingClient counts the HTTP requests the SDK makes, whether or not a
// connection is made.
type countingClient struct {
	n    atomic.Int32
	next *http.Client
}

func (c *countingClient) Do(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.Do(r)
}

// sesAt is the real SES v2 client with the provider's retry policy (its
// backoff shortened for the test), talking to endpoint.
func sesAt(endpoint string) (*sesv2.Client, *countingClient) {
	hc := &countingClient{next: &http.Client{}}
	return sesv2.New(sesv2.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(endpoint), HTTPClient: hc, Retryer: retry.AddWithMaxBackoffDelay(Retryer(), time.Millisecond),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
	}), hc
}

// SendEmail has no idempotency token: the SDK retries a call only when SES
// answered that it did not act (throttling, 5xx) or the request never left
// (no connection). A request that got no answer may have been sent: the
// call fails transient after one attempt, and the worker's own retry (which
// records the attempt) decides.
func TestRetryerNeverResendsARequestSESMayHaveSent(t *testing.T) {
	tests := []struct {
		name     string
		server   func(n int32, w http.ResponseWriter, r *http.Request) // n: 1-based request number
		closed   bool                                                  // no server listening
		requests int32
		sent     bool
	}{
		{name: "read, then the connection drops without an answer", requests: 1, server: func(_ int32, w http.ResponseWriter, _ *http.Request) {
			conn, _, _ := w.(http.Hijacker).Hijack()
			_ = conn.(*net.TCPConn).SetLinger(0) // a reset, as a dying peer or middlebox sends
			conn.Close()
		}},
		{name: "read, then closed without an answer", requests: 1, server: func(_ int32, w http.ResponseWriter, _ *http.Request) {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		}},
		{name: "503 twice, then accepted", requests: 3, sent: true, server: func(n int32, w http.ResponseWriter, _ *http.Request) {
			if n < 3 {
				w.Header().Set("X-Amzn-Errortype", "ServiceUnavailable")
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			_, _ = w.Write([]byte(`{"MessageId":"m-1"}`))
		}},
		{name: "throttled, then accepted", requests: 2, sent: true, server: func(n int32, w http.ResponseWriter, _ *http.Request) {
			if n < 2 {
				w.Header().Set("X-Amzn-Errortype", "TooManyRequestsException")
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = w.Write([]byte(`{"message":"Maximum sending rate exceeded"}`))
				return
			}
			_, _ = w.Write([]byte(`{"MessageId":"m-1"}`))
		}},
		{name: "connection refused", closed: true, requests: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var served atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				tt.server(served.Add(1), w, r)
			}))
			endpoint := srv.URL
			if tt.closed {
				srv.Close()
			} else {
				defer srv.Close()
			}
			client, hc := sesAt(endpoint)
			id, err := New(client, Config{From: "notifications@example.com"}).Send(context.Background(), message(t, "invoice.payment_failed"))
			if got := hc.n.Load(); got != tt.requests {
				t.Errorf("%d requests, want %d", got, tt.requests)
			}
			if tt.sent {
				if err != nil || id != "m-1" {
					t.Fatalf("Send = %q, %v", id, err)
				}
				return
			}
			var pe *channel.ProviderError
			if !errors.As(err, &pe) || !pe.Transient {
				t.Fatalf("Send = %q, %v; want a transient failure for the worker to retry", id, err)
			}
		})
	}
}
