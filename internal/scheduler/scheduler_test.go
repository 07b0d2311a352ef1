package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/recovery"
)

// memStore keeps deliveries and a due index that, like a GSI, may lag: stale
// entries stay listed until dropStale is called.
type memStore struct {
	mu         sync.Mutex
	deliveries map[string]*domain.Delivery
	stale      []domain.Delivery // index entries whose item moved on
	queries    int
	probes     int
	watermark  time.Time
	// listErr fails every ListDue (a store outage).
	listErr error
	// probeErr fails the probes of these partitions.
	probeErr map[recovery.DuePartition]error
	// watches are the in-flight watches by id; notifications the
	// notifications a stuck check reads.
	watches       map[string]*recovery.Watch
	notifications map[string]*domain.Notification
}

func (s *memStore) ArmWatch(_ context.Context, w recovery.Watch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watches == nil {
		s.watches = map[string]*recovery.Watch{}
	}
	s.watches[w.ID] = &w
	return nil
}

func (s *memStore) LoadWatch(_ context.Context, id string) (*recovery.Watch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.watches[id]
	if !ok {
		return nil, nil
	}
	cp := *w
	cp.Entries = slices.Clone(w.Entries)
	return &cp, nil
}

func (s *memStore) WatchedDeliveries(_ context.Context, keys []domain.DeliveryKey) (map[domain.DeliveryKey]*domain.Delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[domain.DeliveryKey]*domain.Delivery{}
	for _, k := range keys {
		if d, ok := s.deliveries[key(k.NotificationID, k.Channel)]; ok {
			cp := *d
			out[k] = &cp
		}
	}
	return out, nil
}

func (s *memStore) RearmWatch(_ context.Context, w recovery.Watch, remaining []recovery.WatchEntry, next time.Time, checks int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.watches[w.ID]; ok && cur.DueAt.Equal(w.DueAt) {
		cur.Entries, cur.DueAt, cur.Checks = remaining, next, checks
	}
	return nil
}

func (s *memStore) EndWatch(_ context.Context, w recovery.Watch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.watches[w.ID]; ok && cur.DueAt.Equal(w.DueAt) {
		delete(s.watches, w.ID)
	}
	return nil
}

func (s *memStore) GetNotification(_ context.Context, id string) (*domain.Notification, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.notifications[id]
	if !ok {
		return nil, fmt.Errorf("notification %s: %w", id, domain.ErrNotFound)
	}
	return n, nil
}

func watchPartition(w *recovery.Watch) recovery.DuePartition {
	return recovery.DuePartition{Bucket: w.DueAt.UTC().Truncate(time.Hour), Shard: len(w.ID) % 2}
}

