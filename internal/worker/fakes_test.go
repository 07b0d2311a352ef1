package worker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/domain"
)

// fakeStore is an in-memory table with the conditional semantics of
// dynamo.Store.Transition: the update happens only from an allowed state (or
// from sending with an expired lease when ReclaimExpiredLease is set).
type fakeStore struct {
	mu            sync.Mutex
	notifications map[string]*domain.Notification
	deliveries    map[string]*domain.Delivery // id/channel
	profiles      map[string]*domain.RecipientProfile
	loadErr       error
	transitions   []domain.Change
}

func newFakeStore() *fakeStore {
	return &fakeStore{notifications: map[string]*domain.Notification{}, deliveries: map[string]*domain.Delivery{}, profiles: map[string]*domain.RecipientProfile{}}
}

func (s *fakeStore) put(n *domain.Notification, ds ...domain.Delivery) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notifications[n.ID] = n
	for _, d := range ds {
		d.NotificationID = n.ID
		s.deliveries[n.ID+"/"+string(d.Channel)] = &d
	}
}

func (s *fakeStore) delivery(id string, c domain.Channel) domain.Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.deliveries[id+"/"+string(c)]
}

func (s *fakeStore) LoadWork(_ context.Context, wm domain.WorkMessage) (*domain.Notification, *domain.RecipientProfile, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loadErr != nil {
		return nil, nil, s.loadErr
	}
	n, ok := s.notifications[wm.NotificationID]
	if !ok {
		return nil, nil, fmt.Errorf("notification %s: %w", wm.NotificationID, domain.ErrNotFound)
	}
	cp := *n
	p, ok := s.profiles[n.Recipient.UserID]
	if !ok {
		p = &domain.RecipientProfile{Preferences: domain.Preferences{}}
	}
	return &cp, p, nil
}

func (s *fakeStore) Transition(_ context.Context, id string, ch domain.Channel, c domain.Change) (*domain.Delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.transitions = append(s.transitions, c)
	d, ok := s.deliveries[id+"/"+string(ch)]
	if !ok {
		return nil, fmt.Errorf("delivery %s/%s: %w", id, ch, domain.ErrConflict)
	}
	from := c.From
	if len(from) == 0 {
		from = domain.SourcesOf(c.To)
	}
	for _, f := range from {
		if !domain.CanTransition(f, c.To) {
			return nil, domain.ErrInvalidTransition{From: f, To: c.To}
		}
	}
	allowed := slices.Contains(from, d.Status) ||
		(!c.ReclaimExpiredLease.IsZero() && d.Status == domain.StatusSending && d.LeaseUntil.Before(c.ReclaimExpiredLease))
	if !allowed {
		cp := *d
		return &cp, fmt.Errorf("delivery %s/%s to %s: %w", id, ch, c.To, domain.ErrConflict)
	}
	d.Status, d.Reason = c.To, c.Reason
	d.LeaseUntil = time.Time{}
	if c.To == domain.StatusSending {
		d.LeaseUntil = c.LeaseUntil
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
	d.SentTargets = append(slices.Clone(d.SentTargets), c.AddSentTargets...)
	cp := *d
	return &cp, nil
}

// visibilityCall is one SetVisibility call.
type visibilityCall struct {
	receipt string
	timeout time.Duration
}

type fakeVisibility struct {
	mu    sync.Mutex
	calls []visibilityCall
}

func (v *fakeVisibility) SetVisibility(_ context.Context, _ string, receipt string, timeout time.Duration) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.calls = append(v.calls, visibilityCall{receipt, timeout})
	return nil
}

func (v *fakeVisibility) all() []visibilityCall {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.calls)
}

// fakeProvider answers Send with scripted errors, then success.
type fakeProvider struct {
	channel domain.Channel
	mu      sync.Mutex
	errs    []error
	sent    []*channel.Message
	// during runs inside Send (e.g. to change the store mid-send).
	during func()
}

func (p *fakeProvider) Channel() domain.Channel { return p.channel }

func (p *fakeProvider) Send(_ context.Context, m *channel.Message) (string, error) {
	if p.during != nil {
		p.during()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.errs) > 0 {
		err := p.errs[0]
		p.errs = p.errs[1:]
		if err != nil {
			return "", err
		}
	}
	p.sent = append(p.sent, m)
	return fmt.Sprintf("pmid-%d", len(p.sent)), nil
}

func (p *fakeProvider) sends() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.sent)
}
