package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/metrics"
)

// TestIntakeMetrics: accepted, replayed and rejected intake requests (and
// batch items) are counted, once per outcome, flushed per invocation.
func TestIntakeMetrics(t *testing.T) {
	ta := newTestAPI(t)
	tally := &metrics.Tally{}
	ta.h.metrics, ta.notifications.metrics = tally, tally
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

// TestAcceptLineIsTheMetricsDocument: a single intake request writes one
// JSON line that is both the accept line the runbook's queries find and a
// valid EMF document with the Accepted metric; a batch keeps one document of
// its own; at a level that drops the line the document is written alone.
func TestAcceptLineIsTheMetricsDocument(t *testing.T) {
	for _, c := range []struct {
		name, level   string
		batch         bool
		wantCombined  bool
		wantDocuments int
	}{
		{name: "single", level: "INFO", wantCombined: true, wantDocuments: 1},
		{name: "batch", level: "INFO", batch: true, wantDocuments: 1},
		{name: "single at WARN", level: "WARN", wantDocuments: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			ta := newTestAPI(t)
			var out bytes.Buffer
			ta.h.log = app.NewLogger(&out, func(k string) string { return map[string]string{"LOG_LEVEL": c.level}[k] })
			ta.h.metrics = metrics.NewEMF(&out, "", func() time.Time { return testNow })
			ta.notifications.log, ta.notifications.metrics = ta.h.log, ta.h.metrics
			// An invocation as Lambda makes it (its request id is in the lines).
			ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "8f5c2b1e-1d7a-4c3b-9e2f-0a1b2c3d4e5f"})
			call := apiCall{route: "POST /v1/notifications", body: validInvoice, caller: "svc", ctx: ctx, headers: map[string]string{}}
			if c.batch {
				call.route = "POST /v1/notifications/batch"
				call.body = `{"notifications":[` + strings.Replace(validInvoice, `{"type"`, `{"idempotencyKey":"b1","type"`, 1) + `]}`
			}
			if resp := ta.do(t, call); resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusMultiStatus {
				t.Fatalf("%s = %d %s", call.route, resp.StatusCode, resp.Body)
			}
			var docs, combined int
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				t.Logf("%d B: %s", len(line)+1, line)
				if strings.Contains(line, "u1@example.com") {
					t.Errorf("the address is in a log line: %s", line)
				}
				var doc map[string]any
				if err := json.Unmarshal([]byte(line), &doc); err != nil {
					t.Fatalf("not JSON: %s", line)
				}
				if _, ok := doc["_aws"]; !ok {
					continue
				}
				docs++
				checkEMF(t, doc, "Accepted", 1, map[string]string{"Priority": "high"})
				if doc["message"] == "notification accepted" {
					combined++
					for k, want := range map[string]any{"level": "INFO", "priority": "high", "type": "invoice.payment_failed", "outcome": "accepted"} {
						if doc[k] != want {
							t.Errorf("%s = %v, want %v", k, doc[k], want)
						}
					}
					if id, _ := doc["notificationId"].(string); id == "" || doc["timestamp"] == nil || doc["requestId"] == nil {
						t.Errorf("notificationId %q, timestamp or requestId missing: %s", id, line)
					}
				}
			}
			if docs != c.wantDocuments || (combined == 1) != c.wantCombined || combined > 1 {
				t.Errorf("%d EMF documents, %d of them the accept line; want %d, combined %v", docs, combined, c.wantDocuments, c.wantCombined)
			}
		})
	}
}

// checkEMF asserts that doc is a valid EMF document publishing metric with
// value under the dimensions dims.
func checkEMF(t *testing.T, doc map[string]any, metric string, value float64, dims map[string]string) {
	t.Helper()
	var meta struct {
		Timestamp         int64
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct{ Name, Unit string }
		}
	}
	raw, _ := json.Marshal(doc["_aws"])
	if err := json.Unmarshal(raw, &meta); err != nil || meta.Timestamp != testNow.UnixMilli() || len(meta.CloudWatchMetrics) == 0 {
		t.Fatalf("_aws = %s (%v)", raw, err)
	}
	found := false
	for _, d := range meta.CloudWatchMetrics {
		if d.Namespace != metrics.DefaultNamespace {
			t.Errorf("namespace %q", d.Namespace)
		}
		for _, set := range d.Dimensions {
			for _, name := range set {
				if _, ok := doc[name].(string); !ok {
					t.Errorf("dimension %s has no string value in the document", name)
				}
			}
		}
		for _, m := range d.Metrics {
			if m.Name == metric {
				found = true
				if m.Unit != "Count" || doc[metric] != value {
					t.Errorf("%s = %v %s, want %v Count", metric, doc[metric], m.Unit, value)
				}
				if len(d.Dimensions) != 1 || len(d.Dimensions[0]) != len(dims) {
					t.Errorf("%s dimensions = %v, want %v", metric, d.Dimensions, dims)
				}
			}
		}
	}
	for k, v := range dims {
		if doc[k] != v {
			t.Errorf("dimension %s = %v, want %s", k, doc[k], v)
		}
	}
	if !found {
		t.Errorf("%s not declared in _aws.CloudWatchMetrics", metric)
	}
}
