package campaigneta

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/client"
	wire "github.com/heraldhq/herald/client/events"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
)

const (
	// lot is the size of each chunk: eight lots of 250, each creating its
	// notifications well within the campaign function's 60 s on a loaded
	// machine (two lots of 1,000 under -race at load 24 did not: retried at
	// every timeout, nothing recorded in 6 minutes).
	lot = 250
)

// campaignEvents are the Campaign State Change details of campaign id, in
// the order the local bus received them.
func campaignEvents(t testing.TB, id string) []wire.CampaignDetail {
	t.Helper()
	var out struct {
		Events []struct {
			DetailType string          `json:"detail-type"`
			Detail     json.RawMessage `json:"detail"`
		}
	}
	stacktest.Do(t, http.MethodGet, "/_dev/events", nil).JSON(t, &out)
	var ds []wire.CampaignDetail
	for _, e := range out.Events {
		if e.DetailType != wire.CampaignDetailType {
			continue
		}
		var d wire.CampaignDetail
		if err := json.Unmarshal(e.Detail, &d); err != nil {
			t.Fatalf("detail %s: %v", e.Detail, err)
		}
		if d.CampaignID == id {
			ds = append(ds, d)
		}
	}
	return ds
}

// TestCampaignFinishEstimate: issue 42 §3's "Done means" — see the package
// comment. The estimate at start (POST …/start's answer) is within 25 % of
// the real drain (startedAt → finishedAt); each progress event's estimate
// is nearer the real finish than the start's, the last within 25 % of the
// time left then… and the finished event carries the finish.
func TestCampaignFinishEstimate(t *testing.T) {
	ctx := context.Background()
	hc := stacktest.Client(t, "", client.WithRetryPolicy(client.RetryPolicy{MaxAttempts: 10, Base: 200 * time.Millisecond, Max: 5 * time.Second}))
	run := stacktest.UniqueID("eta")
	ids := make([]string, users)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-u%04d", run, i)
	}
	// Profiles straight into the table (the API's PUT is not what is under
	// test, and 2,000 of them took 1m43s through it on the loaded machine).
	st := stacktest.Store(t)
	began := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, users)
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				if err := st.PutUser(ctx, &domain.User{ID: ids[i], Email: ids[i] + "@example.com"}); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range ids {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d profiles in %s", users, time.Since(began).Round(time.Millisecond))

	c, err := hc.CreateCampaign(ctx, client.Campaign{Type: "reservation.approved", Data: map[string]string{"reservationUrl": "https://example.com/r/eta"},
		Channels: []string{"email"}, Audience: &client.Audience{UserIDs: ids[:min(lot, users)]}, IdempotencyKey: run})
	if err != nil {
		t.Fatal(err)
	}
	if c.EstimatedCompletionAt == nil || c.Estimate == nil || c.Estimate.RecipientsLeft != min(lot, users) {
		t.Fatalf("created without the estimate for its inline audience: %+v %+v", c, c.Estimate)
	}
	for n := 1; n*lot < users; n++ {
		part := ids[n*lot : min((n+1)*lot, users)]
		if got, err := hc.AddRecipients(ctx, c.ID, int64(n), part); err != nil || got != len(part) {
			t.Fatalf("chunk %d: %d, %v", n, got, err)
		}
	}
	if c, err = hc.StartCampaign(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if c.EstimatedCompletionAt == nil || c.StartedAt == nil || c.Estimate == nil {
		t.Fatalf("started without an estimate: %+v", c)
	}
	startAt := *c.EstimatedCompletionAt
	startEstimate := startAt.Sub(*c.StartedAt)
	wantRate := float64(emailRate) * 5 * bulkShare / 100 / 6 // the bulk share of 5/6 of the rate
	// The tail: the 2 s recount after the last send and the 2 s the last
	// quota-deferred sends wait out.
	if c.Estimate.RecipientsLeft != users || math.Abs(c.Estimate.RecipientsPerSecond-wantRate) > 1e-9 || c.Estimate.TailSeconds != 4 {
		t.Fatalf("estimate %+v, want %d left at %.1f/s with a 4 s tail", c.Estimate, users, wantRate)
	}

	for deadline := time.Now().Add(6 * time.Minute); c.Status != "done"; time.Sleep(time.Second) {
		if time.Now().After(deadline) {
			t.Fatalf("not done after 6 minutes: %d of %d sent, %.1f/s against the %.1f/s the quota allows: the machine, not the quota, paces this run; %+v",
				c.Sent, users, float64(c.Sent)/time.Since(*c.StartedAt).Seconds(), wantRate, c)
		}
		if c, err = hc.GetCampaign(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
	}
	drain := c.FinishedAt.Sub(*c.StartedAt)
	errRatio := (drain - startEstimate).Seconds() / drain.Seconds()
	t.Logf("campaign of %d at %.1f/s: estimated %s at start, drained in %s (error %+.1f %%); whole test %s",
		users, wantRate, startEstimate.Round(time.Millisecond), drain.Round(time.Millisecond), 100*errRatio, time.Since(began).Round(time.Second))
	if c.Sent != users {
		t.Errorf("sent %d of %d", c.Sent, users)
	}
	if math.Abs(errRatio) > 0.25 {
		t.Errorf("start estimate %s against a drain of %s: %+.1f %%, over 25 %%", startEstimate, drain, 100*errRatio)
	}

	// The events: started with the start's estimate, progress as it drains
	// with estimates nearing the finish, finished at the finish.
	var ds []wire.CampaignDetail
	stacktest.Eventually(t, 30*time.Second, "the finished event", func() bool {
		ds = campaignEvents(t, c.ID)
		return len(ds) > 0 && ds[len(ds)-1].Status == wire.CampaignFinished
	})
	finish := *c.FinishedAt
	var progress []wire.CampaignDetail
	for _, d := range ds {
		if d.EstimatedCompletionAt == nil {
			t.Fatalf("%s event without an estimate", d.Status)
		}
		off := d.EstimatedCompletionAt.Sub(finish)
		t.Logf("%-8s at +%5.1f s: %4d left, estimate %+6.1f s from the finish", d.Status, d.At.Sub(*c.StartedAt).Seconds(), d.Counts.Recipients-d.Counts.Sent-d.Counts.Skipped-d.Counts.Failed-d.Counts.Dropped, off.Seconds())
		if d.Status == wire.CampaignProgress {
			progress = append(progress, d)
		}
	}
	if len(progress) < 5 {
		t.Fatalf("%d progress events, want one per tenth crossed (nine at most, five at least over a %s drain)", len(progress), drain)
	}
	// Approaching: each progress estimate is no further from the finish
	// than the one before (give or take one recount, the counts' lag), and
	// the last is nearer than the start's.
	abs := func(d time.Duration) time.Duration { return max(d, -d) }
	tail := time.Duration(c.Estimate.TailSeconds * float64(time.Second))
	prev := abs(startAt.Sub(finish))
	for _, d := range progress {
		off := abs(d.EstimatedCompletionAt.Sub(finish))
		if off > prev+tail {
			t.Errorf("progress at %s: estimate %s from the finish, after %s: moving away", d.At, off, prev)
		}
		prev = off
	}
	if first, last := abs(startAt.Sub(finish)), abs(progress[len(progress)-1].EstimatedCompletionAt.Sub(finish)); last >= first {
		t.Errorf("the last progress estimate is %s from the finish, the start's %s: not approaching it", last, first)
	}
	if f := ds[len(ds)-1]; !f.EstimatedCompletionAt.Equal(finish) {
		t.Errorf("finished event's estimate %s, want the finish %s", f.EstimatedCompletionAt, finish)
	}
}
