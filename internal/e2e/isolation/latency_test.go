package isolation

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
)

// The steady traffic of BenchmarkLatencyObjective: one high and one normal
// email every tick for a phase, each to a user of its own (normal priority
// is rate limited per user).
const (
	latencyTick     = 250 * time.Millisecond
	latencyPhase    = 12 * time.Second
	latencyCampaign = 1000 // users of the low campaign draining meanwhile (one inline chunk)
)

// BenchmarkLatencyObjective is issue 42 §2's `make bench-latency`: the
// stack driven at a steady rate (4 high and 4 normal emails a second) for
// three phases after an unmeasured one that warms the emulators — idle, with a 1,000-user low campaign draining, idle again
// once it is cancelled and its queue empty — and accepted → sent (the
// stack's clock stamps both) p50/p99 per priority and phase. The high
// ratio is the loaded p99 over the mean of the bracketing idle p99s (an
// A-B-A design: the shared machine drifts; goal ≤ 1.2). Bounded: three
// phases of 12 s and the warm-up, the campaign's profiles, and waits of at most a few
// minutes; loopback only.
func BenchmarkLatencyObjective(b *testing.B) {
	st := stacktest.Stack(b)
	for i := range b.N {
		run := fmt.Sprintf("slo-%d-%d", i, time.Now().UnixNano())
		users := campaignUsers(b, run, latencyCampaign)
		steady(b, st, run+"-warm") // the emulators' JITs: a cold first phase measured 10 × the next idle one
		idle := steady(b, st, run+"-idle")

		hc := stacktest.Client(b, "")
		ctx := context.Background()
		c, err := hc.CreateCampaign(ctx, client.Campaign{Type: "reservation.approved", Data: map[string]string{"reservationUrl": "https://example.com/r/slo"},
			Channels: []string{"email"}, Audience: &client.Audience{UserIDs: users}})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := hc.StartCampaign(ctx, c.ID); err != nil {
			b.Fatal(err)
		}
		stacktest.Eventually(b, 2*time.Minute, "the campaign's first sends", func() bool {
			c, err = hc.GetCampaign(ctx, c.ID)
			return err == nil && c.Sent > 0
		})
		sentBefore, backlog := c.Sent, lowPending(b, st)
		loaded := steady(b, st, run+"-loaded")
		if c, err = hc.GetCampaign(ctx, c.ID); err != nil {
			b.Fatal(err)
		}
		lowRate := float64(c.Sent-sentBefore) / latencyPhase.Seconds()
		backlogEnd := lowPending(b, st)
		if c.Status == "done" || backlogEnd == 0 {
			b.Fatalf("the low campaign was drained before the loaded phase ended (%d sent): nothing loaded it", c.Sent)
		}
		if _, err := hc.CancelCampaign(ctx, c.ID); err != nil {
			b.Fatal(err)
		}
		stacktest.Eventually(b, 3*time.Minute, "the low queue empty", func() bool { return lowPending(b, st) == 0 })
		idleAgain := steady(b, st, run+"-idle-again")

		fmt.Fprintf(os.Stdout, "\n%-8s %-12s %8s %8s %6s\n", "priority", "phase", "p50", "p99", "n")
		for _, p := range []domain.Priority{domain.PriorityHigh, domain.PriorityNormal} {
			for _, ph := range []struct {
				name string
				l    map[domain.Priority][]time.Duration
			}{{"idle", idle}, {"low drain", loaded}, {"idle again", idleAgain}} {
				fmt.Fprintf(os.Stdout, "%-8s %-12s %8s %8s %6d\n", p, ph.name, quantile(ph.l[p], 50).Round(time.Millisecond), quantile(ph.l[p], 99).Round(time.Millisecond), len(ph.l[p]))
			}
		}
		high := func(l map[domain.Priority][]time.Duration, q int) time.Duration {
			return quantile(l[domain.PriorityHigh], q)
		}
		ratio := float64(high(loaded, 99)) / float64((high(idle, 99)+high(idleAgain, 99))/2)
		ratio50 := float64(high(loaded, 50)) / float64((high(idle, 50)+high(idleAgain, 50))/2)
		fmt.Fprintf(os.Stdout, "high p99 loaded ÷ idle %.2f (goal ≤ 1.2), p50 %.2f; low campaign: %.1f sent/s during the loaded phase, %d → %d messages on the low queue\n",
			ratio, ratio50, lowRate, backlog, backlogEnd)
		for _, p := range []domain.Priority{domain.PriorityHigh, domain.PriorityNormal} {
			b.ReportMetric(float64(quantile(idle[p], 99).Milliseconds()), string(p)+"_p99_idle_ms")
			b.ReportMetric(float64(quantile(loaded[p], 99).Milliseconds()), string(p)+"_p99_loaded_ms")
		}
		b.ReportMetric(ratio, "high_p99_ratio")
		b.ReportMetric(ratio50, "high_p50_ratio")
		b.ReportMetric(lowRate, "low_sent/s")
	}
}

// campaignUsers stores n profiles with an email address straight into the
// table (the API's PUT is not what is measured) and returns their ids.
func campaignUsers(b *testing.B, run string, n int) []string {
	b.Helper()
	st := observer(stacktest.Stack(b))
	ids := make([]string, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				if err := st.PutUser(context.Background(), &domain.User{ID: ids[i], Email: ids[i] + "@example.com"}); err != nil {
					b.Error(err)
				}
			}
		})
	}
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-c%04d", run, i)
		next <- i
	}
	close(next)
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	return ids
}

// steady posts one high and one normal email every latencyTick for
// latencyPhase, then waits until all are sent, and returns accepted → sent
// per priority.
func steady(b *testing.B, st *devstack.Stack, run string) map[domain.Priority][]time.Duration {
	b.Helper()
	ids := map[domain.Priority][]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	tick := time.NewTicker(latencyTick)
	defer tick.Stop()
	for i := 0; i < int(latencyPhase/latencyTick); i++ {
		for _, p := range []domain.Priority{domain.PriorityHigh, domain.PriorityNormal} {
			wg.Go(func() {
				resp := stacktest.Do(b, http.MethodPost, "/v1/notifications", email(map[string]any{"priority": string(p)})(fmt.Sprintf("%s-%s-%d", run, p, i)))
				var out struct{ ID string }
				if resp.StatusCode != http.StatusAccepted {
					b.Errorf("POST = %d %s", resp.StatusCode, resp.Body)
					return
				}
				resp.JSON(b, &out)
				mu.Lock()
				ids[p] = append(ids[p], out.ID)
				mu.Unlock()
			})
		}
		<-tick.C
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	out := map[domain.Priority][]time.Duration{}
	for p, pids := range ids {
		ds, accepted := waitFor(b, st, pids, domain.ChannelEmail, 2*time.Minute, sent)
		for _, id := range pids {
			out[p] = append(out[p], ds[id].UpdatedAt.Sub(accepted[id]))
		}
	}
	return out
}

// quantile is the nearest-rank q-th percentile.
func quantile(ds []time.Duration, q int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := (q*len(s) + 99) / 100
	return s[max(rank-1, 0)]
}
