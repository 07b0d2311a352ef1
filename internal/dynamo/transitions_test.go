package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
)

var allStatuses = []domain.Status{
	domain.StatusPlanned, domain.StatusQueued, domain.StatusSending, domain.StatusSent, domain.StatusRetrying, domain.StatusDeferred,
	domain.StatusSkipped, domain.StatusDropped, domain.StatusFailed, domain.StatusDelivered, domain.StatusBounced, domain.StatusComplained,
}

// seedDelivery stores a delivery in status (deferred ones due in an hour,
// sending ones leased for a minute) and returns it.
func seedDelivery(t testing.TB, s *stacktest.Stores, id string, ch domain.Channel, status domain.Status) *domain.Delivery {
	t.Helper()
	d := &domain.Delivery{NotificationID: id, Channel: ch, UserID: "u-" + id, Priority: domain.PriorityNormal, Status: status, UpdatedAt: t0}
	switch status {
	case domain.StatusDeferred:
		d.DueAt = t0.Add(time.Hour)
	case domain.StatusSending:
		d.LeaseUntil = t0.Add(time.Minute)
	}
	if _, err := s.CreateDelivery(context.Background(), d); err != nil {
		t.Fatalf("seed %s: %v", status, err)
	}
	return d
}

// changeTo is the smallest valid change to status.
func changeTo(to domain.Status) domain.Change {
	c := domain.Change{To: to}
	switch to {
	case domain.StatusDeferred:
		c.DueAt, c.Reason = t0.Add(2*time.Hour), domain.ReasonQuietHours
	case domain.StatusSending:
		c.LeaseUntil = t0.Add(5 * time.Minute)
	}
	return c
}

func TestTransitionEveryAllowedEdge(t *testing.T) {
	s, _, clock := newStore(t)
	clock.Set(t0.Add(time.Second))
	for _, from := range allStatuses {
		for _, to := range allStatuses {
			if !domain.CanTransition(from, to) {
				continue
			}
			t.Run(fmt.Sprintf("%s-%s", from, to), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				id := uniq(t)
				seedDelivery(t, s, id, domain.ChannelEmail, from)
				got, err := s.Transition(ctx, id, domain.ChannelEmail, changeTo(to))
				if err != nil {
					t.Fatalf("transition: %v", err)
				}
				stored, err := s.GetDelivery(ctx, id, domain.ChannelEmail)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, stored) {
					t.Errorf("returned %+v, stored %+v", got, stored)
				}
				if stored.Status != to || !stored.UpdatedAt.Equal(t0.Add(time.Second)) {
					t.Errorf("stored %+v, want status %s updated at the store's clock", stored, to)
				}
			})
		}
	}
}

func TestTransitionRefusesEveryOtherEdge(t *testing.T) {
	s, _, clock := newStore(t)
	clock.Set(t0.Add(time.Second))
	for _, from := range allStatuses {
		for _, to := range allStatuses {
			if domain.CanTransition(from, to) {
				continue
			}
			t.Run(fmt.Sprintf("%s-%s", from, to), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				id := uniq(t)
				seeded := seedDelivery(t, s, id, domain.ChannelPush, from)
				current, err := s.Transition(ctx, id, domain.ChannelPush, changeTo(to))
				if !errors.Is(err, domain.ErrConflict) {
					t.Fatalf("transition: %v, want ErrConflict", err)
				}
				if !reflect.DeepEqual(current, seeded) {
					t.Errorf("conflict returned %+v, want the current delivery %+v", current, seeded)
				}
				if stored, _ := s.GetDelivery(ctx, id, domain.ChannelPush); !reflect.DeepEqual(stored, seeded) {
					t.Errorf("stored %+v, want it unchanged", stored)
				}
			})
		}
	}
}

