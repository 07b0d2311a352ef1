package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/metrics"
)

var t0 = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

func newHandler(st *fakeStore, q *fakeQueue, v *fakeVisibility) *Handler {
	return New(Deps{Store: st, Queue: q, Visibility: v, Catalog: catalog.MustLoad(), Now: func() time.Time { return t0 },
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), ReconcileDelay: 5 * time.Second, PlanPage: 1})
}

func event(t *testing.T, msgs ...domain.CampaignMessage) events.SQSEvent {
	t.Helper()
	var ev events.SQSEvent
	for i, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		id := string(rune('a' + i))
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: id, ReceiptHandle: "r-" + id, Body: string(b), EventSourceARN: "arn:aws:sqs:us-east-1:1:campaign"})
	}
	return ev
}

func handle(t *testing.T, h *Handler, msgs ...domain.CampaignMessage) events.SQSEventResponse {
	t.Helper()
	resp, err := h.Handle(context.Background(), event(t, msgs...))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// drain handles what the queue holds, a message at a time, until it is
// empty or rounds run out; it returns the messages handled.
func drain(t *testing.T, h *Handler, q *fakeQueue, rounds int) []domain.CampaignMessage {
	t.Helper()
	var all []domain.CampaignMessage
	for range rounds {
		msgs := q.take()
		if len(msgs) == 0 {
			break
		}
		for _, m := range msgs {
			if resp := handle(t, h, m); len(resp.BatchItemFailures) > 0 {
				t.Fatalf("%+v failed", m)
			}
		}
		all = append(all, msgs...)
	}
	return all
}

func runningCampaign(st *fakeStore) *domain.Campaign {
	c := &domain.Campaign{ID: "c1", Caller: "svc", Type: "reservation.approved", Priority: domain.PriorityLow,
		Channels: []domain.Channel{domain.ChannelEmail}, Data: map[string]any{"reservationUrl": "https://example.com/r"},
		Status: domain.CampaignRunning, StartedAt: t0}
	st.campaigns[c.ID] = c
	return c
}

func deliver(st *fakeStore, c *domain.Campaign, user string, s domain.Status) {
	k := domain.DeliveryKey{NotificationID: domain.CampaignNotificationID(c.ID, user), Channel: domain.ChannelEmail}
	st.deliveries.Put(domain.Delivery{NotificationID: k.NotificationID, Channel: k.Channel, Status: s})
}

// TestFanOutCountsEveryRecipientOnce: a plan, its lots delivered twice and
// overlapping reconciles create each notification once and count each
// recipient once; the last settled lot finishes the campaign.
func TestFanOutCountsEveryRecipientOnce(t *testing.T) {
	st, q, v := newFakeStore(), &fakeQueue{}, &fakeVisibility{}
	c := runningCampaign(st)
	for _, u := range []string{"u1", "u2", "u3"} {
		st.profiles[u] = true
	}
	st.addChunk(c, domain.InlineChunk, "u1", "ghost")    // ghost: no profile
	st.addChunk(c, domain.ChunkKey(0), "u2", "u3", "u1") // u1 again: created by the inline lot
	h := newHandler(st, q, v)
	tally := &metrics.Tally{}
	h.metrics = tally

	handle(t, h, domain.CampaignMessage{Kind: domain.CampaignPlan, CampaignID: c.ID})
	lots := q.take()
	if len(lots) != 2 || lots[0].Kind != domain.CampaignLotStep || lots[0].Chunk != domain.ChunkKey(0) || lots[1].Chunk != domain.InlineChunk {
		t.Fatalf("plan sent %+v, want one lot per chunk in order", lots)
	}
	// The inline lot first (u1 is its own), then both lots again (SQS
	// delivers at least once).
	handle(t, h, lots[1])
	handle(t, h, lots[0])
	handle(t, h, lots[1], lots[0])
	if st.creates != 3 {
		t.Fatalf("%d notifications created, want 3 (u1, u2, u3 once each)", st.creates)
	}
	n := st.notifications[domain.CampaignNotificationID(c.ID, "u2")]
	if n.CampaignID != c.ID || n.CampaignChunk != domain.ChunkKey(0) || n.Caller != "svc" || n.Priority != domain.PriorityLow || n.Recipient.UserID != "u2" || n.Data["reservationUrl"] != "https://example.com/r" {
		t.Errorf("notification %+v does not carry the campaign", n)
	}
	if got := st.campaigns[c.ID].Counts; got != (domain.CampaignCounts{Notified: 3, Skipped: 2}) {
		t.Fatalf("after the lots: %+v, want notified 3, skipped 2 (ghost, u1 listed twice)", got)
	}
	for i, m := range q.sent {
		if m.Kind != domain.CampaignReconcile || q.delays[i] != 5*time.Second {
			t.Fatalf("lot sent %+v after %s, want reconciles after the delay", m, q.delays[i])
		}
	}

	// u1 sent, u2 skipped, u3 still deferred: two chains of reconciles per
	// lot (the duplicate lot messages) count each outcome once.
	deliver(st, c, "u1", domain.StatusSent)
	deliver(st, c, "u2", domain.StatusSkipped)
	deliver(st, c, "u3", domain.StatusDeferred)
	pending := q.take()
	for _, m := range pending {
		handle(t, h, m)
	}
	if got := st.campaigns[c.ID].Counts; got != (domain.CampaignCounts{Notified: 3, Sent: 1, Skipped: 3}) {
		t.Fatalf("after reconciles: %+v, want sent 1, skipped 3", got)
	}
	if st.campaigns[c.ID].Status != domain.CampaignRunning {
		t.Fatal("done with a recipient pending")
	}
	deliver(st, c, "u3", domain.StatusSent)
	drain(t, h, q, 10)
	got := st.campaigns[c.ID]
	if got.Status != domain.CampaignDone || got.Counts != (domain.CampaignCounts{Notified: 3, Sent: 2, Skipped: 3}) || got.LotsSettled != 2 {
		t.Fatalf("finished %+v, want done with sent 2, skipped 3, 2 lots settled", got)
	}
	if got.Counts.Final() != got.Recipients {
		t.Errorf("final %d of %d recipients", got.Counts.Final(), got.Recipients)
	}
	if st.finished != 1 {
		t.Errorf("finished %d times", st.finished)
	}
	// Metrics count what was recorded, once, by the campaign's priority only.
	low := metrics.Dims{Priority: domain.PriorityLow}
	for name, want := range map[metrics.Name]int{metrics.CampaignLots: 2, metrics.CampaignNotified: 3, metrics.CampaignSkipped: 2, metrics.CampaignDropped: 0} {
		if got := tally.Count(name, low); got != want || tally.Total(name) != want {
			t.Errorf("%s = %d (total %d), want %d", name, got, tally.Total(name), want)
		}
	}
	if n := tally.Total(metrics.CampaignReconciles); n < 2 {
		t.Errorf("%d reconciles counted, want ≥ 2 (each lot moved recipients)", n)
	}
}

// TestCancelledCampaignCreatesNothing: lots of a cancelled campaign drop
// their recipients and settle at once.
func TestCancelledCampaignCreatesNothing(t *testing.T) {
	st, q, v := newFakeStore(), &fakeQueue{}, &fakeVisibility{}
	c := runningCampaign(st)
	c.Status = domain.CampaignCancelled
	st.profiles["u1"] = true
	st.addChunk(c, domain.ChunkKey(0), "u1", "u2")
	st.addChunk(c, domain.ChunkKey(1), "u3")
	h := newHandler(st, q, v)
	handle(t, h, domain.CampaignMessage{Kind: domain.CampaignPlan, CampaignID: c.ID})
	drain(t, h, q, 10)
	got := st.campaigns[c.ID]
	if st.creates != 0 || got.Counts != (domain.CampaignCounts{Dropped: 3}) || got.Status != domain.CampaignCancelled || got.FinishedAt.IsZero() {
		t.Fatalf("cancelled campaign: %d created, %+v", st.creates, got)
	}
}

// TestEmptyCampaignIsDoneAtOnce: no chunks, nothing to wait for.
func TestEmptyCampaignIsDoneAtOnce(t *testing.T) {
	st, q, v := newFakeStore(), &fakeQueue{}, &fakeVisibility{}
	c := runningCampaign(st)
	handle(t, newHandler(st, q, v), domain.CampaignMessage{Kind: domain.CampaignPlan, CampaignID: c.ID})
	if st.campaigns[c.ID].Status != domain.CampaignDone {
		t.Fatalf("status %s, want done", st.campaigns[c.ID].Status)
	}
}

// TestPlanContinuesNearItsDeadline: with less than planReserve left, a plan
// sends what it read and hands the rest to a continuation.
func TestPlanContinuesNearItsDeadline(t *testing.T) {
	st, q, v := newFakeStore(), &fakeQueue{}, &fakeVisibility{}
	c := runningCampaign(st)
	for i := range 3 {
		st.addChunk(c, domain.ChunkKey(int64(i)), "u")
	}
	h := newHandler(st, q, v)
	ctx, cancel := context.WithTimeout(context.Background(), planReserve/2)
	defer cancel()
	if _, err := h.Handle(ctx, event(t, domain.CampaignMessage{Kind: domain.CampaignPlan, CampaignID: c.ID})); err != nil {
		t.Fatal(err)
	}
	sent := q.take()
	want := []domain.CampaignMessage{
		{Kind: domain.CampaignLotStep, CampaignID: c.ID, Chunk: domain.ChunkKey(0)},
		{Kind: domain.CampaignPlan, CampaignID: c.ID, After: domain.ChunkKey(0)},
	}
	if !slices.Equal(sent, want) {
		t.Fatalf("sent %+v, want %+v", sent, want)
	}
	// The continuation, with time, sends the rest.
	handle(t, h, sent[1])
	if rest := q.take(); len(rest) != 2 || rest[0].Chunk != domain.ChunkKey(1) || rest[1].Chunk != domain.ChunkKey(2) {
		t.Fatalf("continuation sent %+v", rest)
	}
}

// TestFailedStepsAreRetriedAlone: a malformed message is made visible at
// once (to reach the DLQ), a store failure fails only its message and
// records nothing.
func TestFailedStepsAreRetriedAlone(t *testing.T) {
	st, q, v := newFakeStore(), &fakeQueue{}, &fakeVisibility{}
	c := runningCampaign(st)
	st.profiles["u1"] = true
	st.addChunk(c, domain.ChunkKey(0), "u1")
	st.failCreate = errors.New("throttled")
	h := newHandler(st, q, v)
	ev := event(t, domain.CampaignMessage{Kind: domain.CampaignLotStep, CampaignID: c.ID, Chunk: domain.ChunkKey(0)})
	ev.Records = append(ev.Records, events.SQSMessage{MessageId: "bad", ReceiptHandle: "r-bad", Body: `{"kind":"lot"}`})
	resp, err := h.Handle(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	slices.Sort(failed)
	if !slices.Equal(failed, []string{"a", "bad"}) {
		t.Fatalf("failures %v, want the lot and the malformed message", failed)
	}
	if d, ok := v.set["r-bad"]; !ok || d != 0 {
		t.Errorf("malformed message visibility %v (set %v), want 0", d, ok)
	}
	if _, ok := v.set["r-a"]; ok {
		t.Error("a failed lot waits for its visibility timeout, not 0")
	}
	if len(st.lots) != 0 || len(q.take()) != 0 {
		t.Error("a failed lot recorded or sent something")
	}
	// The retry, once the table answers, does the work.
	st.failCreate = nil
	if resp := handle(t, h, domain.CampaignMessage{Kind: domain.CampaignLotStep, CampaignID: c.ID, Chunk: domain.ChunkKey(0)}); len(resp.BatchItemFailures) > 0 || st.creates != 1 {
		t.Fatalf("retry: %+v, %d created", resp, st.creates)
	}
}

func TestRecount(t *testing.T) {
	c := &domain.Campaign{ID: "c1", StartedAt: t0}
	channels := []domain.Channel{domain.ChannelEmail, domain.ChannelPush}
	key := func(u string, ch domain.Channel) domain.DeliveryKey {
		return domain.DeliveryKey{NotificationID: domain.CampaignNotificationID("c1", u), Channel: ch}
	}
	existing := map[domain.DeliveryKey]domain.Delivery{
		key("a", domain.ChannelEmail): {Status: domain.StatusSent}, key("a", domain.ChannelPush): {Status: domain.StatusSkipped},
		key("b", domain.ChannelEmail): {Status: domain.StatusDropped}, key("b", domain.ChannelPush): {Status: domain.StatusSkipped},
		key("c", domain.ChannelEmail): {Status: domain.StatusQueued}, key("c", domain.ChannelPush): {Status: domain.StatusSkipped},
	}
	lot := &domain.CampaignLot{Chunk: "x", Total: 5, Pending: []string{"a", "b", "c", "d"}, Counts: domain.CampaignCounts{Notified: 4, Skipped: 1}, Version: 3}
	tests := []struct {
		name        string
		now         time.Time
		wantPending []string
		want        domain.CampaignCounts
	}{
		{"within the limit", t0.Add(time.Hour), []string{"c", "d"}, domain.CampaignCounts{Notified: 4, Sent: 1, Skipped: 1, Dropped: 1}},
		{"past the limit", t0.Add(49 * time.Hour), nil, domain.CampaignCounts{Notified: 4, Sent: 1, Skipped: 1, Dropped: 1, Failed: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := Recount(lot, c, channels, existing, tt.now, DefaultPendingLimit)
			if !slices.Equal(next.Pending, tt.wantPending) || next.Counts != tt.want || next.Version != 3 || next.Total != 5 {
				t.Fatalf("next %+v, want pending %v counts %+v at version 3", next, tt.wantPending, tt.want)
			}
			if next.Counts.Final()+len(next.Pending) != lot.Total {
				t.Errorf("final %d + pending %d != total %d", next.Counts.Final(), len(next.Pending), lot.Total)
			}
		})
	}
	// A later sendAt moves the limit.
	c.SendAt = t0.Add(30 * time.Hour)
	if next := Recount(lot, c, channels, existing, t0.Add(49*time.Hour), DefaultPendingLimit); len(next.Pending) != 2 {
		t.Errorf("pending %v: the limit counts from sendAt", next.Pending)
	}
}

func TestNotificationForTakesTheTypeExpiryFromNow(t *testing.T) {
	cat := catalog.MustLoad()
	for _, name := range cat.Names() {
		typ, _ := cat.Lookup(name)
		if typ.DefaultExpiry == 0 {
			continue
		}
		c := &domain.Campaign{ID: "c1", Type: typ.Name}
		n := NotificationFor(c, typ, "x", "u1", t0)
		if !n.ExpiresAt.Equal(t0.Add(typ.DefaultExpiry)) {
			t.Errorf("%s: expires %s, want now + %s", typ.Name, n.ExpiresAt, typ.DefaultExpiry)
		}
		c.ExpiresAt = t0.Add(time.Minute)
		if n := NotificationFor(c, typ, "x", "u1", t0); !n.ExpiresAt.Equal(c.ExpiresAt) {
			t.Errorf("%s: a requested expiry is kept", typ.Name)
		}
		return
	}
	t.Skip("no type with a default expiry")
}

// TestSegmentAllReachesEveryProfileOnce: segment "all" scans the profiles in
// parallel segments, pages of ≤ 1,000 (continued), each page a lot; a scan
// step delivered twice and a retried plan create nothing twice; the campaign
// is done when every segment ended and every lot settled.
func TestSegmentAllReachesEveryProfileOnce(t *testing.T) {
	st, q, v := newFakeStore(), &fakeQueue{}, &fakeVisibility{}
	c := runningCampaign(st)
	c.Segment = domain.SegmentAll
	tally := &metrics.Tally{}
	const users = 3500
	for i := range users {
		st.profiles[fmt.Sprintf("user-%05d", i)] = true
	}
	h := New(Deps{Store: st, Queue: q, Visibility: v, Catalog: catalog.MustLoad(), Now: func() time.Time { return t0 },
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), ScanSegments: 3, Metrics: tally})
	plan := domain.CampaignMessage{Kind: domain.CampaignPlan, CampaignID: c.ID}
	handle(t, h, plan)
	first := q.take()
	if len(first) != 3 || first[2] != (domain.CampaignMessage{Kind: domain.CampaignScan, CampaignID: c.ID, Segment: 2, Segments: 3}) {
		t.Fatalf("plan sent %+v, want 3 scan segments", first)
	}
	h.scanSegments = 5 // a retried plan keeps the recorded segments
	handle(t, h, plan)
	if again := q.take(); len(again) != 3 {
		t.Fatalf("retried plan sent %d scans, want the recorded 3", len(again))
	}
	// Every segment, its first page twice (SQS delivers at least once).
	handle(t, h, first[0], first[0], first[1], first[2])
	var steps []domain.CampaignMessage
	for range 20 {
		msgs := q.take()
		if len(msgs) == 0 {
			break
		}
		for _, m := range msgs {
			if m.Kind == domain.CampaignScan && m.Page > 0 {
				steps = append(steps, m)
			}
			if resp := handle(t, h, m); len(resp.BatchItemFailures) > 0 {
				t.Fatalf("%+v failed", m)
			}
		}
		if st.campaigns[c.ID].Status == domain.CampaignRunning && st.creates == users {
			for u := range st.profiles {
				deliver(st, c, u, domain.StatusSent)
			}
		}
	}
	if len(steps) == 0 {
		t.Error("no segment continued past its first page")
	}
	got := st.campaigns[c.ID]
	if st.creates != users || got.Recipients != users || got.Status != domain.CampaignDone || got.Counts.Sent != users || got.Counts.Final() != users {
		t.Fatalf("%d created; campaign %+v; want %d each, done", st.creates, got, users)
	}
	for k, ids := range st.chunks {
		if len(ids) > domain.MaxChunkRecipients {
			t.Errorf("chunk %s has %d ids", k, len(ids))
		}
	}
	if got.Chunks < 6 {
		t.Errorf("%d lots for %d users in 3 segments, want ≥ 6 (pages of ≤ 1,000)", got.Chunks, users)
	}
	if pages, lots := tally.Total(metrics.CampaignScanPages), tally.Total(metrics.CampaignLots); pages != got.Chunks || lots != got.Chunks {
		t.Errorf("metrics: %d scan pages, %d lots; want %d each (the duplicate scan step counts nothing)", pages, lots, got.Chunks)
	}
}

// TestSegmentAllWithoutProfilesIsDone: every segment ends at once.
func TestSegmentAllWithoutProfilesIsDone(t *testing.T) {
	st, q, v := newFakeStore(), &fakeQueue{}, &fakeVisibility{}
	c := runningCampaign(st)
	c.Segment = domain.SegmentAll
	h := New(Deps{Store: st, Queue: q, Visibility: v, Catalog: catalog.MustLoad(), Now: func() time.Time { return t0 },
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), ScanSegments: 4})
	handle(t, h, domain.CampaignMessage{Kind: domain.CampaignPlan, CampaignID: c.ID})
	scans := q.take()
	handle(t, h, scans[:3]...)
	if st.campaigns[c.ID].Status != domain.CampaignRunning {
		t.Fatalf("done before its last segment ended")
	}
	handle(t, h, scans[3])
	if got := st.campaigns[c.ID]; got.Status != domain.CampaignDone || got.Chunks != 0 || len(q.take()) != 0 {
		t.Fatalf("campaign %+v, want done with no lot", got)
	}
}

