package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/metrics"
)

// TestIntakeMetrics: accepted, replayed and rejected intake requests (and
// batch items) are counted, once per outcome, flushed per invocation.
func TestIntakeMetrics(t *testing.T) {
	ta := newTestAPI(t)
	tally := &metrics.Tally{}
	ta.h.metrics = tally
	ta.post(t, validInvoice, "Idempotency-Key: m1")
	ta.post(t, validInvoice, "Idempotency-Key: m1")
	ta.post(t, `{"type":`)
	ta.post(t, `{"type":"nope.nope","recipient":{"userId":"u1"},"data":{}}`)
	batch := `{"notifications":[` + strings.Replace(validInvoice, `{"type"`, `{"idempotencyKey":"b1","type"`, 1) + `,{"idempotencyKey":"b2","type":"nope"}]}`
	if resp := ta.do(t, apiCall{route: "POST /v1/notifications/batch", body: batch, caller: "svc"}); resp.StatusCode != http.StatusMultiStatus {
		t.Fatalf("batch = %d %s", resp.StatusCode, resp.Body)
	}
	high := metrics.Dims{Priority: domain.PriorityHigh}
	for _, c := range []struct {
		name metrics.Name
		dims metrics.Dims
		want int
	}{
		{metrics.Accepted, high, 2},
		{metrics.Replayed, high, 1},
		{metrics.Rejected, metrics.Dims{Code: "invalid_json"}, 1},
		{metrics.Rejected, metrics.Dims{Code: "unknown_type"}, 2},
	} {
		if got := tally.Count(c.name, c.dims); got != c.want {
			t.Errorf("%s %+v = %d, want %d", c.name, c.dims, got, c.want)
		}
	}
	if tally.Total(metrics.Rejected) != 3 {
		t.Errorf("Rejected total = %d, want 3", tally.Total(metrics.Rejected))
	}
	if tally.Flushes() != 5 {
		t.Errorf("flushed %d times, want once per invocation (5)", tally.Flushes())
	}
}
