package sms

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/devstack/smssink"
	"github.com/heraldhq/herald/internal/domain"
)

// Publish has no idempotency token: when SNS read a Publish and the answer
// was lost, the SDK must not publish again (a second text to the phone); the
// call fails transient after one attempt and the worker's retry, which
// records the attempt, decides. Answers saying SNS did not act are retried.
func TestRetryerNeverRepublishesWhatSNSMayHaveSent(t *testing.T) {
	drop := func(w http.ResponseWriter) {
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	}
	tests := []struct {
		name      string
		publish   func(n int32, w http.ResponseWriter) bool // n: 1-based Publish number; false passes it to the sink
		publishes int32
		sent      bool
	}{
		{name: "read, then the connection drops without an answer", publishes: 1, publish: func(_ int32, w http.ResponseWriter) bool {
			drop(w)
			return true
		}},
		{name: "503 once, then accepted", publishes: 2, sent: true, publish: func(n int32, w http.ResponseWriter) bool {
			if n > 1 {
				return false
			}
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := smssink.New(nil)
			var publishes atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				if form, _ := url.ParseQuery(string(body)); form.Get("Action") == "Publish" && tt.publish(publishes.Add(1), w) {
					return
				}
				sink.APIHandler().ServeHTTP(w, r)
			}))
			defer srv.Close()
			client := sns.New(sns.Options{
				Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
				Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
				Retryer:     retry.AddWithMaxBackoffDelay(Retryer(), time.Millisecond),
			})
			id, err := New(client, Config{}).Send(context.Background(), message(domain.PriorityHigh, "+15550004444"))
			if got := publishes.Load(); got != tt.publishes {
				t.Errorf("%d Publish requests, want %d", got, tt.publishes)
			}
			if tt.sent {
				if err != nil || id == "" || len(sink.Messages()) != 1 {
					t.Fatalf("Send = %q, %v; %d captured", id, err, len(sink.Messages()))
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
