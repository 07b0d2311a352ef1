package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/policy"
)

// fakeQuota is the conditional ADD of dynamo.Quotas.TakeSendToken in memory.
type fakeQuota struct {
	mu     sync.Mutex
	counts map[string]int
	calls  int
	err    error
}

// quotaKey is fakeQuota's key of a shard's slot.
func quotaKey(c domain.Channel, shard int, slot time.Time) string {
	return fmt.Sprintf("%s/%d/%d", c, shard, slot.UnixMilli())
}

func (q *fakeQuota) TakeSendToken(_ context.Context, c domain.Channel, shard int, windowStart time.Time, _ time.Duration, limit int) (bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.calls++
	if q.err != nil {
		return false, q.err
	}
	k := quotaKey(c, shard, windowStart)
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

// testClock is a clock the tests move: the worker's quota waits advance it.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *testClock) Advance(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

// slowClaimStore is a store whose claim (→ sending) takes claimTime.
type slowClaimStore struct {
	*fakeStore
	clock     *testClock
	claimTime time.Duration
}

func (s *slowClaimStore) Transition(ctx context.Context, id string, ch domain.Channel, c domain.Change) (*domain.Delivery, error) {
	if c.To == domain.StatusSending {
		s.clock.Advance(s.claimTime)
	}
	return s.fakeStore.Transition(ctx, id, ch, c)
}

func TestSendQuota(t *testing.T) {
	// 30/s: every slot caps bulk (low) at 3 and normal and high at 5,
	// whatever its phase (90 and 150 per SpanSlots slots).
	const rate = 30
	slot := policy.SlotStart(fixedAt)
	bulk, normal, high := domain.PriorityLow, domain.PriorityNormal, domain.PriorityHigh
	for _, tc := range []struct {
		name       string
		typ        domain.Priority // low (bulk), normal or high
		used       map[string]int  // sends already counted, by quotaKey
		receives   int
		rate       int
		claimTime  time.Duration // the clock moves this much during the claim
		sendTime   time.Duration // and this much during the provider call
		quotaErr   error
		requeueErr error
		wantSent   bool
		wantFailed bool
		wantVis    []time.Duration // allowed visibility timeouts (any of)
		wantQueue  bool            // re-sent to its queue
		wantCalls  int             // TakeSendToken calls
		wantStatus domain.Status
		wantLog    string
	}{
		{name: "bulk within its share sends", typ: bulk, used: used(slot, 2), receives: 1, wantSent: true, wantCalls: 1, wantStatus: domain.StatusSent},
		{name: "bulk over its share is deferred without an attempt", typ: bulk, used: used(slot, 3), receives: 1,
			wantFailed: true, wantVis: []time.Duration{time.Second, 2 * time.Second}, wantCalls: 1, wantStatus: domain.StatusQueued},
		{name: "high takes the reserve bulk cannot", typ: high, used: used(slot, 4), receives: 1, wantSent: true, wantCalls: 1, wantStatus: domain.StatusSent},
		{name: "normal takes the reserve bulk cannot, as high does", typ: normal, used: used(slot, 4), receives: 1, wantSent: true, wantCalls: 1, wantStatus: domain.StatusSent},
		{name: "normal with the slot used up is deferred without waiting in the worker", typ: normal, used: used(slot, 5), receives: 1,
			wantFailed: true, wantVis: []time.Duration{time.Second, 2 * time.Second}, wantCalls: 1, wantStatus: domain.StatusQueued},
		{name: "high with the slot used up waits for the next slot's", typ: high, used: used(slot, 5), receives: 1,
			wantSent: true, wantCalls: 2, wantStatus: domain.StatusSent},
		{name: "high with every slot of its wait used up is deferred one second", typ: high, used: usedFrom(slot, 5, 6), receives: 1,
			wantFailed: true, wantVis: []time.Duration{time.Second}, wantCalls: 6, wantStatus: domain.StatusQueued},
		{name: "deferred before the last receive is re-sent, not redriven", typ: bulk, used: used(slot, 3), receives: 5,
			wantQueue: true, wantCalls: 1, wantStatus: domain.StatusQueued},
		{name: "on the last receive too", typ: bulk, used: used(slot, 3), receives: 6,
			wantQueue: true, wantCalls: 1, wantStatus: domain.StatusQueued},
		{name: "a failed re-send falls back to visibility", typ: bulk, used: used(slot, 3), receives: 5, requeueErr: errors.New("sqs down"),
			wantFailed: true, wantQueue: true, wantVis: []time.Duration{time.Second, 2 * time.Second}, wantCalls: 1, wantStatus: domain.StatusQueued},
		{name: "quota store error retries after the backoff, no send", typ: bulk, receives: 1, quotaErr: errors.New("table down"),
			wantFailed: true, wantCalls: 1, wantStatus: domain.StatusQueued},
		{name: "unlimited asks nothing", typ: bulk, used: used(slot, 100), receives: 1, rate: -1, wantSent: true, wantStatus: domain.StatusSent},
		{name: "a token the claim made stale is replaced by one of the current slot", typ: bulk, receives: 1,
			claimTime: policy.MaxTokenAge + time.Millisecond, wantSent: true, wantCalls: 2, wantStatus: domain.StatusSent},
		{name: "a stale token with no quota left gives the claim back, attempt refunded", typ: bulk, used: used(slot.Add(4*policy.QuotaSlot), 3), receives: 1,
			claimTime: 4 * policy.QuotaSlot, wantFailed: true, wantVis: []time.Duration{time.Second, 2 * time.Second}, wantCalls: 2, wantStatus: domain.StatusRetrying},
		{name: "a token within its age is not taken again", typ: bulk, receives: 1,
			claimTime: policy.MaxTokenAge - policy.QuotaSlot, wantSent: true, wantCalls: 1, wantStatus: domain.StatusSent},
		{name: "a provider call that outlasts the lag allowance is logged", typ: bulk, receives: 1,
			sendTime: policy.QuotaLag + time.Millisecond, wantSent: true, wantCalls: 1, wantStatus: domain.StatusSent, wantLog: "send quota overrun"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rate
			if tc.rate < 0 {
				r = 0
			}
			h := newHarness(t, domain.ChannelEmail, Config{BackoffBase: 20 * time.Second, BackoffCap: 15 * time.Minute, MaxReceiveCount: 6,
				SendQuota: policy.SendQuota{Rate: r, BulkShare: 60}})
			clock := &testClock{t: fixedAt}
			counts := map[string]int{}
			for k, v := range tc.used {
				counts[k] = v
			}
			q := &fakeQuota{counts: counts, err: tc.quotaErr}
			rq := &fakeRequeuer{err: tc.requeueErr}
			rec := &recorder{counts: map[string]int{}}
			h.deps.Quota, h.deps.Requeuer, h.deps.Metrics, h.deps.Now = q, rq, rec, clock.Now
			h.deps.Store = &slowClaimStore{fakeStore: h.store, clock: clock, claimTime: tc.claimTime}
			h.provider.during = func() { clock.Advance(tc.sendTime) }
			h.handler = New(h.deps)
			h.handler.sleep = func(_ context.Context, d time.Duration) error { clock.Advance(d); return nil }
			h.emailAt("n1", tc.typ)
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
			if got := strings.Count(h.logs.String(), "send quota overrun"); (tc.wantLog != "") != (got > 0) {
				t.Errorf("%d overrun lines, want logged=%v:\n%s", got, tc.wantLog != "", h.logs)
			}
		})
	}
}

