package ops_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/failover"
	"github.com/heraldhq/herald/internal/ops"
	"github.com/heraldhq/herald/internal/storetest"
)

func TestProvidersListAndForce(t *testing.T) {
	ctx, now := context.Background(), time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	b := storetest.NewMemBreakers()
	for range failover.DefaultRules.Threshold {
		if _, _, err := b.RecordFailure(ctx, "ses:us-east-1", now, failover.DefaultRules); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if err := ops.Providers(ctx, &out, b, now.Add(time.Second), nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "ses:us-east-1  open") {
		t.Errorf("list:\n%s\nwant ses:us-east-1 open", out.String())
	}
	out.Reset()
	if err := ops.Providers(ctx, &out, b, now, []string{"force", "ses:us-east-1", "closed"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.Breaker(ctx, "ses:us-east-1"); got.State(now) != failover.Closed || got.Forced != failover.ForceClosed {
		t.Errorf("after force closed: %+v", got)
	}
	if err := ops.Providers(ctx, &out, b, now, []string{"force", "ses:us-east-1", "half"}); !ops.IsUsage(err) {
		t.Errorf("force half: %v; want a usage error", err)
	}
}
