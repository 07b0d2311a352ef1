package metrics

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

// emfDoc is the EMF specification's shape, decoded strictly enough to fail
// on a malformed document.
type emfDoc struct {
	AWS struct {
		Timestamp         int64 `json:"Timestamp"`
		CloudWatchMetrics []struct {
			Namespace  string     `json:"Namespace"`
			Dimensions [][]string `json:"Dimensions"`
			Metrics    []struct {
				Name string `json:"Name"`
				Unit string `json:"Unit"`
			} `json:"Metrics"`
		} `json:"CloudWatchMetrics"`
	} `json:"_aws"`
	root map[string]any
}

func parse(t *testing.T, out []byte) []emfDoc {
	t.Helper()
	var docs []emfDoc
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var d emfDoc
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		if err := json.Unmarshal(sc.Bytes(), &d.root); err != nil {
			t.Fatal(err)
		}
		checkSpec(t, d)
		docs = append(docs, d)
	}
	return docs
}

// checkSpec applies the EMF specification's rules: every directive names a
// namespace, every dimension and every metric it lists is a root member,
// metric values are numbers or arrays of at most 100 numbers, at most 30
// dimensions per set and 100 metrics per document.
func checkSpec(t *testing.T, d emfDoc) {
	t.Helper()
	if d.AWS.Timestamp <= 0 || len(d.AWS.CloudWatchMetrics) == 0 {
		t.Fatalf("missing _aws.Timestamp or CloudWatchMetrics: %v", d.root)
	}
	metrics := 0
	for _, dir := range d.AWS.CloudWatchMetrics {
		if dir.Namespace == "" || len(dir.Dimensions) == 0 || len(dir.Metrics) == 0 {
			t.Fatalf("incomplete directive in %v", d.root)
		}
		for _, set := range dir.Dimensions {
			if len(set) > 30 {
				t.Fatalf("dimension set too large: %v", set)
			}
			for _, k := range set {
				if _, ok := d.root[k].(string); !ok {
					t.Fatalf("dimension %s is not a root string member of %v", k, d.root)
				}
			}
		}
		for _, m := range dir.Metrics {
			metrics++
			switch v := d.root[m.Name].(type) {
			case float64:
			case []any:
				if len(v) == 0 || len(v) > 100 {
					t.Fatalf("metric %s has %d values", m.Name, len(v))
				}
				for _, x := range v {
					if _, ok := x.(float64); !ok {
						t.Fatalf("metric %s value %v is not a number", m.Name, x)
					}
				}
			default:
				t.Fatalf("metric %s value %v (%T) is not a number", m.Name, d.root[m.Name], d.root[m.Name])
			}
		}
	}
	if metrics > 100 {
		t.Fatalf("%d metrics in one document", metrics)
	}
}

func (d emfDoc) directive(name string) (ns string, dims [][]string, unit string, ok bool) {
	for _, dir := range d.AWS.CloudWatchMetrics {
		for _, m := range dir.Metrics {
			if m.Name == name {
				return dir.Namespace, dir.Dimensions, m.Unit, true
			}
		}
	}
	return "", nil, "", false
}