func (s *memStore) dueWatches(p recovery.DuePartition, now time.Time) []recovery.Watch {
	var out []recovery.Watch
	for _, w := range s.watches {
		if !w.DueAt.After(now) && watchPartition(w) == p {
			out = append(out, recovery.Watch{ID: w.ID, Priority: w.Priority, DueAt: w.DueAt})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func key(id string, c domain.Channel) string { return id + "/" + string(c) }

// Two partitions per hour bucket: the shard is the delivery id's length mod 2.
func partitionOf(d *domain.Delivery) recovery.DuePartition {
	return recovery.DuePartition{Bucket: d.DueAt.UTC().Truncate(time.Hour), Shard: len(d.NotificationID) % 2}
}

func (s *memStore) DuePartitions(from, to time.Time) []recovery.DuePartition {
	var out []recovery.DuePartition
	for b := from.UTC().Truncate(time.Hour); !b.After(to); b = b.Add(time.Hour) {
		out = append(out, recovery.DuePartition{Bucket: b, Shard: 0}, recovery.DuePartition{Bucket: b, Shard: 1})
	}
	return out
}

func (s *memStore) due(p recovery.DuePartition, now time.Time) []domain.Delivery {
	var out []domain.Delivery
	for _, d := range s.stale {
		if partitionOf(&d) == p {
			out = append(out, d)
		}
	}
	for _, d := range s.deliveries {
		inIndex := d.Status == domain.StatusDeferred || d.Status == domain.StatusPlanned && !d.DueAt.IsZero()
		if inIndex && !d.DueAt.After(now) && partitionOf(d) == p {
			cp := *d
			cp.Status = "" // the index does not project the status
			out = append(out, cp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].NotificationID < out[j].NotificationID })
	return out
}

func (s *memStore) HasDue(_ context.Context, p recovery.DuePartition, now time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.probes++
	if err := s.probeErr[p]; err != nil {
		return false, err
	}
	return len(s.due(p, now))+len(s.dueWatches(p, now)) > 0, nil
}

func (s *memStore) ListDue(_ context.Context, p recovery.DuePartition, now time.Time, limit int32) ([]domain.Delivery, []recovery.Watch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queries++
	if s.listErr != nil {
		return nil, nil, s.listErr
	}
	out := s.due(p, now)
	ws := s.dueWatches(p, now)
	return out[:min(len(out), int(limit))], ws[:min(len(ws), max(0, int(limit)-len(out)))], nil
}

func (s *memStore) ReleaseWatermark(context.Context) (time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.watermark, nil
}

func (s *memStore) AdvanceReleaseWatermark(_ context.Context, t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.After(s.watermark) {
		s.watermark = t
	}
	return nil
}

func (s *memStore) Transition(_ context.Context, id string, ch domain.Channel, c domain.Change) (*domain.Delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.deliveries[key(id, ch)]
	if !ok {
		return nil, fmt.Errorf("%s: %w", key(id, ch), domain.ErrConflict)
	}
	if !slices.Contains(c.From, d.Status) {
		cp := *d
		return &cp, fmt.Errorf("%s: %w", key(id, ch), domain.ErrConflict)
	}
	d.Status = c.To
	if !c.KeepDue {
		d.DueAt = time.Time{}
	}
	cp := *d
	return &cp, nil
}

type memPublisher struct {
	sent []domain.WorkItem
	fail map[string]bool
}

func (p *memPublisher) Publish(_ context.Context, items []domain.WorkItem) []error {
	errs := make([]error, len(items))
	for i, it := range items {
		if p.fail[it.Message.NotificationID] {
			errs[i] = errors.New("injected send failure")
			continue
		}
		p.sent = append(p.sent, it)
	}
	return errs
}

var now = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

// memReleases releases each partition at once, as the release queue's
// mapping would, and records what it was asked.
type memReleases struct {
	h     *Handler
	sent  []recovery.DuePartition
	fails int
}

func (r *memReleases) EnqueueReleases(ctx context.Context, parts []recovery.DuePartition) error {
	r.sent = append(r.sent, parts...)
	for _, p := range parts {
		if _, err := r.h.Release(ctx, p); err != nil {
			r.fails++
		}
	}
	return nil
}

func newHandler(st *memStore, pub *memPublisher) (*Handler, *memReleases) {
	rel := &memReleases{}
	rel.h = New(Deps{Store: st, Publisher: pub, Releases: rel, Visibility: &fakeVisibility{}, Now: func() time.Time { return now }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	return rel.h, rel
}

// fakeVisibility records the visibility each receipt handle was given.
type fakeVisibility struct {
	mu  sync.Mutex
	set map[string]time.Duration
	// arns are the queue ARNs named, one per call.
	arns []string
	err  error
}

func (v *fakeVisibility) SetVisibility(_ context.Context, queueARN, receipt string, d time.Duration) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.set == nil {
		v.set = map[string]time.Duration{}
	}
	v.set[receipt] = d
	v.arns = append(v.arns, queueARN)
	return v.err
}

// run is one tick with its releases; it returns how many deliveries were
// queued.
func run(t *testing.T, h *Handler, rel *memReleases, pub *memPublisher) (int, error) {
	t.Helper()
	before, fails := len(pub.sent), rel.fails
	_, err := h.Tick(context.Background())
	if err == nil && rel.fails > fails {
		err = errors.New("a release failed")
	}
	return len(pub.sent) - before, err
}

func deferred(id string, due time.Time) *domain.Delivery {
	return &domain.Delivery{NotificationID: id, Channel: domain.ChannelEmail, Priority: domain.PriorityLow, Status: domain.StatusDeferred, DueAt: due}
}

func TestReleasesDueDeliveries(t *testing.T) {
	st := &memStore{deliveries: map[string]*domain.Delivery{}}
	for i := range 150 { // more than one page
		st.deliveries[key(fmt.Sprintf("d%03d", i), domain.ChannelEmail)] = deferred(fmt.Sprintf("d%03d", i), now.Add(-time.Minute))
	}
	st.deliveries[key("later", domain.ChannelEmail)] = deferred("later", now.Add(time.Second))
	// A release interrupted after deferred → planned is found again.
	crashed := deferred("crashed", now.Add(-time.Hour))
	crashed.Status = domain.StatusPlanned
	st.deliveries[key("crashed", domain.ChannelEmail)] = crashed
	pub := &memPublisher{}
	h, rel := newHandler(st, pub)
	n, err := run(t, h, rel, pub)
	if err != nil {
		t.Fatal(err)
	}
	if n != 151 || len(pub.sent) != 151 {
		t.Fatalf("released %d, sent %d, want 151", n, len(pub.sent))
	}
	for k, d := range st.deliveries {
		want := domain.StatusQueued
		if d.NotificationID == "later" {
			want = domain.StatusDeferred
		}
		if d.Status != want {
			t.Errorf("%s = %s, want %s", k, d.Status, want)
		}
	}
	if pub.sent[0].Priority != domain.PriorityLow {
		t.Errorf("released on priority %s, want the delivery's", pub.sent[0].Priority)
	}
}

func TestStaleIndexEntriesEndThePass(t *testing.T) {
	st := &memStore{deliveries: map[string]*domain.Delivery{}}
	cancelled := deferred("gone", now.Add(-time.Minute))
	cancelled.Status = domain.StatusDropped
	st.deliveries[key("gone", domain.ChannelEmail)] = cancelled
	st.stale = []domain.Delivery{*deferred("gone", now.Add(-time.Minute))}
	pub := &memPublisher{}
	h, _ := newHandler(st, pub)
	n, err := h.Release(context.Background(), partitionOf(cancelled))
	if err != nil || n != 0 || len(pub.sent) != 0 {
		t.Fatalf("Release = %d, %v; sent %v", n, err, pub.sent)
	}
	if st.queries != 1 {
		t.Errorf("queried %d times, want the pass to stop after the stale page", st.queries)
	}
}

// The release trusts no listed state: the index projects no status (an
// entry's Status is empty), and one listed as planned — a stale or wider
// index, a fake — is released only if the conditional transition finds the
// item deferred or planned. Here the item was cancelled meanwhile.
func TestListedStatusIsNotTrusted(t *testing.T) {
	st := &memStore{deliveries: map[string]*domain.Delivery{}}
	cancelled := deferred("gone", now.Add(-time.Minute))
	cancelled.Status = domain.StatusDropped
	st.deliveries[key("gone", domain.ChannelEmail)] = cancelled
	listed := *deferred("gone", now.Add(-time.Minute))
	listed.Status = domain.StatusPlanned
	st.stale = []domain.Delivery{listed}
	pub := &memPublisher{}
	h, _ := newHandler(st, pub)
	h.budget = 0
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second) // trusting it, the release sent it page after page
	defer cancel()
	if n, err := h.Release(ctx, partitionOf(cancelled)); n != 0 || err != nil || len(pub.sent) != 0 {
		t.Fatalf("Release = %d, %v with %d sent: a cancelled delivery listed as planned was sent", n, err, len(pub.sent))
	}
}

func TestSendFailureKeepsTheDeliveryDue(t *testing.T) {
	st := &memStore{deliveries: map[string]*domain.Delivery{key("a", domain.ChannelEmail): deferred("a", now.Add(-time.Minute))}}
	pub := &memPublisher{fail: map[string]bool{"a": true}}
	h, rel := newHandler(st, pub)
	if _, err := run(t, h, rel, pub); err == nil {
		t.Fatal("Release reported no error though nothing could be sent")
	}
	d := st.deliveries[key("a", domain.ChannelEmail)]
	if d.Status != domain.StatusPlanned || d.DueAt.IsZero() {
		t.Fatalf("after a failed send: %s due %v, want planned and still due", d.Status, d.DueAt)
	}
	delete(pub.fail, "a")
	if n, err := run(t, h, rel, pub); err != nil || n != 1 {
		t.Fatalf("next run: %d, %v", n, err)
	}
	if d.Status != domain.StatusQueued {
		t.Errorf("status %s, want queued", d.Status)
	}
}

func TestReleaseMetrics(t *testing.T) {
	st := &memStore{deliveries: map[string]*domain.Delivery{}}
	for _, id := range []string{"a", "b"} {
		st.deliveries[key(id, domain.ChannelEmail)] = deferred(id, now.Add(-time.Minute))
	}
	tally := &metrics.Tally{}
	h, _ := newHandler(st, &memPublisher{})
	h.metrics = tally
	body, _ := json.Marshal(recovery.DuePartition{Bucket: now.Add(-time.Minute).Truncate(time.Hour), Shard: 1})
	resp, err := h.HandleRelease(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", Body: string(body)}}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatal(resp, err)
	}
	if got := tally.Count(metrics.Enqueued, metrics.Dims{Channel: domain.ChannelEmail, Priority: domain.PriorityLow}); got != 2 || tally.Flushes() != 1 {
		t.Errorf("Enqueued = %d, flushes = %d; want 2 and 1", got, tally.Flushes())
	}
}

func TestTickWatermark(t *testing.T) {
	tests := []struct {
		name          string
		watermark     time.Time
		due           time.Time
		sendFails     bool
		wantReleased  int
		wantWatermark time.Time
	}{
		{name: "nothing due: moves to an hour ago", watermark: now.Add(-5 * time.Hour), wantWatermark: now.Add(-time.Hour)},
		// The tick cannot know its releases finished: the next one moves on.
		{name: "old bucket after the watermark is released", watermark: now.Add(-5 * time.Hour), due: now.Add(-3 * time.Hour), wantReleased: 1, wantWatermark: now.Add(-3 * time.Hour)},
		{name: "an unfinished bucket holds the watermark", watermark: now.Add(-5 * time.Hour), due: now.Add(-150 * time.Minute), sendFails: true,
			wantWatermark: now.Add(-150 * time.Minute).Truncate(time.Hour)},
		{name: "a watermark ahead of the clock is not trusted", watermark: now.Add(5 * time.Hour), due: now.Add(-time.Minute), wantReleased: 1, wantWatermark: now.Add(5 * time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &memStore{deliveries: map[string]*domain.Delivery{}, watermark: tt.watermark}
			if !tt.due.IsZero() {
				st.deliveries[key("a", domain.ChannelEmail)] = deferred("a", tt.due)
			}
			pub := &memPublisher{fail: map[string]bool{"a": tt.sendFails}}
			h, rel := newHandler(st, pub)
			n, _ := run(t, h, rel, pub)
			if n != tt.wantReleased {
				t.Errorf("released %d, want %d", n, tt.wantReleased)
			}
			if !st.watermark.Equal(tt.wantWatermark) {
				t.Errorf("watermark %v, want %v", st.watermark, tt.wantWatermark)
			}
			if tt.due.IsZero() && len(rel.sent) != 0 {
				t.Errorf("release messages %v for an empty index", rel.sent)
			}
		})
	}
}

// A failed probe fails only its partition (issue 36, defect 8): the tick
// still releases every partition known due, keeps the watermark at the
// failed partition's bucket so the next tick probes it again, and reports
// the failure.
func TestTickReleasesWhatIsKnownDueWhenAProbeFails(t *testing.T) {
	st := &memStore{deliveries: map[string]*domain.Delivery{}, watermark: now.Add(-5 * time.Hour)}
	early := deferred("dd", now.Add(-150*time.Minute)) // shard 0 of the 09:00 bucket
	st.deliveries[key("dd", domain.ChannelEmail)] = early
	st.deliveries[key("a", domain.ChannelEmail)] = deferred("a", now.Add(-3*time.Hour)) // shard 1 of 09:00
	st.deliveries[key("b", domain.ChannelEmail)] = deferred("b", now.Add(-time.Minute)) // shard 1 of 11:00
	st.probeErr = map[recovery.DuePartition]error{partitionOf(early): errors.New("injected ProvisionedThroughputExceededException")}
	pub := &memPublisher{}
	h, rel := newHandler(st, pub)
	n, err := h.Tick(context.Background())
	if err == nil {
		t.Error("the tick reported no error though a probe failed")
	}
	if n != 2 || len(pub.sent) != 2 {
		t.Fatalf("%d partitions released, %d sent: want the two known due despite the failed probe", n, len(pub.sent))
	}
	if want := partitionOf(early).Bucket; !st.watermark.Equal(want) {
		t.Errorf("watermark %v, want %v: the failed partition's bucket is probed again", st.watermark, want)
	}
	delete(st.probeErr, partitionOf(early))
	if got, err := run(t, h, rel, pub); err != nil || got != 1 || st.deliveries[key("dd", domain.ChannelEmail)].Status != domain.StatusQueued {
		t.Errorf("next tick: %d released, %v; want the partition that failed released", got, err)
	}
}

func TestTickProbesBoundedAfterAnOutage(t *testing.T) {
	st := &memStore{deliveries: map[string]*domain.Delivery{}, watermark: now.Add(-30 * 24 * time.Hour)}
	h, rel := newHandler(st, &memPublisher{})
	if _, err := run(t, h, rel, &memPublisher{}); err != nil {
		t.Fatal(err)
	}
	if max := 2 * (48 + 1 + 1); st.probes > max {
		t.Errorf("%d probes, want at most %d (48 hours of buckets and one behind the watermark)", st.probes, max)
	}
	if want := now.Add(-30*24*time.Hour + 48*time.Hour); !st.watermark.Equal(want) {
		t.Errorf("watermark %v, want %v (the end of what was probed)", st.watermark, want)
	}
}

// An entry due in a bucket behind the watermark — planned with a past due
// time — is in no bucket a tick probes; the sweep behind the watermark finds
// it within one round of SweepBack, releases it and counts it (issue 36,
// defect 2: a late digest leader was lost there). A sweep probes one bucket
// a minute, however often the tick runs.
func TestSweepReleasesEntriesBehindTheWatermark(t *testing.T) {
	st := &memStore{deliveries: map[string]*domain.Delivery{}, watermark: now.Add(-time.Hour)}
	lost := deferred("late", now.Add(-30*time.Hour))
	st.deliveries[key("late", domain.ChannelEmail)] = lost
	pub := &memPublisher{}
	h, rel := newHandler(st, pub)
	tally := &metrics.Tally{}
	h.metrics = tally
	clock := now
	h.now = func() time.Time { return clock }
	rounds := int(SweepBack / time.Hour)
	minutes := 0
	for ; minutes <= rounds && lost.Status == domain.StatusDeferred; minutes++ {
		before := st.probes
		for range 3 { // the second and third tick of a minute sweep nothing
			if _, err := run(t, h, rel, pub); err != nil {
				t.Fatal(err)
			}
		}
		// Two shards a bucket: the first tick of an hour probes three
		// buckets, the others two, and one bucket is swept.
		if got, want := st.probes-before, 2*(3+2+2)+2; got > want {
			t.Fatalf("minute %d: %d probes in a minute's three ticks, want at most %d: one swept bucket a minute", minutes, got, want)
		}
		clock = clock.Add(time.Minute)
	}
	if lost.Status != domain.StatusQueued || len(pub.sent) != 1 {
		t.Fatalf("after %d minutes: %s, %d sent; want released within one sweep round (%d minutes)", minutes, lost.Status, len(pub.sent), rounds)
	}
	if got := tally.Count(metrics.DueBehindWatermark, metrics.Dims{}); got != 1 {
		t.Errorf("DueBehindWatermark = %d, want the one partition", got)
	}
	t.Logf("found after %d minutes", minutes)
}

func TestHandleReleaseMessages(t *testing.T) {
	st := &memStore{deliveries: map[string]*domain.Delivery{key("a", domain.ChannelEmail): deferred("a", now.Add(-time.Minute))}}
	pub := &memPublisher{}
	h, _ := newHandler(st, pub)
	good, _ := json.Marshal(partitionOf(st.deliveries[key("a", domain.ChannelEmail)]))
	ev := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "bad-json", Body: "{", EventSource: "aws:sqs"},
		{MessageId: "no-bucket", Body: `{"shard":1}`, EventSource: "aws:sqs"},
		{MessageId: "unknown-field", Body: `{"bucket":"2026-03-02T11:00:00Z","shard":1,"x":1}`, EventSource: "aws:sqs"},
		{MessageId: "good", Body: string(good), EventSource: "aws:sqs"},
	}}
	raw, _ := json.Marshal(ev)
	out, err := h.Invoke(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	resp := out.(events.SQSEventResponse)
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	if !slices.Equal(failed, []string{"bad-json", "no-bucket", "unknown-field"}) {
		t.Errorf("failed %v, want the three malformed messages", failed)
	}
	if len(pub.sent) != 1 || st.deliveries[key("a", domain.ChannelEmail)].Status != domain.StatusQueued {
		t.Errorf("sent %v", pub.sent)
	}
	// A schedule event is the tick.
	tick, err := h.Invoke(context.Background(), json.RawMessage(`{"detail-type":"Scheduled Event","source":"aws.events"}`))
	if _, ok := tick.(Summary); !ok || err != nil {
		t.Errorf("tick = %#v, %v", tick, err)
	}
}

// TestReleaseRateIsTheWriteBudgetsShare: a partition's pace is its share of
// SchedulerReleaseRate, never more than the due partition's own bound.
func TestReleaseRateIsTheWriteBudgetsShare(t *testing.T) {
	for _, tc := range []struct{ rate, want float64 }{{0, MaxPartitionReleaseRate}, {100, 100}, {5000, MaxPartitionReleaseRate}} {
		if h := New(Deps{PartitionReleaseRate: tc.rate}); h.maxRate != tc.want {
			t.Errorf("PartitionReleaseRate %v: pace %v, want %v", tc.rate, h.maxRate, tc.want)
		}
	}
}

func TestReleasePacing(t *testing.T) {
	st := &memStore{deliveries: map[string]*domain.Delivery{}}
	for i := range 300 {
		id := fmt.Sprintf("p%03d", i) // all in shard 0
		st.deliveries[key(id, domain.ChannelEmail)] = deferred(id, now.Add(-time.Minute))
	}
	h, _ := newHandler(st, &memPublisher{})
	h.maxRate = 1000
	start := time.Now()
	n, err := h.Release(context.Background(), recovery.DuePartition{Bucket: now.Add(-time.Minute).Truncate(time.Hour), Shard: 0})
	if err != nil || n != 300 {
		t.Fatalf("Release = %d, %v", n, err)
	}
	// Pages of 100: the third page may start only after 200 ms.
	if el := time.Since(start); el < 200*time.Millisecond {
		t.Errorf("300 released in %v, faster than 1,000/s", el)
	}
}

// A malformed release message is made visible again at once (the redrive
// parks it after maxReceiveCount quick receives); a store failure leaves the
// visibility timeout to run (the next tick finds the partition anyway).
func TestHandleReleaseVisibility(t *testing.T) {
	const queueARN = "arn:aws:sqs:eu-west-1:123456789012:herald-ReleaseQueue"
	due := deferred("a", now.Add(-time.Minute))
	good, _ := json.Marshal(partitionOf(due))
	tests := []struct {
		name       string
		body       string
		storeErr   error
		visErr     error
		wantFailed bool
		// wantVisibility is the visibility set, nil for untouched.
		wantVisibility *time.Duration
		wantQueued     bool
	}{
		{name: "not json", body: "{", wantFailed: true, wantVisibility: new(time.Duration(0))},
		{name: "no bucket", body: `{"shard":1}`, wantFailed: true, wantVisibility: new(time.Duration(0))},
		{name: "unknown field", body: `{"bucket":"2026-03-02T11:00:00Z","shard":1,"x":1}`, wantFailed: true, wantVisibility: new(time.Duration(0))},
		{name: "malformed, visibility change fails: still failed", body: "{", visErr: errors.New("injected visibility failure"),
			wantFailed: true, wantVisibility: new(time.Duration(0))},
		{name: "store failure waits out the visibility timeout", body: string(good), storeErr: errors.New("injected store failure"), wantFailed: true},
		{name: "good", body: string(good), wantQueued: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &memStore{deliveries: map[string]*domain.Delivery{key("a", domain.ChannelEmail): deferred("a", due.DueAt)}, listErr: tt.storeErr}
			pub := &memPublisher{}
			h, _ := newHandler(st, pub)
			vis := &fakeVisibility{err: tt.visErr}
			h.visibility = vis
			resp, err := h.HandleRelease(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
				{MessageId: "m1", ReceiptHandle: "r1", Body: tt.body, EventSource: "aws:sqs", EventSourceARN: queueARN},
			}})
			if err != nil {
				t.Fatal(err)
			}
			failed := len(resp.BatchItemFailures) == 1 && resp.BatchItemFailures[0].ItemIdentifier == "m1"
			if failed != tt.wantFailed || len(resp.BatchItemFailures) > 1 {
				t.Errorf("batch item failures %v, want failed %v", resp.BatchItemFailures, tt.wantFailed)
			}
			got, set := vis.set["r1"]
			switch {
			case tt.wantVisibility == nil && set:
				t.Errorf("visibility set to %v, want it untouched", got)
			case tt.wantVisibility != nil && (!set || got != *tt.wantVisibility):
				t.Errorf("visibility %v (set %v), want %v", got, set, *tt.wantVisibility)
			case set && (len(vis.arns) != 1 || vis.arns[0] != queueARN):
				t.Errorf("visibility changed on %v, want once on %s", vis.arns, queueARN)
			}
			wantSent := 0
			if tt.wantQueued {
				wantSent = 1
			}
			if queued := st.deliveries[key("a", domain.ChannelEmail)].Status == domain.StatusQueued; queued != tt.wantQueued || len(pub.sent) != wantSent {
				t.Errorf("queued %v with %d sent, want %v", queued, len(pub.sent), tt.wantQueued)
			}
		})
	}
}

type fakeAnnouncements struct {
	calls int
	err   error
}

func (f *fakeAnnouncements) AnnouncePending(context.Context) (int, error) {
	f.calls++
	return 1, f.err
}

// Each tick starts the broadcasts of announcements that became active; a
// failure there never fails the tick (its releases go on).
func TestTickAnnounces(t *testing.T) {
	an := &fakeAnnouncements{}
	h, _ := newHandler(&memStore{deliveries: map[string]*domain.Delivery{}}, &memPublisher{})
	h.announcements = an
	tick := json.RawMessage(`{"detail-type":"Scheduled Event","source":"aws.events"}`)
	if _, err := h.Invoke(context.Background(), tick); err != nil || an.calls != 1 {
		t.Fatalf("tick: %v, %d announcement runs", err, an.calls)
	}
	an.err = errors.New("down")
	if _, err := h.Invoke(context.Background(), tick); err != nil || an.calls != 2 {
		t.Fatalf("tick with the announcements down: %v, %d runs", err, an.calls)
	}
}
