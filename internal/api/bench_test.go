package api

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
)

// acceptingStore accepts every notification without keeping it, so the
// benchmark measures the handler, not a growing map.
type acceptingStore struct{ *fakeStore }

func (acceptingStore) CreateNotification(_ context.Context, n *domain.Notification) (*domain.Notification, error) {
	return n, nil
}

// BenchmarkCreateNotification is the intake handler per accepted
// notification: API Gateway event in, 202 event out, with an in-memory store
// (figures in docs/benchmarks.md; the 20 µs goal is retired).
func BenchmarkCreateNotification(b *testing.B) {
	store := acceptingStore{newFakeStore()}
	h := New(Deps{Notifications: NewNotifications(NotificationsDeps{
		Notifications: store, Catalog: catalog.MustLoad(), Now: func() time.Time { return testNow }, NewID: func() string { return "n0" },
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})})
	ev := events.APIGatewayV2HTTPRequest{
		RouteKey: "POST /v1/notifications",
		Headers: map[string]string{"content-type": "application/json", "idempotency-key": "order-1234-payment-failed",
			"user-agent": "billing/1.0", "host": "api.example.com"},
		Body: `{"type":"invoice.payment_failed","recipient":{"userId":"user-42","email":"user42@example.com","locale":"ja-JP"},` +
			`"data":{"invoiceUrl":"https://billing.example.com/invoices/9f2c"},"resourceId":"inv-9f2c","expiresAt":"2026-03-08T00:00:00Z"}`,
		RequestContext: events.APIGatewayV2HTTPRequestContext{Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: "arn:aws:sts::123456789012:assumed-role/Billing/session-1"},
		}},
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		resp, _ := h.Handle(ctx, ev)
		if resp.StatusCode != 202 {
			b.Fatalf("status %d %s", resp.StatusCode, resp.Body)
		}
	}
}