// TestCancelledSegmentCampaignStopsScanning: after a cancel the segments read
// no more profiles; the pages stored before it drop their recipients, and the
// campaign finishes with every recipient read counted dropped.
func TestCancelledSegmentCampaignStopsScanning(t *testing.T) {
	st, q, v := newFakeStore(), &fakeQueue{}, &fakeVisibility{}
	c := runningCampaign(st)
	c.Segment = domain.SegmentAll
	for i := range 2500 {
		st.profiles[fmt.Sprintf("user-%05d", i)] = true
	}
	h := New(Deps{Store: st, Queue: q, Visibility: v, Catalog: catalog.MustLoad(), Now: func() time.Time { return t0 },
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), ScanSegments: 1})
	handle(t, h, domain.CampaignMessage{Kind: domain.CampaignPlan, CampaignID: c.ID})
	handle(t, h, q.take()...) // the first page: its lot and the next page
	c.Status = domain.CampaignCancelled
	scansBefore := st.scans
	drain(t, h, q, 20)
	got := st.campaigns[c.ID]
	if st.scans != scansBefore || st.creates != 0 {
		t.Errorf("after the cancel: %d more scans, %d notifications", st.scans-scansBefore, st.creates)
	}
	if got.FinishedAt.IsZero() || got.Status != domain.CampaignCancelled || got.Recipients != domain.MaxChunkRecipients || got.Counts.Dropped != got.Recipients {
		t.Fatalf("cancelled segment campaign %+v, want the first page's %d recipients dropped and finished", got, domain.MaxChunkRecipients)
	}
}