var fixed = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestEMFDocuments(t *testing.T) {
	ctx := context.Background()
	emailHigh := Dims{Channel: domain.ChannelEmail, Priority: domain.PriorityHigh}
	tests := []struct {
		name   string
		record func(r Recorder)
		// want: per document (identified by its dimension values), metric → value.
		want map[string]map[string]any
		// dims: metric → dimension sets.
		dims map[string][][]string
		unit map[string]string
	}{
		{
			name: "counters under one dimension set share a document",
			record: func(r Recorder) {
				r.Add(ctx, Sent, emailHigh, 2)
				r.Add(ctx, Sent, emailHigh, 1)
				r.Add(ctx, Enqueued, emailHigh, 4)
			},
			want: map[string]map[string]any{"Channel=email,Priority=high": {"Sent": 3.0, "Enqueued": 4.0}},
			dims: map[string][][]string{"Sent": {{"Channel", "Priority"}, {"Channel"}}, "Enqueued": {{"Channel", "Priority"}}},
			unit: map[string]string{"Sent": "Count", "Enqueued": "Count"},
		},
		{
			name: "reasons are dimensions: one document per reason",
			record: func(r Recorder) {
				r.Add(ctx, Failed, Dims{Channel: domain.ChannelSMS, Priority: domain.PriorityLow, Reason: domain.ReasonExhausted}, 1)
				r.Add(ctx, Failed, Dims{Channel: domain.ChannelSMS, Priority: domain.PriorityLow, Reason: domain.ReasonRejected}, 2)
				r.Add(ctx, Skipped, Dims{Channel: domain.ChannelPush, Priority: domain.PriorityNormal, Reason: domain.ReasonNoContact}, 1)
			},
			want: map[string]map[string]any{
				"Channel=sms,Priority=low,Reason=exhausted":      {"Failed": 1.0},
				"Channel=sms,Priority=low,Reason=rejected":       {"Failed": 2.0},
				"Channel=push,Priority=normal,Reason=no_contact": {"Skipped": 1.0},
			},
			dims: map[string][][]string{"Failed": {{"Channel", "Priority", "Reason"}, {"Channel"}}, "Skipped": {{"Channel", "Priority", "Reason"}}},
		},
		{
			name: "intake metrics",
			record: func(r Recorder) {
				r.Add(ctx, Accepted, Dims{Priority: domain.PriorityNormal}, 5)
				r.Add(ctx, Replayed, Dims{Priority: domain.PriorityNormal}, 1)
				r.Add(ctx, Rejected, Dims{Code: "unknown_type"}, 2)
			},
			want: map[string]map[string]any{
				"Priority=normal":   {"Accepted": 5.0, "Replayed": 1.0},
				"Code=unknown_type": {"Rejected": 2.0},
			},
			dims: map[string][][]string{"Accepted": {{"Priority"}}, "Rejected": {{"Code"}}},
		},
		{
			name: "latency is a distribution in milliseconds with a priority rollup",
			record: func(r Recorder) {
				r.Observe(ctx, DeliveryLatency, emailHigh, 120)
				r.Observe(ctx, DeliveryLatency, emailHigh, Latency(fixed, fixed.Add(1500*time.Millisecond)))
				r.Observe(ctx, DeliveryLatency, emailHigh, -5)
			},
			want: map[string]map[string]any{"Channel=email,Priority=high": {"DeliveryLatency": []any{120.0, 1500.0, 0.0}}},
			dims: map[string][][]string{"DeliveryLatency": {{"Channel", "Priority"}, {"Priority"}}},
			unit: map[string]string{"DeliveryLatency": "Milliseconds"},
		},
		{
			name: "misuse is ignored: unknown names, wrong kinds, non-positive counts",
			record: func(r Recorder) {
				r.Add(ctx, Name("Bogus"), emailHigh, 1)
				r.Add(ctx, DeliveryLatency, emailHigh, 1)
				r.Observe(ctx, Sent, emailHigh, 1)
				r.Add(ctx, Sent, emailHigh, 0)
				r.Add(ctx, Sent, emailHigh, -3)
			},
			want: map[string]map[string]any{},
		},
		{
			name: "values outside the closed sets never become dimensions",
			record: func(r Recorder) {
				r.Add(ctx, Failed, Dims{Channel: "alice@example.com", Priority: "+15551234567", Reason: "Your code is 123456"}, 1)
				r.Add(ctx, Rejected, Dims{Code: "bob@example.com"}, 1)
				r.Add(ctx, Dropped, Dims{Channel: domain.ChannelSMS, Priority: domain.PriorityHigh, Reason: "15551234567"}, 1)
			},
			want: map[string]map[string]any{
				"Channel=invalid,Priority=invalid,Reason=invalid": {"Failed": 1.0},
				"Code=invalid": {"Rejected": 1.0},
				"Channel=sms,Priority=high,Reason=invalid": {"Dropped": 1.0},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			r := NewEMF(&buf, "", func() time.Time { return fixed })
			tt.record(r)
			r.Flush(ctx)
			docs := parse(t, buf.Bytes())
			got := map[string]map[string]any{}
			for _, d := range docs {
				key, vals := docKey(d)
				if _, dup := got[key]; dup {
					t.Errorf("two documents for %s", key)
				}
				got[key] = vals
				if d.AWS.Timestamp != fixed.UnixMilli() {
					t.Errorf("timestamp %d", d.AWS.Timestamp)
				}
				for name, want := range tt.dims {
					if ns, dims, _, ok := d.directive(name); ok {
						if ns != DefaultNamespace || !reflect.DeepEqual(dims, want) {
							t.Errorf("%s: namespace %q dimensions %v, want %q %v", name, ns, dims, DefaultNamespace, want)
						}
					}
				}
				for name, want := range tt.unit {
					if _, _, unit, ok := d.directive(name); ok && unit != want {
						t.Errorf("%s: unit %q, want %q", name, unit, want)
					}
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("documents\n got %v\nwant %v", got, tt.want)
			}
			// Flush forgets: a second flush writes nothing.
			buf.Reset()
			r.Flush(ctx)
			if buf.Len() != 0 {
				t.Errorf("second flush wrote %q", buf.String())
			}
		})
	}
}

// docKey names a document by its dimension values and returns its metric values.
func docKey(d emfDoc) (string, map[string]any) {
	var dims []string
	vals := map[string]any{}
	for _, k := range []string{DimChannel, DimPriority, DimReason, DimCode} {
		if v, ok := d.root[k]; ok {
			dims = append(dims, fmt.Sprintf("%s=%v", k, v))
		}
	}
	for _, n := range Names() {
		if v, ok := d.root[string(n)]; ok {
			vals[string(n)] = v
		}
	}
	return strings.Join(dims, ","), vals
}

func TestEMFSplitsLargeDistributions(t *testing.T) {
	var buf bytes.Buffer
	r := NewEMF(&buf, "Herald/test", nil)
	d := Dims{Channel: domain.ChannelPush, Priority: domain.PriorityLow}
	for i := range 250 {
		r.Observe(context.Background(), DeliveryLatency, d, float64(i))
	}
	r.Add(context.Background(), Sent, d, 250)
	r.Flush(context.Background())
	docs := parse(t, buf.Bytes())
	if len(docs) != 3 {
		t.Fatalf("%d documents, want 3 (100+100+50 values)", len(docs))
	}
	total, sent := 0, 0.0
	for _, doc := range docs {
		total += len(doc.root["DeliveryLatency"].([]any))
		if v, ok := doc.root["Sent"].(float64); ok {
			sent += v
		}
		if ns, _, _, _ := doc.directive("DeliveryLatency"); ns != "Herald/test" {
			t.Errorf("namespace %q", ns)
		}
	}
	if total != 250 || sent != 250 {
		t.Errorf("values %d, Sent %v; want 250 and 250 counted once", total, sent)
	}
}

func TestEMFConcurrentUse(t *testing.T) {
	var buf bytes.Buffer
	r := NewEMF(&buf, "", nil)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				r.Add(context.Background(), Retried, Dims{Channel: domain.ChannelEmail, Priority: domain.PriorityLow}, 1)
			}
		})
	}
	wg.Wait()
	r.Flush(context.Background())
	docs := parse(t, buf.Bytes())
	if len(docs) != 1 || docs[0].root["Retried"] != 800.0 {
		t.Fatalf("got %s", buf.String())
	}
}