func TestTransitionConditions(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	tests := []struct {
		name   string
		seed   domain.Status // "" seeds nothing
		change domain.Change
		check  func(t *testing.T, d *domain.Delivery, err error)
	}{
		{"a stale view of the source is refused", domain.StatusSending,
			domain.Change{To: domain.StatusDropped, From: []domain.Status{domain.StatusQueued}, Reason: domain.ReasonCancelled},
			func(t *testing.T, d *domain.Delivery, err error) {
				if !errors.Is(err, domain.ErrConflict) || d == nil || d.Status != domain.StatusSending {
					t.Errorf("%+v, %v; want ErrConflict with the sending delivery", d, err)
				}
			}},
		{"a source the state machine forbids is refused before any write", domain.StatusQueued,
			domain.Change{To: domain.StatusSent, From: []domain.Status{domain.StatusQueued}},
			func(t *testing.T, d *domain.Delivery, err error) {
				var invalid domain.ErrInvalidTransition
				if !errors.As(err, &invalid) || invalid.From != domain.StatusQueued || invalid.To != domain.StatusSent || d != nil {
					t.Errorf("%+v, %v; want ErrInvalidTransition queued→sent", d, err)
				}
			}},
		{"deferred needs a due time", domain.StatusPlanned, domain.Change{To: domain.StatusDeferred},
			func(t *testing.T, d *domain.Delivery, err error) {
				if err == nil || errors.Is(err, domain.ErrConflict) {
					t.Errorf("%+v, %v; want a validation error", d, err)
				}
			}},
		{"no delivery is a conflict", "", domain.Change{To: domain.StatusQueued},
			func(t *testing.T, d *domain.Delivery, err error) {
				if !errors.Is(err, domain.ErrConflict) || d != nil {
					t.Errorf("%+v, %v; want ErrConflict and no delivery", d, err)
				}
			}},
		{"fields of a send outcome", domain.StatusSending,
			domain.Change{To: domain.StatusSent, From: []domain.Status{domain.StatusSending}, ProviderMessageID: "pm-1", DigestID: "dg-1"},
			func(t *testing.T, d *domain.Delivery, err error) {
				if err != nil || d.ProviderMessageID != "pm-1" || d.DigestID != "dg-1" || !d.LeaseUntil.IsZero() || d.Reason != "" {
					t.Errorf("%+v, %v; want provider id and digest set, lease cleared", d, err)
				}
			}},
		{"a retry records the error and clears the lease", domain.StatusSending,
			domain.Change{To: domain.StatusRetrying, LastError: "throttled"},
			func(t *testing.T, d *domain.Delivery, err error) {
				if err != nil || d.LastError != "throttled" || !d.LeaseUntil.IsZero() {
					t.Errorf("%+v, %v", d, err)
				}
			}},
		{"dropping a deferred delivery keeps its due time for the record", domain.StatusDeferred,
			domain.Change{To: domain.StatusDropped, Reason: domain.ReasonExpired},
			func(t *testing.T, d *domain.Delivery, err error) {
				if err != nil || d.Reason != domain.ReasonExpired || !d.DueAt.Equal(t0.Add(time.Hour)) {
					t.Errorf("%+v, %v", d, err)
				}
			}},
		{"queueing a deferred delivery clears its due time and reason", domain.StatusDeferred,
			domain.Change{To: domain.StatusQueued},
			func(t *testing.T, d *domain.Delivery, err error) {
				if err != nil || !d.DueAt.IsZero() || d.Reason != "" {
					t.Errorf("%+v, %v", d, err)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := uniq(t)
			if tt.seed != "" {
				seedDelivery(t, s, id, domain.ChannelSMS, tt.seed)
			}
			d, err := s.Transition(ctx, id, domain.ChannelSMS, tt.change)
			tt.check(t, d, err)
		})
	}
}

// claim is the worker's claim: from a claimable state, or from sending whose
// lease ended before now.
func claim(now time.Time) domain.Change {
	return domain.Change{
		To: domain.StatusSending, From: []domain.Status{domain.StatusPlanned, domain.StatusQueued, domain.StatusRetrying},
		ReclaimExpiredLease: now, LeaseUntil: now.Add(time.Minute), IncrementAttempts: true,
	}
}

func TestClaimHasOneWinner(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	id := uniq(t)
	seedDelivery(t, s, id, domain.ChannelEmail, domain.StatusQueued)
	var wg sync.WaitGroup
	var mu sync.Mutex
	won, lost := 0, 0
	for range racers {
		wg.Go(func() {
			_, err := s.Transition(ctx, id, domain.ChannelEmail, claim(t0))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case errors.Is(err, domain.ErrConflict):
				lost++
			default:
				t.Errorf("claim: %v", err)
			}
		})
	}
	wg.Wait()
	if won != 1 || lost != racers-1 {
		t.Errorf("%d claims won, %d lost; want exactly one winner", won, lost)
	}
	d, err := s.GetDelivery(ctx, id, domain.ChannelEmail)
	if err != nil || d.Status != domain.StatusSending || d.Attempts != 1 || !d.LeaseUntil.Equal(t0.Add(time.Minute)) {
		t.Errorf("after the race: %+v, %v; want sending, one attempt", d, err)
	}
}