// TestLotPacesToItsShareOfTheFanOutRate: with CampaignFanOutRate 2,000/s and
// 5 concurrent invocations (× ParallelMessages lots each), a lot creates its
// notifications at 100/s: the k-th no earlier than k/100 s after the first.
// Unpaced (no rate) it never waits.
func TestLotPacesToItsShareOfTheFanOutRate(t *testing.T) {
	for _, tc := range []struct {
		name string
		rate float64
		want int // sleeps
	}{{"paced", 2000, 49}, {"unpaced", 0, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			st, q, v := newFakeStore(), &fakeQueue{}, &fakeVisibility{}
			c := runningCampaign(st)
			var ids []string
			for i := range 50 {
				u := fmt.Sprintf("u%02d", i)
				st.profiles[u] = true
				ids = append(ids, u)
			}
			st.addChunk(c, domain.ChunkKey(0), ids...)
			var mu sync.Mutex
			var waits []time.Duration
			h := New(Deps{Store: st, Queue: q, Visibility: v, Catalog: catalog.MustLoad(), Now: func() time.Time { return t0 },
				Log: slog.New(slog.NewTextHandler(io.Discard, nil)), FanOutRate: tc.rate, MaxConcurrency: 5,
				Sleep: func(_ context.Context, d time.Duration) error {
					mu.Lock()
					defer mu.Unlock()
					waits = append(waits, d)
					return nil
				}})
			if resp := handle(t, h, domain.CampaignMessage{Kind: domain.CampaignLotStep, CampaignID: c.ID, Chunk: domain.ChunkKey(0)}); len(resp.BatchItemFailures) > 0 || st.creates != 50 {
				t.Fatalf("lot: %+v, %d created", resp, st.creates)
			}
			if len(waits) != tc.want {
				t.Fatalf("%d waits, want %d", len(waits), tc.want)
			}
			if tc.rate == 0 {
				return
			}
			if got := h.LotSeconds(1000); got != 10 {
				t.Errorf("a lot of 1,000 takes %v s, want 10 at 100/s", got)
			}
			longest := slices.Max(waits)
			if longest < 450*time.Millisecond || longest > 490*time.Millisecond {
				t.Errorf("the 50th notification waited %s, want ~490ms (49/100 s after the first)", longest)
			}
		})
	}
}

