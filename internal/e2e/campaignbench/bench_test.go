// Package campaignbench measures a campaign's fan-out on a private local
// stack (no send quota): how many recipients a campaign invocation turns
// into notifications per second of its own run time, and how many AWS
// requests the campaign function makes per recipient, planning, lot and
// reconcile included (the notification's own delivery is
// internal/e2e/cost's). Run by `make bench`:
//
//	go test -run '^$' -bench CampaignLot -benchtime 1x ./internal/e2e/campaignbench
package campaignbench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

// logs are the functions' log lines: the lot's "campaign lot created" line
// ends the fan-out phase.
var logs = &stacktest.LogBuffer{}

func TestMain(m *testing.M) {
	if !benchmarking() {
		os.Exit(m.Run())
	}
	// The template's reconcile delay (30 s) keeps the first recount out of
	// the fan-out phase; the scheduler's tick out of the counts.
	stacktest.Main(m, devstack.Config{ScheduleInterval: time.Hour, Logs: logs})
}

func benchmarking() bool {
	for _, a := range os.Args[1:] {
		if v, ok := strings.CutPrefix(a, "-test.bench="); ok && v != "" && v != "^$" {
			return true
		}
	}
	return false
}

// lot is one campaign lot's worth of recipients: the fan-out's unit.
const lot = 1000

// do sends one request as the dev caller, retrying 5xx, 429 and network
// errors as a caller would; it never calls b.Fatal (goroutine-safe).
func do(apiURL, method, path string, body any) (int, []byte, error) {
	raw, _ := json.Marshal(body)
	var last error
	for attempt := range 8 {
		if attempt > 0 {
			time.Sleep(min(100*time.Millisecond<<attempt, 5*time.Second))
		}
		req, err := http.NewRequest(method, apiURL+path, bytes.NewReader(raw))
		if err != nil {
			return 0, nil, err
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		} else {
			req.Body = http.NoBody
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			last = err
			continue
		}
		out, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests {
			return resp.StatusCode, out, nil
		}
		last = fmt.Errorf("%s %s: %d %s %v", method, path, resp.StatusCode, out, err)
	}
	return 0, nil, last
}

func must(b *testing.B, want int, method, path string, body, v any) {
	b.Helper()
	status, raw, err := do(stacktest.Stack(b).APIURL, method, path, body)
	if err != nil || status != want {
		b.Fatalf("%s %s: %d %s %v, want %d", method, path, status, raw, err, want)
	}
	if v != nil {
		if err := json.Unmarshal(raw, v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCampaignLot: one campaign of one lot (1,000 users with an email
// profile, uploaded as one recipients chunk) from start to done.
func BenchmarkCampaignLot(b *testing.B) {
	st := stacktest.Stack(b)
	for range b.N {
		run := stacktest.UniqueID("cb")
		ids := make([]string, lot)
		var wg sync.WaitGroup
		errs := make(chan error, lot)
		sem := make(chan struct{}, 12)
		for i := range ids {
			ids[i] = fmt.Sprintf("%s-%04d", run, i)
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				if status, raw, err := do(st.APIURL, http.MethodPut, "/v1/users/"+ids[i], map[string]any{"email": ids[i] + "@example.com"}); err != nil || status/100 != 2 {
					errs <- fmt.Errorf("PUT user: %d %s %v", status, raw, err)
				}
			})
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
		var c struct {
			ID, Status                                           string
			Recipients, Notified, Sent, Skipped, Failed, Dropped int
		}
		must(b, http.StatusCreated, http.MethodPost, "/v1/campaigns", map[string]any{
			"type": "reservation.approved", "data": map[string]any{"reservationUrl": "https://example.com/r/1"}, "channels": []string{"email"},
		}, &c)
		must(b, http.StatusOK, http.MethodPost, "/v1/campaigns/"+c.ID+"/recipients", map[string]any{"chunk": 0, "userIds": ids}, nil)
		time.Sleep(2 * time.Second) // the setup's own stream records pass
		st.Calls.Reset()
		st.Usage.Reset()
		logsBefore := len(logs.String())

		started := time.Now()
		must(b, http.StatusAccepted, http.MethodPost, "/v1/campaigns/"+c.ID+"/start", nil, nil)
		// Fan-out: planning and the lot, until the lot says it created its
		// notifications (its reconcile is 30 s later).
		deadline := time.Now().Add(3 * time.Minute)
		for !strings.Contains(logs.String()[logsBefore:], `"campaign lot created"`) {
			if time.Now().After(deadline) {
				b.Fatal("the lot never finished")
			}
			time.Sleep(100 * time.Millisecond)
		}
		fanoutWall := time.Since(started)
		fanout := st.Usage.Snapshot().Invocations["CampaignFunction"]
		fanoutCalls := st.Calls.FunctionSnapshot("CampaignFunction")

		// Then until done: reconciles, and every delivery.
		for c.Status != "done" {
			if time.Now().After(deadline) {
				b.Fatalf("campaign not done: %+v", c)
			}
			time.Sleep(time.Second)
			must(b, http.StatusOK, http.MethodGet, "/v1/campaigns/"+c.ID, nil, &c)
		}
		if c.Recipients != lot || c.Sent != lot {
			b.Fatalf("campaign done with %+v, want %d sent", c, lot)
		}
		total := st.Usage.Snapshot().Invocations["CampaignFunction"]
		campaignCalls := st.Calls.FunctionSnapshot("CampaignFunction")

		perRecipient := func(calls map[string]int) float64 { return float64(sum(calls)) / lot }
		b.ReportMetric(lot/fanout.Duration.Seconds(), "recipients/s/invocation")
		b.ReportMetric(perRecipient(fanoutCalls), "fanout-requests/recipient")
		b.ReportMetric(perRecipient(campaignCalls), "campaign-requests/recipient")
		b.Logf("fan-out of %d: %d invocations, %s of run time, %s wall from start; requests %s",
			lot, fanout.Count, fanout.Duration.Round(time.Millisecond), fanoutWall.Round(time.Millisecond), breakdown(fanoutCalls))
		b.Logf("campaign function until done: %d invocations, %s; requests %s", total.Count, total.Duration.Round(time.Millisecond), breakdown(campaignCalls))
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// breakdown lists operation counts, largest first.
func breakdown(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return m[b] - m[a] })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
