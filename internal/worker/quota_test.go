package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/policy"
)

// fakeQuota is the conditional ADD of dynamo.Store.TakeSendToken in memory.
type fakeQuota struct {
	mu     sync.Mutex
	counts map[string]int
	calls  int
	err    error
}

func (q *fakeQuota) TakeSendToken(_ context.Context, c domain.Channel, shard int, windowStart time.Time, _ time.Duration, limit int) (bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.calls++
	if q.err != nil {
		return false, q.err
	}
	k := fmt.Sprintf("%s/%d/%d", c, shard, windowStart.Unix())
	if q.counts[k] >= limit {
		return false, nil
	}
	q.counts[k]++
	return true, nil
}

type requeueCall struct {
	body  string
	delay time.Duration
}

type fakeRequeuer struct {
	mu    sync.Mutex
	calls []requeueCall
	err   error
}

func (r *fakeRequeuer) Requeue(_ context.Context, _, body string, delay time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, requeueCall{body, delay})
	return r.err
}

func TestSendQuota(t *testing.T) {
	const rate = 10 // one shard: high cap 10, bulk cap 6
	window := fixedAt.Truncate(time.Second).Unix()
	for _, tc := range []struct {
		name       string
		typ        string // normal (bulk) or high
		used       int    // sends already counted in this window
		receives   int
		rate       int
		quotaErr   error
		requeueErr error
		wantSent   bool
		wantFailed bool
		wantVis    []time.Duration // allowed visibility timeouts (any of)
		wantQueue  bool            // re-sent to its queue
		wantCalls  int             // TakeSendToken calls
		wantStatus domain.Status
	}{
		{name: "bulk within its share sends", typ: "reservation.approved", used: 5, receives: 1, wantSent: true, wantCalls: 1, wantStatus: domain.StatusSent},
		{name: "bulk over its share is deferred without an attempt", typ: "reservation.approved", used: 6, receives: 1,
			wantFailed: true, wantVis: []time.Duration{time.Second, 2 * time.Second}, wantCalls: 1, wantStatus: domain.StatusQueued},
		{name: "high takes the reserve bulk cannot", typ: "security.login_alert", used: 9, receives: 1, wantSent: true, wantCalls: 1, wantStatus: domain.StatusSent},
		{name: "high with the whole quota used waits one window", typ: "security.login_alert", used: 10, receives: 1,
			wantFailed: true, wantVis: []time.Duration{time.Second}, wantCalls: 1, wantStatus: domain.StatusQueued},
		{name: "deferred before the last receive is re-sent, not redriven", typ: "reservation.approved", used: 6, receives: 5,
			wantQueue: true, wantCalls: 1, wantStatus: domain.StatusQueued},
		{name: "on the last receive too", typ: "reservation.approved", used: 6, receives: 6,
			wantQueue: true, wantCalls: 1, wantStatus: domain.StatusQueued},
		{name: "a failed re-send falls back to visibility", typ: "reservation.approved", used: 6, receives: 5, requeueErr: errors.New("sqs down"),
			wantFailed: true, wantQueue: true, wantVis: []time.Duration{time.Second, 2 * time.Second}, wantCalls: 1, wantStatus: domain.StatusQueued},
		{name: "quota store error retries after the backoff, no send", typ: "reservation.approved", receives: 1, quotaErr: errors.New("table down"),
			wantFailed: true, wantCalls: 1, wantStatus: domain.StatusQueued},
		{name: "unlimited asks nothing", typ: "reservation.approved", used: 100, receives: 1, rate: -1, wantSent: true, wantStatus: domain.StatusSent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rate
			if tc.rate < 0 {
				r = 0
			}
			h := newHarness(t, domain.ChannelEmail, Config{BackoffBase: 20 * time.Second, BackoffCap: 15 * time.Minute, MaxReceiveCount: 6,
				SendQuota: policy.SendQuota{Rate: r, BulkShare: 60}})
			q := &fakeQuota{counts: map[string]int{fmt.Sprintf("email/0/%d", window): tc.used}, err: tc.quotaErr}
			rq := &fakeRequeuer{err: tc.requeueErr}
			rec := &recorder{counts: map[string]int{}}
			h.deps.Quota, h.deps.Requeuer, h.deps.Metrics = q, rq, rec
			h.handler = New(h.deps)
			h.notification("n1", tc.typ, domain.ChannelEmail, domain.StatusQueued)
			msg := message("m1", "n1", domain.ChannelEmail, tc.receives)

			failed := h.handle(t, msg)

			if (len(failed) == 1) != tc.wantFailed {
				t.Errorf("failed %v, want failed=%v", failed, tc.wantFailed)
			}
			if sent := h.provider.sends() == 1; sent != tc.wantSent {
				t.Errorf("provider called=%v, want %v", sent, tc.wantSent)
			}
			d := h.store.delivery("n1", domain.ChannelEmail)
			if d.Status != tc.wantStatus {
				t.Errorf("status %s, want %s", d.Status, tc.wantStatus)
			}
			if !tc.wantSent && d.Attempts != 0 {
				t.Errorf("attempts %d: finding no quota must not burn an attempt", d.Attempts)
			}
			if q.calls != tc.wantCalls {
				t.Errorf("%d quota requests, want %d", q.calls, tc.wantCalls)
			}
			if tc.wantQueue != (len(rq.calls) == 1) {
				t.Errorf("requeues %v, want requeued=%v", rq.calls, tc.wantQueue)
			} else if tc.wantQueue && (rq.calls[0].body != msg.Body || rq.calls[0].delay < time.Second) {
				t.Errorf("requeued %+v, want the same body delayed ≥ 1s", rq.calls[0])
			}
			vis := h.vis.all()
			if tc.wantVis != nil && (len(vis) != 1 || !slices.Contains(tc.wantVis, vis[0].timeout)) {
				t.Errorf("visibility %v, want one of %v", vis, tc.wantVis)
			}
			deferred := !tc.wantSent && tc.quotaErr == nil
			if got := rec.counts["QuotaDeferred/email/"+string(d.Priority)+"/"] == 1; got != deferred {
				t.Errorf("metrics %v, want QuotaDeferred=%v", rec.counts, deferred)
			}
		})
	}
}

