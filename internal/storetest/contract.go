package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

// The contract: what the handlers rely on from the store, run by every
// implementation's own test — the DynamoDB adapter on DynamoDB Local
// (internal/dynamo) and each handler package's fake — with a constructor of
// a fresh harness. A fake that answers differently from the adapter fails
// here, in its own package's tests.

// Transitioner is the delivery store the handlers transition through.
type Transitioner interface {
	Transition(ctx context.Context, id string, ch domain.Channel, c domain.Change) (*domain.Delivery, error)
}

// DeliveryHarness is one implementation under the delivery contract.
type DeliveryHarness struct {
	Store Transitioner
	// Seed stores d as it is (any state), as a test's setup does.
	Seed func(t testing.TB, d domain.Delivery)
	// Get reads a stored delivery back; ok is false when there is none.
	Get func(t testing.TB, id string, ch domain.Channel) (d domain.Delivery, ok bool)
	// Create is the store's CreateDelivery, for implementations that create
	// deliveries (the relay's); nil skips the idempotent-create checks.
	Create func(ctx context.Context, d *domain.Delivery) (*domain.Delivery, error)
}

// NotificationHarness is one implementation under the notification
// contract; nil functions skip the checks that need them.
type NotificationHarness struct {
	// Create is CreateNotification: create-if-absent.
	Create func(ctx context.Context, n *domain.Notification) (*domain.Notification, error)
	// Get is GetNotificationWithDeliveries.
	Get func(ctx context.Context, id string) (*domain.Notification, []domain.Delivery, error)
	// Cancel is CancelNotification.
	Cancel func(ctx context.Context, id, caller string) (*domain.Notification, error)
}

// Statuses are every delivery status.
var Statuses = []domain.Status{
	domain.StatusPlanned, domain.StatusQueued, domain.StatusSending, domain.StatusSent, domain.StatusRetrying, domain.StatusDeferred,
	domain.StatusSkipped, domain.StatusDropped, domain.StatusFailed, domain.StatusDelivered, domain.StatusBounced, domain.StatusComplained,
}

var seq atomic.Int64

// runID keeps this run's ids apart from an earlier run's on a shared table.
var runID = time.Now().UnixNano() % 1e9

func newID(prefix string) string { return fmt.Sprintf("ct%d-%s-%d", runID, prefix, seq.Add(1)) }

// seeded is the delivery the suite seeds: stamped long ago (so a
// transition's UpdatedAt is later on any store clock), due or leased as its
// status needs.
var seededAt = time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)

func seeded(status domain.Status) domain.Delivery {
	d := domain.Delivery{NotificationID: newID("d"), Channel: domain.ChannelEmail, UserID: "u-contract", Priority: domain.PriorityNormal,
		Status: status, UpdatedAt: seededAt, Attempts: 1}
	switch status {
	case domain.StatusDeferred:
		d.DueAt = seededAt.Add(time.Hour)
	case domain.StatusSending:
		d.LeaseUntil = seededAt.Add(time.Minute)
	}
	return d
}

// change is the smallest valid change to status.
func change(to domain.Status) domain.Change {
	c := domain.Change{To: to}
	switch to {
	case domain.StatusDeferred:
		c.DueAt, c.Reason = seededAt.Add(2*time.Hour), domain.ReasonQuietHours
	case domain.StatusSending:
		c.LeaseUntil = seededAt.Add(5 * time.Minute)
	}
	return c
}

// edge finds a (from, to) pair with ok == CanTransition(from, to) and to
// in tos (any to when tos is empty).
func edge(ok bool, tos ...domain.Status) (domain.Status, domain.Status) {
	for _, to := range Statuses {
		if len(tos) > 0 && !slices.Contains(tos, to) {
			continue
		}
		for _, from := range Statuses {
			if domain.CanTransition(from, to) == ok {
				return from, to
			}
		}
	}
	panic("no such edge")
}

