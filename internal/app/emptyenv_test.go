package app

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/config"
)

// The template declares AWS_ENDPOINT_URL, UNSUBSCRIBE_SECRET and
// VAPID_PRIVATE_KEY with empty values so that `sam local invoke --env-vars`
// can set them; in AWS they stay empty and must mean "unset". The secrets'
// cases are tested where they are read: app/pushfn and app/unsubscribekey.

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