// TestSendQuotaBulkNeverStarvesHigh: a full batch of bulk traffic in one
// window leaves exactly the reserve, which high priority then gets whole.
func TestSendQuotaBulkNeverStarvesHigh(t *testing.T) {
	h := newHarness(t, domain.ChannelEmail, Config{BackoffBase: 20 * time.Second, BackoffCap: 15 * time.Minute, MaxReceiveCount: 6,
		SendQuota: policy.SendQuota{Rate: 10, BulkShare: 60}})
	h.deps.Quota, h.deps.Requeuer = &fakeQuota{counts: map[string]int{}}, &fakeRequeuer{}
	h.handler = New(h.deps)
	for i := range 10 {
		h.notification(fmt.Sprintf("b%d", i), "reservation.approved", domain.ChannelEmail, domain.StatusQueued)
		h.notification(fmt.Sprintf("h%d", i), "security.login_alert", domain.ChannelEmail, domain.StatusQueued)
	}
	bulkMsgs, highMsgs := tenMessages("b"), tenMessages("h")
	if failed := h.handle(t, bulkMsgs...); len(failed) != 4 {
		t.Fatalf("bulk: %d deferred, want 4 (6 of 10 within the 60%% share)", len(failed))
	}
	if failed := h.handle(t, highMsgs...); len(failed) != 6 {
		t.Fatalf("high: %d deferred, want 6 (the 4 reserved sends go out)", len(failed))
	}
	if got := h.provider.sends(); got != 10 {
		t.Errorf("%d sends in the window, want the rate, 10", got)
	}
}

func tenMessages(prefix string) (out []events.SQSMessage) {
	for i := range 10 {
		id := fmt.Sprintf("%s%d", prefix, i)
		out = append(out, message("m-"+id, id, domain.ChannelEmail, 1))
	}
	return out
}

// countingQuota is fakeQuota counting every write (refused ones too) per shard.
type countingQuota struct {
	fakeQuota
	writes map[int]int
}

func (q *countingQuota) TakeSendToken(ctx context.Context, c domain.Channel, shard int, w time.Time, win time.Duration, limit int) (bool, error) {
	q.mu.Lock()
	q.writes[shard]++
	q.mu.Unlock()
	return q.fakeQuota.TakeSendToken(ctx, c, shard, w, win, limit)
}

// BenchmarkSendQuotaRequests reports the quota's DynamoDB cost at the
// campaign peak (20,000/s, 40 shards) for one window offered twice the rate
// (90 % bulk, 10 % high) by 200 worker instances: requests per send, per
// deferral, and the most writes (admitted plus refused) any one shard item
// takes in the window, which must stay under a partition's 1,000/s.
func BenchmarkSendQuotaRequests(b *testing.B) {
	q := policy.SendQuota{Rate: 20000, BulkShare: 60}
	const instances = 200
	ctx := context.Background()
	var sends, deferred, requests, hottest int
	for b.Loop() {
		cq := &countingQuota{fakeQuota: fakeQuota{counts: map[string]int{}}, writes: map[int]int{}}
		hs := make([]*Handler, instances)
		for i := range hs {
			hs[i] = New(Deps{Config: Config{SendQuota: q}, Quota: cq, Now: func() time.Time { return fixedAt }})
		}
		for i := range 2 * q.Rate {
			p := domain.PriorityLow
			if i%10 == 0 {
				p = domain.PriorityHigh
			}
			if ok, _ := hs[i%instances].takeQuota(ctx, domain.ChannelEmail, p); ok {
				sends++
			} else {
				deferred++
			}
		}
		for _, w := range cq.writes {
			requests += w
			hottest = max(hottest, w)
		}
	}
	b.ReportMetric(float64(requests)/float64(sends), "requests/send")
	b.ReportMetric(float64(requests-sends)/float64(max(deferred, 1)), "refused-requests/deferral")
	b.ReportMetric(float64(hottest), "max-writes/shard/window")
	b.ReportMetric(float64(sends)/float64(b.N), "sends/window")
	if hottest > 1000 {
		b.Fatalf("a shard took %d writes in one window, over a partition's 1,000/s", hottest)
	}
}