// DeliveryContract runs the delivery contract against the harnesses
// newHarness returns (one per subtest).
func DeliveryContract(t *testing.T, newHarness func(t *testing.T) DeliveryHarness) {
	ctx := context.Background()
	// unchanged fails t unless the stored delivery is still want.
	unchanged := func(t *testing.T, h DeliveryHarness, want domain.Delivery) {
		t.Helper()
		got, ok := h.Get(t, want.NotificationID, want.Channel)
		if !ok || got.Status != want.Status || got.Attempts != want.Attempts || !got.UpdatedAt.Equal(want.UpdatedAt) {
			t.Errorf("stored %+v (found %v), want it unchanged: %+v", got, ok, want)
		}
	}

	t.Run("EmptyFromMeansEverySourceOfTo", func(t *testing.T) {
		h := newHarness(t)
		for _, to := range Statuses {
			for _, from := range Statuses {
				d := seeded(from)
				h.Seed(t, d)
				got, err := h.Store.Transition(ctx, d.NotificationID, d.Channel, change(to))
				if domain.CanTransition(from, to) {
					if err != nil || got == nil || got.Status != to {
						t.Errorf("%s→%s with empty From = %+v, %v; want the transition", from, to, got, err)
					}
					continue
				}
				if !errors.Is(err, domain.ErrConflict) {
					t.Errorf("%s→%s with empty From: err %v, want domain.ErrConflict", from, to, err)
				}
				if got == nil || got.Status != from {
					t.Errorf("%s→%s with empty From returned %+v, want the current delivery", from, to, got)
				}
				unchanged(t, h, d)
			}
		}
	})

	t.Run("ExplicitFromRestrictsTheSources", func(t *testing.T) {
		h := newHarness(t)
		to := domain.StatusSending
		sources := domain.SourcesOf(to)
		if len(sources) < 2 {
			t.Fatalf("sources of %s = %v, the test needs two", to, sources)
		}
		allowed, other := sources[0], sources[1]
		d := seeded(other)
		h.Seed(t, d)
		c := change(to)
		c.From = []domain.Status{allowed}
		got, err := h.Store.Transition(ctx, d.NotificationID, d.Channel, c)
		if !errors.Is(err, domain.ErrConflict) || got == nil || got.Status != other {
			t.Errorf("%s→%s with From %v = %+v, %v; want domain.ErrConflict and the current delivery", other, to, c.From, got, err)
		}
		unchanged(t, h, d)
		d2 := seeded(allowed)
		h.Seed(t, d2)
		if got, err := h.Store.Transition(ctx, d2.NotificationID, d2.Channel, c); err != nil || got.Status != to {
			t.Errorf("%s→%s with From %v = %+v, %v; want the transition", allowed, to, c.From, got, err)
		}
	})

	t.Run("ForbiddenEdgeIsInvalidTransition", func(t *testing.T) {
		h := newHarness(t)
		from, to := edge(false)
		d := seeded(from)
		h.Seed(t, d)
		c := change(to)
		c.From = []domain.Status{from}
		_, err := h.Store.Transition(ctx, d.NotificationID, d.Channel, c)
		var inv domain.ErrInvalidTransition
		if !errors.As(err, &inv) || inv.From != from || inv.To != to {
			t.Errorf("%s→%s: err %v, want domain.ErrInvalidTransition{%s %s}", from, to, err, from, to)
		}
		unchanged(t, h, d)
	})

	t.Run("MissingDeliveryIsConflict", func(t *testing.T) {
		h := newHarness(t)
		got, err := h.Store.Transition(ctx, newID("missing"), domain.ChannelEmail, change(domain.StatusDropped))
		if !errors.Is(err, domain.ErrConflict) || got != nil {
			t.Errorf("transition of a missing delivery = %+v, %v; want nil, domain.ErrConflict", got, err)
		}
		if _, ok := h.Get(t, newID("missing"), domain.ChannelEmail); ok {
			t.Error("a failed transition created a delivery")
		}
	})

	t.Run("SuccessStampsAndReturnsTheNewState", func(t *testing.T) {
		h := newHarness(t)
		d := seeded(domain.StatusQueued)
		d.LastError = "earlier"
		h.Seed(t, d)
		c := domain.Change{To: domain.StatusDropped, Reason: domain.ReasonCancelled}
		got, err := h.Store.Transition(ctx, d.NotificationID, d.Channel, c)
		if err != nil {
			t.Fatalf("queued→dropped: %v", err)
		}
		if got.Status != domain.StatusDropped || got.Reason != domain.ReasonCancelled || got.UserID != d.UserID ||
			got.Priority != d.Priority || got.Attempts != d.Attempts || got.LastError != "earlier" || !got.UpdatedAt.After(d.UpdatedAt) {
			t.Errorf("returned %+v, want dropped/cancelled, the other fields kept and UpdatedAt later than %v", got, d.UpdatedAt)
		}
		if stored, _ := h.Get(t, d.NotificationID, d.Channel); stored.Status != got.Status || stored.Reason != got.Reason || !stored.UpdatedAt.Equal(got.UpdatedAt) {
			t.Errorf("stored %+v, returned %+v", stored, got)
		}
		// A change without a reason clears it.
		d2 := seeded(domain.StatusDeferred)
		d2.Reason = domain.ReasonQuietHours
		h.Seed(t, d2)
		if got, err := h.Store.Transition(ctx, d2.NotificationID, d2.Channel, domain.Change{To: domain.StatusQueued}); err != nil || got.Reason != "" {
			t.Errorf("deferred→queued without a reason = %+v, %v; want the reason cleared", got, err)
		}
	})

	t.Run("DueTime", func(t *testing.T) {
		h := newHarness(t)
		d := seeded(domain.StatusPlanned)
		h.Seed(t, d)
		if _, err := h.Store.Transition(ctx, d.NotificationID, d.Channel, domain.Change{To: domain.StatusDeferred, Reason: domain.ReasonQuietHours}); err == nil || errors.Is(err, domain.ErrConflict) {
			t.Errorf("deferring without a due time: err %v, want a (non-conflict) error", err)
		}
		unchanged(t, h, d)
		due := seededAt.Add(3 * time.Hour)
		got, err := h.Store.Transition(ctx, d.NotificationID, d.Channel, domain.Change{To: domain.StatusDeferred, Reason: domain.ReasonQuietHours, DueAt: due})
		if err != nil || !got.DueAt.Equal(due) {
			t.Fatalf("planned→deferred = %+v, %v; want due %v", got, err, due)
		}
		// KeepDue leaves it (a release between its steps).
		if got, err = h.Store.Transition(ctx, d.NotificationID, d.Channel, domain.Change{To: domain.StatusQueued, From: []domain.Status{domain.StatusDeferred}, KeepDue: true}); err != nil || !got.DueAt.Equal(due) {
			t.Errorf("deferred→queued with KeepDue = %+v, %v; want due %v kept", got, err, due)
		}
		// Without it, leaving deferred clears it — except to dropped or
		// skipped, which keep when it was due.
		for _, to := range []domain.Status{domain.StatusQueued, domain.StatusDropped, domain.StatusSkipped} {
			if !domain.CanTransition(domain.StatusDeferred, to) {
				continue
			}
			d := seeded(domain.StatusDeferred)
			h.Seed(t, d)
			got, err := h.Store.Transition(ctx, d.NotificationID, d.Channel, domain.Change{To: to, From: []domain.Status{domain.StatusDeferred}})
			keep := to != domain.StatusQueued
			if err != nil || got.DueAt.IsZero() == keep || (keep && !got.DueAt.Equal(d.DueAt)) {
				t.Errorf("deferred→%s = %+v, %v; want due kept: %v", to, got, err, keep)
			}
		}
	})

	t.Run("ClaimUnderLease", func(t *testing.T) {
		h := newHarness(t)
		d := seeded(domain.StatusQueued)
		d.Attempts = 0
		h.Seed(t, d)
		lease := seededAt.Add(10 * time.Minute)
		claim := domain.Change{To: domain.StatusSending, From: []domain.Status{domain.StatusQueued, domain.StatusRetrying}, LeaseUntil: lease, LeaseHolder: "msg-1", IncrementAttempts: true}
		got, err := h.Store.Transition(ctx, d.NotificationID, d.Channel, claim)
		if err != nil || got.Status != domain.StatusSending || !got.LeaseUntil.Equal(lease) || got.LeaseHolder != "msg-1" || got.Attempts != 1 {
			t.Fatalf("claim = %+v, %v; want sending, lease %v held by msg-1, attempt 1", got, err, lease)
		}
		claimed, _ := h.Get(t, d.NotificationID, d.Channel)
		// A second claim loses, also with a reclaim while the lease holds;
		// the refusal names the lease's holder.
		second := claim
		second.LeaseHolder = "msg-2"
		if got, err := h.Store.Transition(ctx, d.NotificationID, d.Channel, second); !errors.Is(err, domain.ErrConflict) || got == nil || got.Status != domain.StatusSending || got.LeaseHolder != "msg-1" {
			t.Errorf("second claim = %+v, %v; want domain.ErrConflict and the delivery claimed by msg-1", got, err)
		}
		early := claim
		early.ReclaimExpiredLease = lease.Add(-time.Second)
		if _, err := h.Store.Transition(ctx, d.NotificationID, d.Channel, early); !errors.Is(err, domain.ErrConflict) {
			t.Errorf("reclaim before the lease ended: err %v, want domain.ErrConflict", err)
		}
		unchanged(t, h, claimed)
		// Once the lease ended, a reclaim takes it over.
		late := second
		late.ReclaimExpiredLease, late.LeaseUntil = lease.Add(time.Second), lease.Add(10*time.Minute)
		got, err = h.Store.Transition(ctx, d.NotificationID, d.Channel, late)
		if err != nil || got.Status != domain.StatusSending || !got.LeaseUntil.Equal(late.LeaseUntil) || got.LeaseHolder != "msg-2" || got.Attempts != 2 {
			t.Fatalf("reclaim after the lease = %+v, %v; want sending, lease %v held by msg-2, attempt 2", got, err, late.LeaseUntil)
		}
		// Giving a claim back refunds its attempt and ends the lease.
		// An attempt whose outcome is unknown records its provider and pins it.
		got, err = h.Store.Transition(ctx, d.NotificationID, d.Channel, domain.Change{To: domain.StatusRetrying, From: []domain.Status{domain.StatusSending},
			LastError: "unknown_outcome", Provider: "ses:eu-west-1", PinProvider: true})
		if err != nil || got.Provider != "ses:eu-west-1" || got.PinnedProvider != "ses:eu-west-1" {
			t.Fatalf("sending→retrying with an unknown outcome = %+v, %v; want provider and pinned provider ses:eu-west-1", got, err)
		}
		if _, err := h.Store.Transition(ctx, d.NotificationID, d.Channel, late); err != nil {
			t.Fatalf("claim from retrying: %v", err)
		}
		got, err = h.Store.Transition(ctx, d.NotificationID, d.Channel, domain.Change{To: domain.StatusRetrying, From: []domain.Status{domain.StatusSending}, RefundAttempt: true, LastError: "quota"})
		if err != nil || got.Attempts != 2 || !got.LeaseUntil.IsZero() || got.LeaseHolder != "" || got.LastError != "quota" {
			t.Fatalf("sending→retrying with a refund = %+v, %v; want attempt 1, no lease, the error recorded", got, err)
		}
		// The send ends the lease and records the provider's id.
		if _, err := h.Store.Transition(ctx, d.NotificationID, d.Channel, claim); err != nil {
			t.Fatalf("claim from retrying: %v", err)
		}
		got, err = h.Store.Transition(ctx, d.NotificationID, d.Channel, domain.Change{To: domain.StatusSent, From: []domain.Status{domain.StatusSending}, ProviderMessageID: "pm-1", Provider: "ses:eu-west-1"})
		if err != nil || got.Status != domain.StatusSent || !got.LeaseUntil.IsZero() || got.LeaseHolder != "" || got.ProviderMessageID != "pm-1" || got.Attempts != 3 ||
			got.Provider != "ses:eu-west-1" || got.PinnedProvider != "ses:eu-west-1" {
			t.Errorf("sending→sent = %+v, %v; want sent, no lease nor holder, provider id pm-1 from ses:eu-west-1 (still pinned), attempt 3", got, err)
		}
		// A sending delivery without a lease is never reclaimed.
		nl := seeded(domain.StatusSending)
		nl.LeaseUntil = time.Time{}
		h.Seed(t, nl)
		if _, err := h.Store.Transition(ctx, nl.NotificationID, nl.Channel, late); !errors.Is(err, domain.ErrConflict) {
			t.Errorf("reclaim of a sending delivery without a lease: err %v, want domain.ErrConflict", err)
		}
	})

	t.Run("ClaimCreatesTheDelivery", func(t *testing.T) {
		// A channel sent at once has no item until the worker's claim (or
		// its recheck's outcome) creates it: absent counts as queued.
		h := newHarness(t)
		id := newID("claim")
		base := &domain.Delivery{UserID: "u-contract", Priority: domain.PriorityLow, Caller: "svc", Type: "comment.created", CampaignID: "cmp-1", ResourceID: "res-1"}
		lease := seededAt.Add(10 * time.Minute)
		claim := domain.Change{To: domain.StatusSending, From: []domain.Status{domain.StatusPlanned, domain.StatusQueued, domain.StatusRetrying},
			LeaseUntil: lease, IncrementAttempts: true, Create: base}
		got, err := h.Store.Transition(ctx, id, domain.ChannelPush, claim)
		if err != nil || got == nil || got.Status != domain.StatusSending || got.Attempts != 1 || !got.LeaseUntil.Equal(lease) || got.UpdatedAt.IsZero() {
			t.Fatalf("claim of a missing delivery = %+v, %v; want it created sending, attempt 1, lease %v", got, err, lease)
		}
		stored, ok := h.Get(t, id, domain.ChannelPush)
		if !ok || stored.Status != domain.StatusSending || stored.NotificationID != id || stored.Channel != domain.ChannelPush ||
			stored.UserID != base.UserID || stored.Priority != base.Priority || stored.Caller != base.Caller || stored.Type != base.Type ||
			stored.CampaignID != base.CampaignID || stored.ResourceID != base.ResourceID {
			t.Fatalf("stored %+v (found %v); want the claimed delivery with the notification's fields %+v", stored, ok, base)
		}
		// Exactly once: a second claim (a duplicate message) loses while the
		// lease holds, and a crashed worker's claim is taken over after it.
		if got, err := h.Store.Transition(ctx, id, domain.ChannelPush, claim); !errors.Is(err, domain.ErrConflict) || got == nil || got.Status != domain.StatusSending {
			t.Errorf("second claim = %+v, %v; want domain.ErrConflict and the claimed delivery", got, err)
		}
		unchanged(t, h, stored)
		late := claim
		late.ReclaimExpiredLease, late.LeaseUntil = lease.Add(time.Second), lease.Add(10*time.Minute)
		if got, err := h.Store.Transition(ctx, id, domain.ChannelPush, late); err != nil || got.Attempts != 2 || got.Caller != base.Caller {
			t.Errorf("reclaim after the lease = %+v, %v; want attempt 2, fields kept", got, err)
		}
		// A terminal delivery is never created over: the claim is refused.
		if _, err := h.Store.Transition(ctx, id, domain.ChannelPush, domain.Change{To: domain.StatusSent, From: []domain.Status{domain.StatusSending}}); err != nil {
			t.Fatal(err)
		}
		sent, _ := h.Get(t, id, domain.ChannelPush)
		if got, err := h.Store.Transition(ctx, id, domain.ChannelPush, claim); !errors.Is(err, domain.ErrConflict) || got == nil || got.Status != domain.StatusSent {
			t.Errorf("claim of a sent delivery = %+v, %v; want domain.ErrConflict and the sent delivery", got, err)
		}
		unchanged(t, h, sent)

		// The recheck's outcome creates the delivery in it, without an attempt.
		id2 := newID("claim")
		got, err = h.Store.Transition(ctx, id2, domain.ChannelEmail, domain.Change{To: domain.StatusDropped, From: claim.From, Reason: domain.ReasonExpired, Create: base})
		if err != nil || got.Status != domain.StatusDropped || got.Reason != domain.ReasonExpired || got.Attempts != 0 || got.Caller != base.Caller {
			t.Errorf("recheck outcome of a missing delivery = %+v, %v; want it created dropped: expired, no attempt", got, err)
		}
		// An existing delivery keeps its own fields: Create only fills a new one.
		d := seeded(domain.StatusQueued)
		d.Caller, d.Type = "first", "first.type"
		h.Seed(t, d)
		if got, err := h.Store.Transition(ctx, d.NotificationID, d.Channel, claim); err != nil || got.Caller != "first" || got.Type != "first.type" || got.UserID != d.UserID || got.Attempts != d.Attempts+1 {
			t.Errorf("claim of an existing delivery = %+v, %v; want its own fields kept and one more attempt", got, err)
		}
		// A change a queued delivery cannot make creates nothing.
		id3 := newID("claim")
		_, err = h.Store.Transition(ctx, id3, domain.ChannelEmail, domain.Change{To: domain.StatusSent, Create: base})
		var inv domain.ErrInvalidTransition
		if !errors.As(err, &inv) || inv.From != domain.Absent {
			t.Errorf("creating a delivery sent: err %v, want domain.ErrInvalidTransition from %s", err, domain.Absent)
		}
		if _, ok := h.Get(t, id3, domain.ChannelEmail); ok {
			t.Error("a refused change created a delivery")
		}
	})

	t.Run("CancelledItemBeatsTheClaim", func(t *testing.T) {
		// The cancel writes dropped: cancelled for a channel without an item
		// (a conditional create); a worker that read the notification before
		// the cancel then loses its claim. A claim that won first makes the
		// cancel's create lose instead, and returns the claimed delivery.
		h := newHarness(t)
		if h.Create == nil {
			t.Skip("the store creates no deliveries")
		}
		base := &domain.Delivery{UserID: "u-contract", Priority: domain.PriorityNormal, Caller: "svc", Type: "comment.created"}
		claim := domain.Change{To: domain.StatusSending, From: []domain.Status{domain.StatusPlanned, domain.StatusQueued, domain.StatusRetrying},
			LeaseUntil: seededAt.Add(time.Minute), IncrementAttempts: true, ReclaimExpiredLease: seededAt, Create: base}
		tombstone := func(id string) *domain.Delivery {
			d := *base
			d.NotificationID, d.Channel, d.Status, d.Reason, d.UpdatedAt = id, domain.ChannelEmail, domain.StatusDropped, domain.ReasonCancelled, seededAt
			return &d
		}

		id := newID("cancel")
		if _, err := h.Create(ctx, tombstone(id)); err != nil {
			t.Fatalf("cancel's create = %v", err)
		}
		got, err := h.Store.Transition(ctx, id, domain.ChannelEmail, claim)
		if !errors.Is(err, domain.ErrConflict) || got == nil || got.Status != domain.StatusDropped || got.Reason != domain.ReasonCancelled {
			t.Errorf("claim after the cancel = %+v, %v; want domain.ErrConflict and dropped: cancelled", got, err)
		}
		unchanged(t, h, *tombstone(id))

		id = newID("cancel")
		if _, err := h.Store.Transition(ctx, id, domain.ChannelEmail, claim); err != nil {
			t.Fatalf("claim = %v", err)
		}
		got, err = h.Create(ctx, tombstone(id))
		if !errors.Is(err, domain.ErrConflict) || got == nil || got.Status != domain.StatusSending {
			t.Errorf("cancel's create after the claim = %+v, %v; want domain.ErrConflict and the sending delivery", got, err)
		}
	})

	t.Run("CreateIsIdempotent", func(t *testing.T) {
		h := newHarness(t)
		if h.Create == nil {
			t.Skip("the store creates no deliveries")
		}
		d := seeded(domain.StatusQueued)
		if got, err := h.Create(ctx, &d); err != nil || got.Status != domain.StatusQueued {
			t.Fatalf("create = %+v, %v", got, err)
		}
		again := d
		again.Status, again.Reason = domain.StatusSkipped, domain.ReasonOptedOut
		got, err := h.Create(ctx, &again)
		if !errors.Is(err, domain.ErrConflict) || got == nil || got.Status != domain.StatusQueued {
			t.Errorf("second create = %+v, %v; want domain.ErrConflict and the existing (queued) delivery", got, err)
		}
		unchanged(t, h, d)
	})
}

