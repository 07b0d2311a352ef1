package apifn_test

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/app/apifn"
	"github.com/heraldhq/herald/internal/app/apptest"
	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/queue"
)

// TestIntakeCountsAreFlushedPerInvocation: the wiring gives the notification
// routes the router's recorder, so what intake counts is flushed with the
// invocation (two recorders would lose it). A batch of items of an unknown
// type makes no AWS call and counts each refused item.
func TestIntakeCountsAreFlushedPerInvocation(t *testing.T) {
	cfg, calls := apptest.RecordingAWS()
	env := map[string]string{"TABLE_NAME": "herald", queue.CampaignQueueEnv: "https://sqs.us-east-1.amazonaws.com/123456789012/campaign"}
	tally := &metrics.Tally{}
	h, err := apifn.New(app.Deps{AWS: cfg, Getenv: func(k string) string { return env[k] }, Now: time.Now,
		Log: slog.New(slog.DiscardHandler), Catalog: catalog.MustLoad(), Metrics: tally})
	if err != nil {
		t.Fatal(err)
	}
	ev := events.APIGatewayV2HTTPRequest{RouteKey: "POST /v1/notifications/batch", RawPath: "/v1/notifications/batch",
		Headers: map[string]string{"content-type": "application/json"},
		Body:    `{"notifications":[{"idempotencyKey":"a","type":"nope.a","recipient":{"userId":"u1"}},{"idempotencyKey":"b","type":"nope.b","recipient":{"userId":"u1"}}]}`}
	ev.RequestContext.HTTP.Method = http.MethodPost
	ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: "arn:aws:iam::123456789012:user/svc"}}
	resp, err := h.Handle(context.Background(), ev)
	if err != nil || resp.StatusCode != http.StatusMultiStatus {
		t.Fatalf("batch: %d %s %v", resp.StatusCode, resp.Body, err)
	}
	if got := tally.Count(metrics.Rejected, metrics.Dims{Code: "unknown_type"}); got != 2 || tally.Flushes() != 1 {
		t.Errorf("Rejected unknown_type = %d, flushes %d; want 2 in the invocation's one flush", got, tally.Flushes())
	}
	if c := calls.Called(); c != "" {
		t.Errorf("AWS calls %s, want none", c)
	}
}
