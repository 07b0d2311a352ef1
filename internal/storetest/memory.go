// Package storetest holds the store contract the handlers rely on — one
// suite every implementation runs (the DynamoDB adapter on DynamoDB Local,
// and each package's in-memory fake) — and MemDeliveries, the one in-memory
// delivery table the fakes share, so no fake re-implements Transition.
package storetest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

// MemDeliveries is an in-memory delivery table with the conditional
// semantics of dynamo.Notifications: create-if-absent, and transitions conditional on
// the current state (an empty From meaning every state the state machine
// allows to reach To), with claims under a lease. It is safe for concurrent
// use. The zero value is not usable: call NewMemDeliveries.
type MemDeliveries struct {
	mu  sync.Mutex
	now func() time.Time
	m   map[domain.DeliveryKey]domain.Delivery
}

// NewMemDeliveries returns an empty table whose transitions stamp UpdatedAt
// with now (time.Now when nil), as the adapter stamps its clock.
func NewMemDeliveries(now func() time.Time) *MemDeliveries {
	if now == nil {
		now = time.Now
	}
	return &MemDeliveries{now: now, m: map[domain.DeliveryKey]domain.Delivery{}}
}

func keyOf(id string, ch domain.Channel) domain.DeliveryKey {
	return domain.DeliveryKey{NotificationID: id, Channel: ch}
}

// Put stores d as is (a test's seed), replacing any delivery of its key.
func (m *MemDeliveries) Put(d domain.Delivery) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.m[keyOf(d.NotificationID, d.Channel)] = d
}

// Get returns the stored delivery.
func (m *MemDeliveries) Get(id string, ch domain.Channel) (domain.Delivery, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.m[keyOf(id, ch)]
	return d, ok
}

// Edit changes the stored delivery in place (a test reaching behind the
// handler's back); it reports whether the delivery exists.
func (m *MemDeliveries) Edit(id string, ch domain.Channel, f func(*domain.Delivery)) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.m[keyOf(id, ch)]
	if ok {
		f(&d)
		m.m[keyOf(id, ch)] = d
	}
	return ok
}

// Of lists the deliveries of one notification in the table's order (by
// channel name, as the sort key D#<channel> orders them).
func (m *MemDeliveries) Of(id string) []domain.Delivery {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []domain.Delivery
	for k, d := range m.m {
		if k.NotificationID == id {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b domain.Delivery) int {
		return cmp.Compare(a.Channel, b.Channel)
	})
	return out
}

// All lists every delivery (in no particular order).
func (m *MemDeliveries) All() []domain.Delivery {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]domain.Delivery, 0, len(m.m))
	for _, d := range m.m {
		out = append(out, d)
	}
	return out
}

// Len is the number of stored deliveries.
func (m *MemDeliveries) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.m)
}

// CreateDelivery writes d unless a delivery of its key exists; then nothing
// is written and the existing one is returned with domain.ErrConflict.
func (m *MemDeliveries) CreateDelivery(_ context.Context, d *domain.Delivery) (*domain.Delivery, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := keyOf(d.NotificationID, d.Channel)
	if existing, ok := m.m[k]; ok {
		return &existing, fmt.Errorf("create delivery %s/%s: %w", d.NotificationID, d.Channel, domain.ErrConflict)
	}
	stored := *d
	stored.Trail = domain.TrailAtCreation(d)
	m.m[k] = stored
	return d, nil
}

// GetDelivery reads one delivery; a missing one is domain.ErrNotFound.
func (m *MemDeliveries) GetDelivery(_ context.Context, id string, ch domain.Channel) (*domain.Delivery, error) {
	d, ok := m.Get(id, ch)
	if !ok {
		return nil, fmt.Errorf("delivery %s/%s: %w", id, ch, domain.ErrNotFound)
	}
	return &d, nil
}

// Transition applies c as dynamo.Notifications.Transition does: an edge the state
// machine forbids is domain.ErrInvalidTransition; deferring needs a due
// time; the update happens only when the delivery exists and is in one of
// From (or every source of To when From is empty), or — with
// ReclaimExpiredLease — is sending under a lease that ended before then.
// A missing delivery is created by a change with Create (it counts as
// queued, domain.Absent). Otherwise it is domain.ErrConflict with the
// current delivery (nil when there is none).
func (m *MemDeliveries) Transition(_ context.Context, id string, ch domain.Channel, c domain.Change) (*domain.Delivery, error) {
	from := c.From
	if len(from) == 0 {
		from = domain.SourcesOf(c.To)
	}
	for _, f := range from {
		if !domain.CanTransition(f, c.To) {
			return nil, domain.ErrInvalidTransition{From: f, To: c.To}
		}
	}
	if c.Create != nil && !c.Creates() {
		return nil, domain.ErrInvalidTransition{From: domain.Absent, To: c.To}
	}
	if c.To == domain.StatusDeferred && c.DueAt.IsZero() {
		return nil, fmt.Errorf("transition %s/%s to deferred: due time required", id, ch)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := keyOf(id, ch)
	d, ok := m.m[k]
	switch {
	case !ok && c.Create != nil:
		// Created by the change (a claim of a channel sent at once).
		d = domain.Delivery{NotificationID: id, Channel: ch, UserID: c.Create.UserID, Priority: c.Create.Priority,
			Caller: c.Create.Caller, Type: c.Create.Type, CampaignID: c.Create.CampaignID, ResourceID: c.Create.ResourceID,
			NotificationCreatedAt: c.Create.NotificationCreatedAt}
	case !ok:
		return nil, fmt.Errorf("delivery %s/%s to %s: %w", id, ch, c.To, domain.ErrConflict)
	}
	allowed := !ok || slices.Contains(from, d.Status) ||
		(!c.ReclaimExpiredLease.IsZero() && d.Status == domain.StatusSending && !d.LeaseUntil.IsZero() && d.LeaseUntil.Before(c.ReclaimExpiredLease))
	if !allowed {
		cp := d
		return &cp, fmt.Errorf("delivery %s/%s to %s: %w", id, ch, c.To, domain.ErrConflict)
	}
	d.Status, d.Reason, d.UpdatedAt = c.To, c.Reason, m.now().UTC()
	d.Trail = domain.WithStep(d.Trail, c, d.UpdatedAt)
	switch {
	case c.To == domain.StatusDeferred:
		d.DueAt = c.DueAt
	case !c.KeepDue && c.To != domain.StatusDropped && c.To != domain.StatusSkipped:
		d.DueAt = time.Time{}
	}
	d.LeaseUntil, d.LeaseHolder = time.Time{}, ""
	if c.To == domain.StatusSending {
		d.LeaseUntil, d.LeaseHolder = c.LeaseUntil, c.LeaseHolder
	}
	if c.IncrementAttempts {
		d.Attempts++
	}
	if c.RefundAttempt {
		d.Attempts--
	}
	if c.LastError != "" {
		d.LastError = c.LastError
	}
	if c.ProviderMessageID != "" {
		d.ProviderMessageID = c.ProviderMessageID
	}
	if c.Provider != "" {
		d.Provider = c.Provider
		if c.PinProvider {
			d.PinnedProvider = c.Provider
		}
	}
	if c.DigestID != "" {
		d.DigestID = c.DigestID
	}
	// AddSentTargets is a string-set ADD in DynamoDB: a union, no repeats.
	d.SentTargets = slices.Clone(d.SentTargets)
	for _, target := range c.AddSentTargets {
		if !slices.Contains(d.SentTargets, target) {
			d.SentTargets = append(d.SentTargets, target)
		}
	}
	m.m[k] = d
	cp := d
	return &cp, nil
}