// NotificationContract runs the notification contract against the
// harnesses newHarness returns.
func NotificationContract(t *testing.T, newHarness func(t *testing.T) NotificationHarness) {
	ctx := context.Background()
	notification := func() *domain.Notification {
		id := newID("n")
		return &domain.Notification{ID: id, Caller: "svc", Type: "comment.created", Priority: domain.PriorityNormal,
			Recipient: domain.Recipient{UserID: "u-" + id, Email: "u@example.com"}, CreatedAt: seededAt, Status: domain.NotificationAccepted,
			Data: map[string]any{"title": "hello"}}
	}
	t.Run("CreateIsIdempotent", func(t *testing.T) {
		h := newHarness(t)
		if h.Create == nil {
			t.Skip("the store creates no notifications")
		}
		n := notification()
		if got, err := h.Create(ctx, n); err != nil || got.ID != n.ID {
			t.Fatalf("create = %+v, %v", got, err)
		}
		again := *n
		again.Type = "other.type"
		got, err := h.Create(ctx, &again)
		if !errors.Is(err, domain.ErrConflict) || got == nil || got.Type != n.Type {
			t.Errorf("second create = %+v, %v; want domain.ErrConflict and the existing notification", got, err)
		}
		if h.Get != nil {
			if stored, _, err := h.Get(ctx, n.ID); err != nil || stored.Type != n.Type {
				t.Errorf("stored %+v, %v; want the first notification", stored, err)
			}
		}
	})
	t.Run("MissingIsNotFound", func(t *testing.T) {
		h := newHarness(t)
		if h.Get == nil {
			t.Skip("the store reads no notifications")
		}
		if n, ds, err := h.Get(ctx, newID("missing")); !errors.Is(err, domain.ErrNotFound) || n != nil || ds != nil {
			t.Errorf("get of a missing notification = %+v, %v, %v; want domain.ErrNotFound", n, ds, err)
		}
	})
	t.Run("CancelIsTheCallersAndIdempotent", func(t *testing.T) {
		h := newHarness(t)
		if h.Cancel == nil || h.Create == nil {
			t.Skip("the store cancels no notifications")
		}
		if _, err := h.Cancel(ctx, newID("missing"), "svc"); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("cancel of a missing notification: err %v, want domain.ErrNotFound", err)
		}
		n := notification()
		if _, err := h.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Cancel(ctx, n.ID, "someone-else"); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("cancel by another caller: err %v, want domain.ErrNotFound", err)
		}
		first, err := h.Cancel(ctx, n.ID, n.Caller)
		if err != nil || first.Status != domain.NotificationCancelled || first.CancelledAt.IsZero() {
			t.Fatalf("cancel = %+v, %v; want cancelled with a time", first, err)
		}
		second, err := h.Cancel(ctx, n.ID, n.Caller)
		if err != nil || second.Status != domain.NotificationCancelled || !second.CancelledAt.Equal(first.CancelledAt) {
			t.Errorf("second cancel = %+v, %v; want the first cancellation (at %v)", second, err, first.CancelledAt)
		}
	})
}