func TestClaimReclaimsOnlyAnExpiredLease(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	id := uniq(t)
	seedDelivery(t, s, id, domain.ChannelEmail, domain.StatusQueued)
	if _, err := s.Transition(ctx, id, domain.ChannelEmail, claim(t0)); err != nil {
		t.Fatal(err)
	}
	// The lease runs to t0+1m: a duplicate message inside it loses.
	if d, err := s.Transition(ctx, id, domain.ChannelEmail, claim(t0.Add(30*time.Second))); !errors.Is(err, domain.ErrConflict) || d.Attempts != 1 {
		t.Fatalf("claim inside the lease: %+v, %v; want ErrConflict", d, err)
	}
	// At exactly the lease's end it is not yet expired (leaseUntil < now).
	if _, err := s.Transition(ctx, id, domain.ChannelEmail, claim(t0.Add(time.Minute))); !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("claim at the lease's end: %v; want ErrConflict", err)
	}
	later := t0.Add(2 * time.Minute)
	d, err := s.Transition(ctx, id, domain.ChannelEmail, claim(later))
	if err != nil || d.Attempts != 2 || !d.LeaseUntil.Equal(later.Add(time.Minute)) {
		t.Fatalf("reclaim after the lease: %+v, %v; want a second attempt with a new lease", d, err)
	}
	// A finished delivery is never reclaimed.
	if _, err := s.Transition(ctx, id, domain.ChannelEmail, domain.Change{To: domain.StatusSent, From: []domain.Status{domain.StatusSending}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Transition(ctx, id, domain.ChannelEmail, claim(later.Add(time.Hour))); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("claim of a sent delivery: %v; want ErrConflict", err)
	}
}

// TestClaimGivenBackRefundsItsAttempt: a claim given back before the
// provider was called (a stale send-quota token) leaves the delivery
// retrying, unleased, with the attempts it had before the claim.
func TestClaimGivenBackRefundsItsAttempt(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	id := uniq(t)
	seedDelivery(t, s, id, domain.ChannelEmail, domain.StatusQueued)
	for round := range 2 {
		if _, err := s.Transition(ctx, id, domain.ChannelEmail, claim(t0)); err != nil {
			t.Fatal(err)
		}
		d, err := s.Transition(ctx, id, domain.ChannelEmail, domain.Change{To: domain.StatusRetrying, From: []domain.Status{domain.StatusSending},
			RefundAttempt: true, LastError: "send_quota"})
		if err != nil || d.Status != domain.StatusRetrying || d.Attempts != 0 || !d.LeaseUntil.IsZero() || d.LastError != "send_quota" {
			t.Fatalf("round %d: given back: %+v, %v; want retrying, no attempt, no lease", round, d, err)
		}
	}
}