// TestTopicSendReachesEverySubscriberOnce: a topic's campaign scans the
// topic's shards (not the profiles), leaves the excluded user out of its
// recipients, marks the notifications of the users who muted the topic
// (their channels are skipped: muted) — unless the type is mandatory — and
// names the topic on every notification.
func TestTopicSendReachesEverySubscriberOnce(t *testing.T) {
	for _, mandatory := range []bool{false, true} {
		st, q, v := newFakeStore(), &fakeQueue{}, &fakeVisibility{}
		c := runningCampaign(st)
		c.Topic, c.Exclude = "thread:42", []string{"user-0007"}
		if mandatory {
			c.Type, c.Data = "security.login_alert", map[string]any{"ip": "192.0.2.1", "location": "Lisbon"}
		}
		const users = 2300
		var ids []string
		for i := range users {
			ids = append(ids, fmt.Sprintf("user-%04d", i))
			st.profiles[ids[i]] = true
		}
		st.profiles["not-subscribed"] = true
		ctx := context.Background()
		if _, err := st.topics.SubscribeToTopic(ctx, c.Topic, ids); err != nil {
			t.Fatal(err)
		}
		for _, u := range ids[:3] {
			if _, err := st.topics.SetTopicMuted(ctx, u, c.Topic, true); err != nil {
				t.Fatal(err)
			}
		}
		h := newHandler(st, q, v)
		handle(t, h, domain.CampaignMessage{Kind: domain.CampaignPlan, CampaignID: c.ID})
		for range 30 {
			msgs := q.take()
			if len(msgs) == 0 {
				break
			}
			for _, m := range msgs {
				if m.Kind == domain.CampaignReconcile {
					continue
				}
				if resp := handle(t, h, m); len(resp.BatchItemFailures) > 0 {
					t.Fatalf("%+v failed", m)
				}
			}
		}
		got := st.campaigns[c.ID]
		if st.scanSegments[c.ID] != domain.TopicShards || got.Recipients != users-1 || st.creates != users-1 || got.Counts.Notified != users-1 {
			t.Fatalf("mandatory %v: %d shards, %d created, campaign %+v; want %d shards and %d each",
				mandatory, st.scanSegments[c.ID], st.creates, got, domain.TopicShards, users-1)
		}
		if st.scans != 0 {
			t.Errorf("a topic send scanned the profiles %d times", st.scans)
		}
		muted := 0
		for _, n := range st.notifications {
			if n.Topic != c.Topic || n.Recipient.UserID == "user-0007" || n.Recipient.UserID == "not-subscribed" {
				t.Fatalf("notification %+v", n)
			}
			if n.Muted {
				muted++
			}
		}
		if want := map[bool]int{false: 3, true: 0}[mandatory]; muted != want {
			t.Errorf("mandatory %v: %d notifications muted, want %d", mandatory, muted, want)
		}
	}
}

