package scheduler

import (
	"context"
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
)

// memStore keeps deliveries and a due index that, like a GSI, may lag: stale
// entries stay listed until dropStale is called.
type memStore struct {
	mu         sync.Mutex
	deliveries map[string]*domain.Delivery
	stale      []domain.Delivery // index entries whose item moved on
	queries    int
}

func key(id string, c domain.Channel) string { return id + "/" + string(c) }

func (s *memStore) ListDue(_ context.Context, now time.Time, limit int32) ([]domain.Delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queries++
	var out []domain.Delivery
	out = append(out, s.stale...)
	for _, d := range s.deliveries {
		inIndex := d.Status == domain.StatusDeferred || d.Status == domain.StatusPlanned && !d.DueAt.IsZero()
		if inIndex && !d.DueAt.After(now) {
			out = append(out, *d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].NotificationID < out[j].NotificationID })
	return out[:min(len(out), int(limit))], nil
}

func (s *memStore) Transition(_ context.Context, id string, ch domain.Channel, c domain.Change) (*domain.Delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.deliveries[key(id, ch)]
	if !ok || !slices.Contains(c.From, d.Status) {
		return nil, fmt.Errorf("%s: %w", key(id, ch), domain.ErrConflict)
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

func newHandler(st *memStore, pub *memPublisher) *Handler {
	return New(deps(st, pub))
}

func deps(st *memStore, pub *memPublisher) Deps {
	return Deps{Store: st, Publisher: pub, Now: func() time.Time { return now }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
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
	n, err := newHandler(st, pub).Release(context.Background())
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
	n, err := newHandler(st, pub).Release(context.Background())
	if err != nil || n != 0 || len(pub.sent) != 0 {
		t.Fatalf("Release = %d, %v; sent %v", n, err, pub.sent)
	}
	if st.queries != 1 {
		t.Errorf("queried %d times, want the pass to stop after the stale page", st.queries)
	}
}

func TestSendFailureKeepsTheDeliveryDue(t *testing.T) {
	st := &memStore{deliveries: map[string]*domain.Delivery{key("a", domain.ChannelEmail): deferred("a", now.Add(-time.Minute))}}
	pub := &memPublisher{fail: map[string]bool{"a": true}}
	h := newHandler(st, pub)
	if _, err := h.Release(context.Background()); err == nil {
		t.Fatal("Release reported no error though nothing could be sent")
	}
	d := st.deliveries[key("a", domain.ChannelEmail)]
	if d.Status != domain.StatusPlanned || d.DueAt.IsZero() {
		t.Fatalf("after a failed send: %s due %v, want planned and still due", d.Status, d.DueAt)
	}
	delete(pub.fail, "a")
	if n, err := h.Release(context.Background()); err != nil || n != 1 {
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
	d := deps(st, &memPublisher{})
	d.Metrics = tally
	if _, err := New(d).Handle(context.Background(), events.EventBridgeEvent{}); err != nil {
		t.Fatal(err)
	}
	if got := tally.Count(metrics.Enqueued, metrics.Dims{Channel: domain.ChannelEmail, Priority: domain.PriorityLow}); got != 2 || tally.Flushes() != 1 {
		t.Errorf("Enqueued = %d, flushes = %d; want 2 and 1", got, tally.Flushes())
	}
}
