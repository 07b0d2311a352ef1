// Package apptest helps the wiring's tests: an aws.Config whose every AWS
// call fails at once and is recorded, to check what a constructor calls.
package apptest

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Recorder answers every AWS call with AccessDeniedException and records its
// target (the X-Amz-Target header).
type Recorder struct {
	mu      sync.Mutex
	targets []string
}

// Do implements aws.HTTPClient.
func (c *Recorder) Do(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.targets = append(c.targets, r.Header.Get("X-Amz-Target"))
	c.mu.Unlock()
	return &http.Response{StatusCode: 400, Header: http.Header{"Content-Type": {"application/x-amz-json-1.1"}},
		Body: io.NopCloser(strings.NewReader(`{"__type":"AccessDeniedException","message":"test"}`)), Request: r}, nil
}

// Called lists the targets called so far, comma-separated.
func (c *Recorder) Called() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.targets, ",")
}

// RecordingAWS returns a config sending every call to a new Recorder, with
// static credentials and no retries.
func RecordingAWS() (aws.Config, *Recorder) {
	rec := &Recorder{}
	return aws.Config{Region: "us-east-1", HTTPClient: rec, Retryer: func() aws.Retryer { return aws.NopRetryer{} },
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "x", SecretAccessKey: "x"}, nil
		})}, rec
}