// TestCancelStopsAPacedLot: a lot that is creating its notifications at
// its share of the fan-out rate stops within a status check of the cancel
// and counts the recipients it had not reached dropped at once, in its
// first record (it created them for the workers to drop one by one).
func TestCancelStopsAPacedLot(t *testing.T) {
	st, q, v := newFakeStore(), &fakeQueue{}, &fakeVisibility{}
	c := runningCampaign(st)
	var ids []string
	for i := range 200 {
		u := fmt.Sprintf("u%03d", i)
		st.profiles[u] = true
		ids = append(ids, u)
	}
	ids = append(ids, "no-profile")
	st.addChunk(c, domain.ChunkKey(0), ids...)
	var mu sync.Mutex
	sleeps := 0
	h := New(Deps{Store: st, Queue: q, Visibility: v, Catalog: catalog.MustLoad(), Now: func() time.Time { return t0 },
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), FanOutRate: 2000, MaxConcurrency: 5,
		Sleep: func(_ context.Context, d time.Duration) error {
			mu.Lock()
			sleeps++
			cancelNow := sleeps == 20
			mu.Unlock()
			if cancelNow { // DELETE /v1/campaigns/{id} while the lot runs
				st.mu.Lock()
				st.campaigns[c.ID].Status = domain.CampaignCancelled
				st.mu.Unlock()
				time.Sleep(100 * time.Millisecond) // the lot's status check notices it
			}
			return nil
		}})
	h.cancelCheck = 5 * time.Millisecond
	if resp := handle(t, h, domain.CampaignMessage{Kind: domain.CampaignLotStep, CampaignID: c.ID, Chunk: domain.ChunkKey(0)}); len(resp.BatchItemFailures) > 0 {
		t.Fatalf("lot: %+v", resp)
	}
	lot, err := st.GetLot(context.Background(), c.ID, domain.ChunkKey(0))
	if err != nil {
		t.Fatal(err)
	}
	if lot.Counts.Dropped == 0 || st.creates >= 200 || lot.Counts.Notified != st.creates || len(lot.Pending) != st.creates ||
		lot.Counts.Notified+lot.Counts.Dropped != 200 || lot.Counts.Skipped != 1 {
		t.Fatalf("lot %+v after %d creations: want the unreached recipients dropped, the one without a profile skipped, created = notified", lot.Counts, st.creates)
	}
}

