package app

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
)

// The template declares AWS_ENDPOINT_URL, UNSUBSCRIBE_SECRET and
// VAPID_PRIVATE_KEY with empty values so that `sam local invoke --env-vars`
// can set them; in AWS they stay empty and must mean "unset".

func TestEmptyEndpointURLIsIgnored(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_REGION", "us-east-1")
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BaseEndpoint != nil {
		t.Errorf("BaseEndpoint = %q, want none (the service's own endpoint)", *cfg.BaseEndpoint)
	}
}

// recordingClient answers every AWS call with an error and records its target.
type recordingClient struct {
	mu      sync.Mutex
	targets []string
}

func (c *recordingClient) Do(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.targets = append(c.targets, r.Header.Get("X-Amz-Target"))
	c.mu.Unlock()
	return &http.Response{StatusCode: 400, Header: http.Header{"Content-Type": {"application/x-amz-json-1.1"}},
		Body: io.NopCloser(strings.NewReader(`{"__type":"AccessDeniedException","message":"test"}`)), Request: r}, nil
}

func (c *recordingClient) called() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.targets, ",")
}

func awsRecording() (aws.Config, *recordingClient) {
	rec := &recordingClient{}
	return aws.Config{Region: "us-east-1", HTTPClient: rec, Retryer: func() aws.Retryer { return aws.NopRetryer{} },
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "x", SecretAccessKey: "x"}, nil
		})}, rec
}

func TestEmptySecretsFallBackToAWS(t *testing.T) {
	t.Run("VAPID_PRIVATE_KEY empty: the SSM parameter is read", func(t *testing.T) {
		cfg, rec := awsRecording()
		d := deps(map[string]string{"VAPID_PRIVATE_KEY": "", "VAPID_PRIVATE_KEY_PARAMETER": "/herald/vapid-private-key",
			"VAPID_PUBLIC_KEY": "B" + strings.Repeat("A", 86), "VAPID_SUBJECT": "mailto:ops@example.com", "TABLE_NAME": "t"})
		d.AWS = cfg
		_, err := NewPush(context.Background(), d)
		if err == nil || !strings.Contains(rec.called(), "AmazonSSM.GetParameter") {
			t.Errorf("want a GetParameter call (and its error), got calls %q, err %v", rec.called(), err)
		}
	})
	t.Run("UNSUBSCRIBE_SECRET empty: the secret is read", func(t *testing.T) {
		cfg, rec := awsRecording()
		d := deps(map[string]string{"UNSUBSCRIBE_SECRET": "", "UNSUBSCRIBE_SECRET_ARN": "arn:aws:secretsmanager:us-east-1:1:secret:x"})
		d.AWS = cfg
		l, err := newLazyUnsubscribeSigner(d)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.get(context.Background()); err == nil || !strings.Contains(rec.called(), "secretsmanager.GetSecretValue") {
			t.Errorf("want a GetSecretValue call (and its error), got calls %q, err %v", rec.called(), err)
		}
	})
}
