package dynamo_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
)

// countingDB counts the Query calls a store makes.
type countingDB struct {
	*dynamodb.Client
	queries atomic.Int64
}

func (c *countingDB) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c.queries.Add(1)
	return c.Client.Query(ctx, in, opts...)
}

// seedHistory gives user n notifications of caller "svc" (types a, b, c in
// turn, a minute apart from t0): the even ones an email sent at once (the
// claim creates the item, then sent) and a push skipped by preference, the
// odd ones an email deferred for quiet hours. It returns their ids, oldest
// first.
func seedHistory(t *testing.T, s *stacktest.Stores, user string, n int) []string {
	t.Helper()
	ctx := context.Background()
	var ids []string
	for i := range n {
		id := uniq(t)
		nt := notification(id, user, t0.Add(time.Duration(i)*time.Minute))
		nt.Type = []string{"a", "b", "c"}[i%3]
		if i%2 == 0 {
			if _, err := s.Transition(ctx, id, domain.ChannelEmail, domain.Change{To: domain.StatusSending, LeaseUntil: t0.Add(time.Hour),
				IncrementAttempts: true, Create: domain.DeliveryOf(nt, domain.ChannelEmail)}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Transition(ctx, id, domain.ChannelEmail, domain.Change{To: domain.StatusSent}); err != nil {
				t.Fatal(err)
			}
			skipped := domain.DeliveryOf(nt, domain.ChannelPush)
			skipped.Status, skipped.Reason, skipped.UpdatedAt = domain.StatusSkipped, domain.ReasonPreference, t0
			if _, err := s.CreateDelivery(ctx, skipped); err != nil {
				t.Fatal(err)
			}
		} else {
			deferred := domain.DeliveryOf(nt, domain.ChannelEmail)
			deferred.Status, deferred.Reason, deferred.UpdatedAt, deferred.DueAt = domain.StatusDeferred, domain.ReasonQuietHours, t0, t0.Add(8*time.Hour)
			if _, err := s.CreateDelivery(ctx, deferred); err != nil {
				t.Fatal(err)
			}
		}
		ids = append(ids, id)
	}
	return ids
}

func historyIDs(p domain.HistoryPage) []string {
	var ids []string
	for _, e := range p.Entries {
		ids = append(ids, e.NotificationID)
	}
	return ids
}

// TestHistoryPagesWholeNotificationsOneQueryEach: a recipient's history is
// read newest first, each notification with all its deliveries even where
// a page's query ends inside one, every page with one Query; filters and
// the caller's scope hold.
func TestHistoryPagesWholeNotificationsOneQueryEach(t *testing.T) {
	e := stacktest.Emulators(t)
	db := &countingDB{Client: e.DynamoDB()}
	s := stacktest.NewStores(dynamo.New(db, e.Resources.Table, dynamo.WithClock(newClock(t0).Now)))
	ctx := context.Background()
	user := uniq(t)
	ids := seedHistory(t, s, user, 7)
	other := notification(uniq(t), user, t0.Add(time.Hour))
	other.Caller = "other-service"
	if _, err := s.Transition(ctx, other.ID, domain.ChannelSMS, domain.Change{To: domain.StatusSending, LeaseUntil: t0.Add(time.Hour),
		Create: domain.DeliveryOf(other, domain.ChannelSMS)}); err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(ids)
	slices.Reverse(want)

	var got []string
	position, pages := "", 0
	for {
		before := db.queries.Load()
		p, err := s.ListHistory(ctx, "svc", user, domain.HistoryFilter{}, position, 2)
		if err != nil {
			t.Fatal(err)
		}
		if n := db.queries.Load() - before; n != 1 {
			t.Fatalf("page %d took %d queries, want 1", pages, n)
		}
		for _, en := range p.Entries {
			wantDeliveries := 1
			if slices.Index(ids, en.NotificationID)%2 == 0 {
				wantDeliveries = 2
			}
			if len(en.Deliveries) != wantDeliveries || en.Caller != "svc" || en.CreatedAt.IsZero() || en.Type == "" {
				t.Errorf("entry %s: %+v, want %d deliveries with caller, type and creation", en.NotificationID, en, wantDeliveries)
			}
		}
		got = append(got, historyIDs(p)...)
		pages++
		if p.Next == "" || pages > 10 {
			break
		}
		position = p.Next
	}
	if !slices.Equal(got, want) {
		t.Errorf("history %v, want %v (newest first, each once)", got, want)
	}

	filters := []struct {
		name string
		f    domain.HistoryFilter
		want []string
	}{
		{"type b", domain.HistoryFilter{Type: "b"}, []string{ids[4], ids[1]}},
		{"push", domain.HistoryFilter{Channel: domain.ChannelPush}, []string{ids[6], ids[4], ids[2], ids[0]}},
		{"deferred", domain.HistoryFilter{Status: domain.StatusDeferred}, []string{ids[5], ids[3], ids[1]}},
		{"since and until", domain.HistoryFilter{Since: t0.Add(2 * time.Minute), Until: t0.Add(4 * time.Minute)}, []string{ids[3], ids[2]}},
	}
	for _, c := range filters {
		var got []string
		position := ""
		for range 10 {
			p, err := s.ListHistory(ctx, "svc", user, c.f, position, 10)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, historyIDs(p)...)
			if position = p.Next; position == "" {
				break
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	p, err := s.ListHistory(ctx, "other-service", user, domain.HistoryFilter{}, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := historyIDs(p); !slices.Equal(got, []string{other.ID}) {
		t.Errorf("another caller's history %v, want only its own %s", got, other.ID)
	}
}

// TestTrailIsWrittenWithEachTransition: each change's step goes into the
// delivery's trail in the same write; a redrive starts a new trail.
func TestTrailIsWrittenWithEachTransition(t *testing.T) {
	s, _, clock := newStore(t)
	ctx := context.Background()
	id := uniq(t)
	nt := notification(id, uniq(t), t0)
	d := domain.DeliveryOf(nt, domain.ChannelEmail)
	d.Status, d.Reason, d.UpdatedAt, d.DueAt = domain.StatusDeferred, domain.ReasonQuietHours, t0, t0.Add(8*time.Hour)
	if _, err := s.CreateDelivery(ctx, d); err != nil {
		t.Fatal(err)
	}
	steps := []domain.Change{
		{To: domain.StatusPlanned, KeepDue: true},
		{To: domain.StatusQueued},
		{To: domain.StatusSending, LeaseUntil: t0.Add(9 * time.Hour), IncrementAttempts: true},
		{To: domain.StatusRetrying, LastError: "throttled", Note: "retry in 4s"},
		{To: domain.StatusSending, LeaseUntil: t0.Add(9 * time.Hour), IncrementAttempts: true},
		{To: domain.StatusSent},
	}
	var got *domain.Delivery
	for i, c := range steps {
		clock.Set(t0.Add(8*time.Hour + time.Duration(i)*time.Second))
		var err error
		if got, err = s.Transition(ctx, id, domain.ChannelEmail, c); err != nil {
			t.Fatalf("%s: %v", c.To, err)
		}
	}
	var statuses []domain.Status
	for _, st := range got.Trail {
		statuses = append(statuses, st.Status)
	}
	want := []domain.Status{domain.StatusDeferred, domain.StatusPlanned, domain.StatusQueued, domain.StatusSending, domain.StatusRetrying, domain.StatusSending, domain.StatusSent}
	if !slices.Equal(statuses, want) {
		t.Fatalf("trail %v, want %v", statuses, want)
	}
	if first := got.Trail[0]; first.Reason != domain.ReasonQuietHours || !first.DueAt.Equal(t0.Add(8*time.Hour)) {
		t.Errorf("first step %+v, want deferred for quiet hours until 08:00", first)
	}
	if r := got.Trail[4]; r.Error != "throttled" || r.Note != "retry in 4s" || !r.At.Equal(t0.Add(8*time.Hour+3*time.Second)) {
		t.Errorf("retry step %+v, want throttled, retry in 4s, at its write's time", r)
	}
	stored, err := s.GetDelivery(ctx, id, domain.ChannelEmail)
	if err != nil || len(stored.Trail) != len(want) {
		t.Fatalf("stored trail %+v, %v", stored, err)
	}

	// A redrive (failed → queued) starts again; a trail past MaxTrail keeps
	// its first step and the newest.
	id2 := uniq(t)
	nt2 := notification(id2, uniq(t), t0)
	if _, err := s.Transition(ctx, id2, domain.ChannelEmail, domain.Change{To: domain.StatusSending, LeaseUntil: t0.Add(time.Hour),
		Create: domain.DeliveryOf(nt2, domain.ChannelEmail)}); err != nil {
		t.Fatal(err)
	}
	for i := range domain.MaxTrail {
		to := domain.StatusRetrying
		if i%2 == 1 {
			to = domain.StatusSending
		}
		if got, err = s.Transition(ctx, id2, domain.ChannelEmail, domain.Change{To: to, LeaseUntil: t0.Add(time.Hour), Note: string(rune('a' + i))}); err != nil {
			t.Fatal(err)
		}
	}
	if len(got.Trail) != domain.MaxTrail || got.Trail[0].Status != domain.StatusSending || got.Trail[domain.MaxTrail-1].Note != string(rune('a'+domain.MaxTrail-1)) {
		t.Errorf("trail of %d steps (first %+v), want %d: the first and the newest", len(got.Trail), got.Trail[0], domain.MaxTrail)
	}
	if stored, _ := s.GetDelivery(ctx, id2, domain.ChannelEmail); len(stored.Trail) != domain.MaxTrail {
		t.Errorf("stored trail of %d steps, want %d", len(stored.Trail), domain.MaxTrail)
	}
	if _, err := s.Transition(ctx, id2, domain.ChannelEmail, domain.Change{To: domain.StatusFailed, Reason: domain.ReasonExhausted}); err != nil {
		t.Fatal(err)
	}
	got, err = s.Transition(ctx, id2, domain.ChannelEmail, domain.Change{To: domain.StatusQueued, From: []domain.Status{domain.StatusFailed}})
	if err != nil || len(got.Trail) != 1 || got.Trail[0].Status != domain.StatusQueued {
		t.Errorf("after a redrive: %+v, %v; want a trail of one step, queued", got, err)
	}
}