func TestNopAndLatency(t *testing.T) {
	var r Recorder = Nop{}
	r.Add(context.Background(), Sent, Dims{}, 1)
	r.Observe(context.Background(), DeliveryLatency, Dims{}, 1)
	r.Flush(context.Background())
	if got := Latency(fixed, fixed.Add(2*time.Second)); got != 2000 {
		t.Errorf("Latency = %v", got)
	}
	for _, n := range Names() {
		if UnitOf(n) == "" {
			t.Errorf("%s has no unit", n)
		}
	}
}

func BenchmarkEMFInvocation(b *testing.B) {
	// One channel-worker invocation: a batch of 10 messages, each recording an
	// outcome and a latency, then one flush.
	ctx := context.Background()
	r := NewEMF(io.Discard, "", nil)
	d := Dims{Channel: domain.ChannelEmail, Priority: domain.PriorityNormal}
	b.ReportAllocs()
	for b.Loop() {
		for range 10 {
			r.Add(ctx, Sent, d, 1)
			r.Observe(ctx, DeliveryLatency, d, 830)
		}
		r.Flush(ctx)
	}
}

// TestEMFEmbed: Embed hands one set of dimensions to the caller's JSON log
// line, which is then a valid EMF document beside the line's own fields;
// Flush writes only the rest; what needs more than one document, and
// recorders that are not EMF, are left to Flush.
func TestEMFEmbed(t *testing.T) {
	var buf bytes.Buffer
	r := NewEMF(&buf, "", func() time.Time { return fixed })
	ctx := context.Background()
	high := Dims{Priority: domain.PriorityHigh}
	r.Add(ctx, Accepted, high, 1)
	r.Add(ctx, Rejected, Dims{Code: "invalid_json"}, 1)
	attrs := Embed(r, high)
	if Embed(r, high) != nil {
		t.Error("a second Embed of the same dimensions returned a document again")
	}
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	log.LogAttrs(ctx, slog.LevelInfo, "notification accepted", append([]slog.Attr{slog.String("notificationId", "n1")}, attrs...)...)
	r.Flush(ctx)
	docs := parse(t, buf.Bytes())
	if len(docs) != 2 {
		t.Fatalf("%d documents, want the log line and Rejected's:\n%s", len(docs), buf.String())
	}
	line := docs[0].root
	if line["msg"] != "notification accepted" || line["notificationId"] != "n1" || line["Accepted"] != 1.0 || line["Priority"] != "high" {
		t.Errorf("log line = %v", line)
	}
	if ns, dims, unit, ok := docs[0].directive("Accepted"); !ok || ns != DefaultNamespace || unit != "Count" || !reflect.DeepEqual(dims, [][]string{{"Priority"}}) || docs[0].AWS.Timestamp != fixed.UnixMilli() {
		t.Errorf("Accepted directive = %s %v %s %v", ns, dims, unit, ok)
	}
	if _, _, _, ok := docs[1].directive("Rejected"); !ok || docs[1].root["Accepted"] != nil {
		t.Errorf("flushed document = %v", docs[1].root)
	}

	// More than one document's worth stays for Flush, whole.
	buf.Reset()
	push := Dims{Channel: domain.ChannelPush, Priority: domain.PriorityLow}
	for i := range 150 {
		r.Observe(ctx, DeliveryLatency, push, float64(i))
	}
	if Embed(r, push) != nil {
		t.Error("150 values embedded in one line")
	}
	r.Flush(ctx)
	if docs := parse(t, buf.Bytes()); len(docs) != 2 {
		t.Errorf("%d documents after a refused Embed, want 2", len(docs))
	}
	if Embed(Nop{}, high) != nil || Embed(&Tally{}, high) != nil {
		t.Error("a recorder that is not EMF embedded something")
	}
}