// emailAt is a queued email notification at priority p: a high type's, or
// a normal type's (reservation.approved) sent at p, as a request or a
// campaign may set it.
func (h *harness) emailAt(id string, p domain.Priority) {
	if p == domain.PriorityHigh {
		h.notification(id, "security.login_alert", domain.ChannelEmail, domain.StatusQueued)
		return
	}
	n := h.notification(id, "reservation.approved", domain.ChannelEmail, domain.StatusQueued)
	n.Priority = p
	h.store.put(n, domain.Delivery{Channel: domain.ChannelEmail, Priority: p, Status: domain.StatusQueued})
}

// used is n sends counted in shard 0's slot.
func used(slot time.Time, n int) map[string]int {
	return map[string]int{quotaKey(domain.ChannelEmail, 0, slot): n}
}

// usedFrom is n sends counted in each of shard 0's slots from slot on.
func usedFrom(slot time.Time, n, slots int) map[string]int {
	out := map[string]int{}
	for k := range slots {
		out[quotaKey(domain.ChannelEmail, 0, slot.Add(time.Duration(k)*policy.QuotaSlot))] = n
	}
	return out
}

// TestSendQuotaBulkNeverStarvesHigh: a full batch of bulk traffic in one
// slot leaves exactly the reserve, which high priority then gets whole.
func TestSendQuotaBulkNeverStarvesHigh(t *testing.T) {
	h := newHarness(t, domain.ChannelEmail, Config{BackoffBase: 20 * time.Second, BackoffCap: 15 * time.Minute, MaxReceiveCount: 6,
		SendQuota: policy.SendQuota{Rate: 30, BulkShare: 60}}) // per slot: bulk 3, high 5
	h.deps.Quota, h.deps.Requeuer = &fakeQuota{counts: map[string]int{}}, &fakeRequeuer{}
	h.handler = New(h.deps)
	// The clock does not move: high finds no later slot to wait for.
	h.handler.sleep = func(context.Context, time.Duration) error { return nil }
	for i := range 10 {
		h.emailAt(fmt.Sprintf("b%d", i), domain.PriorityLow)
		h.emailAt(fmt.Sprintf("h%d", i), domain.PriorityHigh)
	}
	bulkMsgs, highMsgs := tenMessages("b"), tenMessages("h")
	if failed := h.handle(t, bulkMsgs...); len(failed) != 7 {
		t.Fatalf("bulk: %d deferred, want 7 (3 of 10 within the 60%% share)", len(failed))
	}
	if failed := h.handle(t, highMsgs...); len(failed) != 8 {
		t.Fatalf("high: %d deferred, want 8 (the 2 reserved sends go out)", len(failed))
	}
	if got := h.provider.sends(); got != 5 {
		t.Errorf("%d sends in the slot, want its cap, 5", got)
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
// campaign peak (20,000/s, 40 shards) for one second (5 slots) offered twice
// the rate (90 % bulk, 10 % high) by 200 worker instances, spread evenly
// over the slots: requests per send, per deferral, and the most writes
// (admitted plus refused) any one shard item takes in the second, which must
// stay under a partition's 1,000/s.
func BenchmarkSendQuotaRequests(b *testing.B) {
	q := policy.SendQuota{Rate: 20000, BulkShare: 60}
	const instances = 200
	slots := int(time.Second / policy.QuotaSlot)
	ctx := context.Background()
	var sends, deferred, requests, hottest int
	for b.Loop() {
		cq := &countingQuota{fakeQuota: fakeQuota{counts: map[string]int{}}, writes: map[int]int{}}
		clock := &testClock{t: policy.SlotStart(fixedAt)}
		hs := make([]*Handler, instances)
		for i := range hs {
			hs[i] = New(Deps{Config: Config{SendQuota: q}, Quota: cq, Now: clock.Now})
		}
		for s := range slots {
			for i := range 2 * q.Rate / slots {
				p := domain.PriorityLow
				if i%10 == 0 {
					p = domain.PriorityHigh
				}
				if _, ok, _ := hs[(s+i)%instances].takeQuota(ctx, domain.ChannelEmail, hs[(s+i)%instances].primary(), p); ok {
					sends++
				} else {
					deferred++
				}
			}
			clock.Advance(policy.QuotaSlot)
		}
		for _, w := range cq.writes {
			requests += w
			hottest = max(hottest, w)
		}
	}
	b.ReportMetric(float64(requests)/float64(sends), "requests/send")
	b.ReportMetric(float64(requests-sends)/float64(max(deferred, 1)), "refused-requests/deferral")
	b.ReportMetric(float64(hottest), "max-writes/shard/s")
	b.ReportMetric(float64(sends)/float64(b.N), "sends/s")
	if hottest > 1000 {
		b.Fatalf("a shard took %d writes in one second, over a partition's 1,000/s", hottest)
	}
}
