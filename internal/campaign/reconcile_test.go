package campaign

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

// sqsMaxDelay is SQS's DelaySeconds maximum, which the campaign queue
// clamps every delay to.
const sqsMaxDelay = 15 * time.Minute

// clocked is a handler whose clock the test moves as the queue's delays
// pass, and which records the delays the reconciles asked for.
func clocked(st *fakeStore, q *fakeQueue, delay time.Duration) (*Handler, *time.Time) {
	h := newHandler(st, q, &fakeVisibility{})
	h.delay = delay
	now := t0
	h.now = func() time.Time { return now }
	return h, &now
}

// next handles the one queued reconcile after its delay (at most SQS's 15
// minutes) and returns that delay.
func next(t *testing.T, h *Handler, q *fakeQueue, now *time.Time) time.Duration {
	t.Helper()
	q.mu.Lock()
	if len(q.sent) != 1 || q.sent[0].Kind != domain.CampaignReconcile {
		q.mu.Unlock()
		t.Fatalf("queued %+v, want one reconcile", q.sent)
	}
	delay := q.delays[0]
	q.mu.Unlock()
	m := q.take()[0]
	*now = now.Add(min(delay, sqsMaxDelay))
	if resp := handle(t, h, m); len(resp.BatchItemFailures) > 0 {
		t.Fatalf("%+v failed", m)
	}
	return delay
}

// Issue 36, defect 7: a lot whose recipients are all deferred (a campaign
// scheduled days ahead, or held by quiet hours) was recounted every
// ReconcileDelay for the whole deferral — each recount a batch read of
// every pending delivery, ≈ 8.6 M read units per lot per day at 30 s and
// three channels — while nothing could change. The next recount now waits
// for the earliest due time: messages wait out SQS's 15-minute delays
// without reading, and the lot is recounted again once due. A shorter
// reconcile delay (the local stack's) looks at the clock more often.
func TestDeferredLotIsRecountedWhenDue(t *testing.T) {
	st, q := newFakeStore(), &fakeQueue{}
	c := runningCampaign(st)
	due := t0.Add(3 * 24 * time.Hour)
	c.SendAt = due // scheduled three days ahead
	users := []string{"u1", "u2", "u3"}
	for _, u := range users {
		st.profiles[u] = true
	}
	st.addChunk(c, domain.InlineChunk, users...)
	h, now := clocked(st, q, DefaultReconcileDelay)
	handle(t, h, domain.CampaignMessage{Kind: domain.CampaignLotStep, CampaignID: c.ID, Chunk: domain.InlineChunk})
	for i, u := range users {
		d := domain.Delivery{Status: domain.StatusDeferred, DueAt: due.Add(time.Duration(i) * time.Hour)}
		d.NotificationID, d.Channel = domain.CampaignNotificationID(c.ID, u), domain.ChannelEmail
		st.deliveries.Put(d)
	}
	steps := 0
	for ; now.Before(due) && steps < 1000; steps++ {
		if d := next(t, h, q, now); d > sqsMaxDelay || d <= 0 {
			t.Fatalf("a reconcile delayed %v, want within SQS's (0, 15 min]", d)
		}
	}
	if st.planReads > 2 {
		t.Fatalf("%d recounts in %d steps (%v) before the first due time: want the first only, then none until due", st.planReads, steps, now.Sub(t0))
	}
	if steps > int(3*24*time.Hour/sqsMaxDelay)+2 {
		t.Errorf("%d queue messages for 3 days of waiting, want about one per 15 minutes", steps)
	}
	if got := ReconcileWaitStep(time.Second); got != 30*time.Second {
		t.Errorf("a 1 s reconcile delay waits in steps of %v, want 30 s", got)
	}
	// Due: released and sent, each an hour after the other; the recounts
	// resume, wait for the next due time, and settle the lot.
	reads := st.planReads
	for _, u := range users {
		deliver(st, c, u, domain.StatusSent)
		for range 3 {
			if len(q.sent) == 0 {
				break // settled
			}
			next(t, h, q, now)
		}
	}
	if got := st.campaigns[c.ID]; got.Counts.Sent != 3 || got.Status != domain.CampaignDone {
		t.Fatalf("campaign %+v after the due times, want done with the three sent", got)
	}
	if n := st.planReads - reads; n > 4 {
		t.Errorf("%d recounts for three due times an hour apart, want one after each (and one early)", n)
	}
	t.Logf("%d recounts in all for three days of deferral and three due times", st.planReads)
}