func TestDueIndexFollowsTransitions(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	// Due times in 2001 belong to this test alone (their hour buckets are
	// partitions of their own).
	due := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	id := uniq(t)
	seedDelivery(t, s, id, domain.ChannelEmail, domain.StatusPlanned)
	seedDelivery(t, s, id, domain.ChannelSMS, domain.StatusPlanned)
	for i, ch := range []domain.Channel{domain.ChannelEmail, domain.ChannelSMS} {
		if _, err := s.Transition(ctx, id, ch, domain.Change{To: domain.StatusDeferred, DueAt: due.Add(time.Duration(i) * time.Minute), Reason: domain.ReasonScheduled}); err != nil {
			t.Fatal(err)
		}
	}
	listDue := func(now time.Time) []string {
		t.Helper()
		var found []domain.Delivery
		for _, p := range s.DuePartitions(due, now) {
			ds, _, err := s.ListDue(ctx, p, now, 10)
			if err != nil {
				t.Fatal(err)
			}
			if has, err := s.HasDue(ctx, p, now); err != nil || has != (len(ds) > 0) {
				t.Fatalf("HasDue(%v) = %v, %v with %d due", p, has, err, len(ds))
			}
			found = append(found, ds...)
		}
		// Partitions are probed one by one; order by channel (here also
		// the due order) to compare.
		slices.SortFunc(found, func(a, b domain.Delivery) int { return strings.Compare(string(a.Channel), string(b.Channel)) })
		var got []string
		for _, d := range found {
			if d.NotificationID == id {
				got = append(got, string(d.Channel))
			}
		}
		return got
	}
	if got := listDue(due.Add(-time.Nanosecond)); len(got) != 0 {
		t.Errorf("due before the due time: %v", got)
	}
	if got := fmt.Sprint(listDue(due)); got != "[email]" {
		t.Errorf("due at the first due time: %s, want [email]", got)
	}
	if got := fmt.Sprint(listDue(due.Add(time.Hour))); got != "[email sms]" {
		t.Errorf("due later: %s, want [email sms]", got)
	}
	// A release that keeps the due entry is found again; queueing removes it.
	if _, err := s.Transition(ctx, id, domain.ChannelEmail, domain.Change{To: domain.StatusPlanned, KeepDue: true}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(listDue(due.Add(time.Hour))); got != "[email sms]" {
		t.Errorf("after a release with KeepDue: %s", got)
	}
	if _, err := s.Transition(ctx, id, domain.ChannelEmail, domain.Change{To: domain.StatusQueued}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Transition(ctx, id, domain.ChannelSMS, domain.Change{To: domain.StatusSkipped, Reason: domain.ReasonPreference}); err != nil {
		t.Fatal(err)
	}
	if got := listDue(due.Add(time.Hour)); len(got) != 0 {
		t.Errorf("after queueing and skipping: %v still due", got)
	}
}

// The claim of a channel sent at once creates its item: the same item the
// relay's CreateDelivery writes (kind, keys, identity, the notification's
// fields, expiry), and of concurrent claims exactly one creates it.
func TestClaimCreatesTheSameItem(t *testing.T) {
	s, db, clock := newStore(t)
	table := stacktest.Emulators(t).Resources.Table
	ctx := context.Background()
	base := &domain.Delivery{UserID: "u-1", Priority: domain.PriorityNormal, Caller: "svc", Type: "reservation.approved", CampaignID: "c-1", ResourceID: "r-1"}

	created := *base
	created.NotificationID, created.Channel, created.Status, created.UpdatedAt = uniq(t), domain.ChannelEmail, domain.StatusSending, clock.Now()
	created.LeaseUntil, created.Attempts = clock.Now().Add(time.Minute), 1
	if _, err := s.CreateDelivery(ctx, &created); err != nil {
		t.Fatal(err)
	}
	want := rawItem(t, db, table, dynamo.NotificationPK(created.NotificationID), "D#email")

	id := uniq(t)
	claim := domain.Change{To: domain.StatusSending, From: []domain.Status{domain.StatusPlanned, domain.StatusQueued, domain.StatusRetrying},
		LeaseUntil: created.LeaseUntil, IncrementAttempts: true, ReclaimExpiredLease: clock.Now(), Create: base}
	var wins, conflicts atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			_, err := s.Transition(ctx, id, domain.ChannelEmail, claim)
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, domain.ErrConflict):
				conflicts.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 || conflicts.Load() != 7 {
		t.Fatalf("claims: %d won, %d conflicted; want exactly one", wins.Load(), conflicts.Load())
	}
	got := rawItem(t, db, table, dynamo.NotificationPK(id), "D#email")
	for name, v := range want {
		switch name {
		case "pk", "notificationId":
			continue
		}
		if !reflect.DeepEqual(got[name], v) {
			t.Errorf("claimed item %s = %#v, want %#v (as CreateDelivery writes it)", name, got[name], v)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("claimed item has %s, which CreateDelivery does not write", name)
		}
	}
	if ttl := numAttr(t, got, "ttl"); ttl != fmt.Sprint(clock.Now().Add(dynamo.DefaultRetention).Unix()) {
		t.Errorf("ttl %s, want the retention from the claim", ttl)
	}
}