// TestCancelledLotDropsWhatNoWorkerHolds: one reconcile of a cancelled
// campaign's lot ends every pending delivery no worker holds — not yet
// claimed (no item), queued, deferred — dropped: cancelled with the
// worker's conditional write, and counts them; a delivery being sent keeps
// its claim and stays pending; a sent one is counted sent.
func TestCancelledLotDropsWhatNoWorkerHolds(t *testing.T) {
	st, q, v := newFakeStore(), &fakeQueue{}, &fakeVisibility{}
	c := runningCampaign(st)
	pending := []string{"absent", "queued", "deferred", "sending", "sent"}
	for _, u := range pending {
		st.profiles[u] = true
	}
	st.addChunk(c, domain.ChunkKey(0), pending...)
	h := newHandler(st, q, v)
	handle(t, h, domain.CampaignMessage{Kind: domain.CampaignLotStep, CampaignID: c.ID, Chunk: domain.ChunkKey(0)})
	q.take()
	deliver(st, c, "queued", domain.StatusQueued)
	deliver(st, c, "sent", domain.StatusSent)
	st.deliveries.Put(domain.Delivery{NotificationID: domain.CampaignNotificationID(c.ID, "deferred"), Channel: domain.ChannelEmail,
		Status: domain.StatusDeferred, Reason: domain.ReasonQuietHours, DueAt: t0.Add(8 * time.Hour)})
	st.deliveries.Put(domain.Delivery{NotificationID: domain.CampaignNotificationID(c.ID, "sending"), Channel: domain.ChannelEmail,
		Status: domain.StatusSending, LeaseUntil: t0.Add(time.Minute), LeaseHolder: "m1"})
	st.mu.Lock()
	st.campaigns[c.ID].Status, st.campaigns[c.ID].CancelledAt = domain.CampaignCancelled, t0
	st.mu.Unlock()

	if resp := handle(t, h, domain.CampaignMessage{Kind: domain.CampaignReconcile, CampaignID: c.ID, Chunk: domain.ChunkKey(0)}); len(resp.BatchItemFailures) > 0 {
		t.Fatalf("reconcile: %+v", resp)
	}
	for _, u := range []string{"absent", "queued", "deferred"} {
		d, ok := st.deliveries.Get(domain.CampaignNotificationID(c.ID, u), domain.ChannelEmail)
		if !ok || d.Status != domain.StatusDropped || d.Reason != domain.ReasonCancelled || u == "absent" && (d.UserID != u || d.CampaignID != c.ID) {
			t.Errorf("%s: %+v (stored %v), want dropped: cancelled (created with the notification's fields)", u, d, ok)
		}
	}
	if d, _ := st.deliveries.Get(domain.CampaignNotificationID(c.ID, "sending"), domain.ChannelEmail); d.Status != domain.StatusSending {
		t.Errorf("the delivery being sent is %s, want it left to its worker", d.Status)
	}
	lot, err := st.GetLot(context.Background(), c.ID, domain.ChunkKey(0))
	if err != nil {
		t.Fatal(err)
	}
	if lot.Counts.Dropped != 3 || lot.Counts.Sent != 1 || !slices.Equal(lot.Pending, []string{"sending"}) {
		t.Fatalf("lot %+v pending %v: want 3 dropped, 1 sent, the one being sent pending", lot.Counts, lot.Pending)
	}
}