// A lot whose deliveries are in flight but do not change (a backlog in the
// low-priority queue) is recounted less and less often, up to
// MaxReconcileBackoff; a recount that counts something starts over.
func TestIdleReconcilesBackOff(t *testing.T) {
	st, q := newFakeStore(), &fakeQueue{}
	c := runningCampaign(st)
	st.profiles["u1"], st.profiles["u2"] = true, true
	st.addChunk(c, domain.InlineChunk, "u1", "u2")
	h, now := clocked(st, q, 5*time.Second)
	handle(t, h, domain.CampaignMessage{Kind: domain.CampaignLotStep, CampaignID: c.ID, Chunk: domain.InlineChunk})
	deliver(st, c, "u1", domain.StatusQueued)
	deliver(st, c, "u2", domain.StatusQueued)
	var delays []time.Duration
	for range 6 {
		delays = append(delays, next(t, h, q, now))
	}
	want := []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, 40 * time.Second, 40 * time.Second}
	for i := range want {
		if delays[i] != want[i] {
			t.Fatalf("delays %v, want %v (doubling from the reconcile delay to %v)", delays, want, MaxReconcileBackoff(5*time.Second))
		}
	}
	deliver(st, c, "u1", domain.StatusSent)
	next(t, h, q, now)
	if d := q.delays[0]; d != 5*time.Second {
		t.Errorf("after a recount that counted: delay %v, want the reconcile delay again", d)
	}
}

func TestNextReconcile(t *testing.T) {
	c := &domain.Campaign{ID: "c1", StartedAt: t0}
	channels := []domain.Channel{domain.ChannelEmail, domain.ChannelPush}
	key := func(u string, ch domain.Channel) domain.DeliveryKey {
		return domain.DeliveryKey{NotificationID: domain.CampaignNotificationID("c1", u), Channel: ch}
	}
	const delay = 30 * time.Second
	now := t0.Add(time.Hour)
	in := func(d time.Duration) time.Time { return now.Add(d) }
	deferred := func(at time.Time) domain.Delivery { return domain.Delivery{Status: domain.StatusDeferred, DueAt: at} }
	tests := []struct {
		name     string
		existing map[domain.DeliveryKey]domain.Delivery
		idle     int
		want     time.Time
	}{
		{"every pending channel deferred: the earliest due time, then the delay", map[domain.DeliveryKey]domain.Delivery{
			key("a", domain.ChannelEmail): deferred(in(5 * time.Hour)), key("a", domain.ChannelPush): {Status: domain.StatusSent},
			key("b", domain.ChannelEmail): deferred(in(2 * time.Hour)), key("b", domain.ChannelPush): deferred(in(9 * time.Hour)),
		}, 0, in(2*time.Hour + delay)},
		{"one channel not planned yet: soon", map[domain.DeliveryKey]domain.Delivery{
			key("a", domain.ChannelEmail): deferred(in(5 * time.Hour)),
			key("b", domain.ChannelEmail): deferred(in(2 * time.Hour)), key("b", domain.ChannelPush): deferred(in(9 * time.Hour)),
		}, 0, in(delay)},
		{"one in flight, idle twice: backed off", map[domain.DeliveryKey]domain.Delivery{
			key("a", domain.ChannelEmail): deferred(in(5 * time.Hour)), key("a", domain.ChannelPush): {Status: domain.StatusRetrying},
			key("b", domain.ChannelEmail): {Status: domain.StatusSkipped}, key("b", domain.ChannelPush): {Status: domain.StatusSkipped},
		}, 2, in(4 * delay)},
		{"due already (not released yet): soon", map[domain.DeliveryKey]domain.Delivery{
			key("a", domain.ChannelEmail): deferred(in(-time.Minute)), key("a", domain.ChannelPush): {Status: domain.StatusSkipped},
			key("b", domain.ChannelEmail): deferred(in(2 * time.Hour)), key("b", domain.ChannelPush): {Status: domain.StatusSkipped},
		}, 0, in(delay)},
		{"due after the pending limit: at the limit", map[domain.DeliveryKey]domain.Delivery{
			key("a", domain.ChannelEmail): deferred(in(7 * 24 * time.Hour)), key("a", domain.ChannelPush): {Status: domain.StatusSkipped},
			key("b", domain.ChannelEmail): {Status: domain.StatusSkipped}, key("b", domain.ChannelPush): {Status: domain.StatusSkipped},
		}, 0, t0.Add(DefaultPendingLimit + delay)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NextReconcile([]string{"a", "b"}, c, channels, tt.existing, now, delay, tt.idle, DefaultPendingLimit)
			if !got.Equal(tt.want) {
				t.Errorf("next recount at %v, want %v", got, tt.want)
			}
		})
	}
}
