package worker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/storetest"
)

// fakeStore is an in-memory table with the conditional semantics of
// dynamo.Notifications.Transition: the update happens only from an allowed state (or
// from sending with an expired lease when ReclaimExpiredLease is set).
type fakeStore struct {
	mu            sync.Mutex
	notifications map[string]*domain.Notification
	deliveries    *storetest.MemDeliveries
	profiles      map[string]*domain.RecipientProfile
	loadErr       error
	transitions   []domain.Change
	// afterLoad runs after LoadWork has read the notification (e.g. a
	// cancel landing between the worker's read and its claim).
	afterLoad func()
	// failTransition, when it answers an error for a change, fails that
	// write without applying it (a throttled or unreachable table).
	failTransition func(domain.Change) error
}

func newFakeStore() *fakeStore {
	return &fakeStore{notifications: map[string]*domain.Notification{}, deliveries: storetest.NewMemDeliveries(nil), profiles: map[string]*domain.RecipientProfile{}}
}

func (s *fakeStore) put(n *domain.Notification, ds ...domain.Delivery) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notifications[n.ID] = n
	for _, d := range ds {
		d.NotificationID = n.ID
		s.deliveries.Put(d)
	}
}

func (s *fakeStore) delivery(id string, c domain.Channel) domain.Delivery {
	d, _ := s.deliveries.Get(id, c)
	return d
}

// edit changes a stored delivery behind the handler's back.
func (s *fakeStore) edit(id string, c domain.Channel, f func(*domain.Delivery)) {
	s.deliveries.Edit(id, c, f)
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
	if s.afterLoad != nil {
		s.mu.Unlock()
		s.afterLoad()
		s.mu.Lock()
	}
	return &cp, p, nil
}

// Transition records the change and applies it to the shared in-memory
// table (storetest.MemDeliveries, which runs the store contract with the
// DynamoDB adapter).
func (s *fakeStore) Transition(ctx context.Context, id string, ch domain.Channel, c domain.Change) (*domain.Delivery, error) {
	s.mu.Lock()
	s.transitions = append(s.transitions, c)
	fail := s.failTransition
	s.mu.Unlock()
	if fail != nil {
		if err := fail(c); err != nil {
			return nil, err
		}
	}
	return s.deliveries.Transition(ctx, id, ch, c)
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
