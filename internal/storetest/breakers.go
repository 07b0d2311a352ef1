package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/failover"
)

// BreakerStore is the providers' circuit-breaker store (dynamo.Breakers):
// what the worker and herald providers use.
type BreakerStore interface {
	Breaker(ctx context.Context, provider string) (failover.Breaker, error)
	Breakers(ctx context.Context) ([]failover.Breaker, error)
	RecordFailure(ctx context.Context, provider string, now time.Time, r failover.Rules) (failover.Breaker, bool, error)
	TakeProbe(ctx context.Context, provider string, now time.Time, lease time.Duration) (bool, error)
	ProbeSucceeded(ctx context.Context, provider string) (bool, error)
	ProbeFailed(ctx context.Context, provider string, now time.Time, r failover.Rules) error
	Force(ctx context.Context, provider string, f failover.Force) (failover.Breaker, error)
}

// MemBreakers is the in-memory BreakerStore of unit tests; it runs
// BreakerContract beside dynamo.Breakers.
type MemBreakers struct {
	mu sync.Mutex
	m  map[string]failover.Breaker
}

// NewMemBreakers returns an empty store.
func NewMemBreakers() *MemBreakers { return &MemBreakers{m: map[string]failover.Breaker{}} }

// Breaker implements BreakerStore.
func (s *MemBreakers) Breaker(_ context.Context, provider string) (failover.Breaker, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.get(provider), nil
}

func (s *MemBreakers) get(provider string) failover.Breaker {
	b, ok := s.m[provider]
	if !ok {
		b.Provider = provider
	}
	return b
}

// Breakers implements BreakerStore.
func (s *MemBreakers) Breakers(context.Context) ([]failover.Breaker, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []failover.Breaker
	for _, b := range s.m {
		out = append(out, b)
	}
	return out, nil
}

// RecordFailure implements BreakerStore.
func (s *MemBreakers) RecordFailure(_ context.Context, provider string, now time.Time, r failover.Rules) (failover.Breaker, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.get(provider)
	if !b.WindowStart.IsZero() && !b.WindowStart.Before(now.Add(-r.Window)) {
		b.Failures++
	} else {
		b.Failures, b.WindowStart = 1, now
	}
	opened := r.Opens(b, now) && b.OpenUntil.IsZero()
	if opened {
		b.OpenUntil, b.OpenedAt, b.ProbeUntil = now.Add(r.OpenFor), now, time.Time{}
	}
	s.m[provider] = b
	return b, opened, nil
}

// TakeProbe implements BreakerStore.
func (s *MemBreakers) TakeProbe(_ context.Context, provider string, now time.Time, lease time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.get(provider)
	if b.OpenUntil.IsZero() || b.OpenUntil.After(now) || b.Forced != failover.ForceAuto || b.ProbeUntil.After(now) {
		return false, nil
	}
	b.ProbeUntil = now.Add(lease)
	s.m[provider] = b
	return true, nil
}

// ProbeSucceeded implements BreakerStore.
func (s *MemBreakers) ProbeSucceeded(_ context.Context, provider string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.get(provider)
	if b.OpenUntil.IsZero() {
		return false, nil
	}
	b.Failures, b.OpenUntil, b.ProbeUntil, b.WindowStart = 0, time.Time{}, time.Time{}, time.Time{}
	s.m[provider] = b
	return true, nil
}

// ProbeFailed implements BreakerStore.
func (s *MemBreakers) ProbeFailed(_ context.Context, provider string, now time.Time, r failover.Rules) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.get(provider)
	if b.OpenUntil.IsZero() {
		return nil
	}
	b.OpenUntil, b.ProbeUntil = now.Add(r.OpenFor), time.Time{}
	s.m[provider] = b
	return nil
}

// Force implements BreakerStore.
func (s *MemBreakers) Force(_ context.Context, provider string, f failover.Force) (failover.Breaker, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.get(provider)
	b.Failures, b.OpenUntil, b.ProbeUntil, b.WindowStart, b.Forced = 0, time.Time{}, time.Time{}, time.Time{}, f
	s.m[provider] = b
	return b, nil
}

// BreakerContract is what the worker and the CLI rely on from the breaker
// store; newStore returns the store under test (providers are unique per
// call, so a shared table serves every subtest).
func BreakerContract(t *testing.T, newStore func(t *testing.T) BreakerStore) {
	ctx := context.Background()
	r := failover.Rules{Threshold: 3, Window: 10 * time.Second, OpenFor: 30 * time.Second, ProbeLease: 5 * time.Second}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

	t.Run("ClosedUntilThresholdInAWindow", func(t *testing.T) {
		s, p := newStore(t), newID("ses")
		b, err := s.Breaker(ctx, p)
		if err != nil || b.State(t0) != failover.Closed || b.Failures != 0 {
			t.Fatalf("unknown provider = %+v, %v; want closed with no failures", b, err)
		}
		// Two failures, then the window passes: the count starts again.
		for i := range 2 {
			if b, opened, err := s.RecordFailure(ctx, p, t0.Add(time.Duration(i)*time.Second), r); err != nil || opened || b.Failures != i+1 {
				t.Fatalf("failure %d = %+v, opened %v, %v; want %d failures, closed", i+1, b, opened, err, i+1)
			}
		}
		later := t0.Add(20 * time.Second)
		if b, opened, err := s.RecordFailure(ctx, p, later, r); err != nil || opened || b.Failures != 1 || !b.WindowStart.Equal(later) {
			t.Fatalf("failure after the window = %+v, opened %v, %v; want a new window of 1", b, opened, err)
		}
		var opens int
		for i := 1; i <= 3; i++ {
			b, opened, err := s.RecordFailure(ctx, p, later.Add(time.Duration(i)*time.Second), r)
			if err != nil {
				t.Fatal(err)
			}
			if opened {
				opens++
				if b.State(later.Add(4*time.Second)) != failover.Open || !b.OpenUntil.Equal(later.Add(2*time.Second+r.OpenFor)) {
					t.Errorf("opened breaker = %+v; want open until %v", b, later.Add(2*time.Second+r.OpenFor))
				}
			}
		}
		if opens != 1 {
			t.Errorf("the breaker opened %d times; want once, by the failure reaching the threshold", opens)
		}
		got, err := s.Breaker(ctx, p)
		if err != nil || got.State(later.Add(10*time.Second)) != failover.Open {
			t.Errorf("read back = %+v, %v; want open", got, err)
		}
		list, err := s.Breakers(ctx)
		found := false
		for _, b := range list {
			found = found || b.Provider == p
		}
		if err != nil || !found {
			t.Errorf("Breakers = %v, %v; want %s listed", list, err, p)
		}
	})

	t.Run("OneProbeThenClose", func(t *testing.T) {
		s, p := newStore(t), newID("sms")
		for i := range 3 {
			if _, _, err := s.RecordFailure(ctx, p, t0, r); err != nil {
				t.Fatalf("failure %d: %v", i, err)
			}
		}
		if ok, err := s.TakeProbe(ctx, p, t0.Add(time.Second), r.ProbeLease); err != nil || ok {
			t.Fatalf("probe while open = %v, %v; want refused", ok, err)
		}
		half := t0.Add(r.OpenFor)
		if ok, err := s.TakeProbe(ctx, p, half, r.ProbeLease); err != nil || !ok {
			t.Fatalf("first probe when half-open = %v, %v; want taken", ok, err)
		}
		if ok, err := s.TakeProbe(ctx, p, half.Add(time.Second), r.ProbeLease); err != nil || ok {
			t.Fatalf("second probe while the first holds = %v, %v; want refused", ok, err)
		}
		// A failed probe opens it again; the next probe after OpenFor closes it.
		if err := s.ProbeFailed(ctx, p, half.Add(time.Second), r); err != nil {
			t.Fatal(err)
		}
		if b, _ := s.Breaker(ctx, p); b.State(half.Add(2*time.Second)) != failover.Open {
			t.Fatalf("after a failed probe = %+v; want open again", b)
		}
		again := half.Add(time.Second + r.OpenFor)
		if ok, err := s.TakeProbe(ctx, p, again, r.ProbeLease); err != nil || !ok {
			t.Fatalf("probe after reopening = %v, %v; want taken", ok, err)
		}
		if closed, err := s.ProbeSucceeded(ctx, p); err != nil || !closed {
			t.Fatalf("probe success = %v, %v; want closed", closed, err)
		}
		if closed, err := s.ProbeSucceeded(ctx, p); err != nil || closed {
			t.Errorf("second success = %v, %v; want nothing to close", closed, err)
		}
		if b, _ := s.Breaker(ctx, p); b.State(again) != failover.Closed || b.Failures != 0 {
			t.Errorf("after a good probe = %+v; want closed, no failures", b)
		}
	})

	t.Run("ForceWinsOverCounts", func(t *testing.T) {
		s, p := newStore(t), newID("sns")
		b, err := s.Force(ctx, p, failover.ForceOpen)
		if err != nil || b.State(t0) != failover.Open || b.Forced != failover.ForceOpen {
			t.Fatalf("force open = %+v, %v", b, err)
		}
		if ok, _ := s.TakeProbe(ctx, p, t0.Add(time.Hour), r.ProbeLease); ok {
			t.Error("a forced-open breaker gave a probe")
		}
		if b, err = s.Force(ctx, p, failover.ForceClosed); err != nil || b.State(t0) != failover.Closed {
			t.Fatalf("force closed = %+v, %v", b, err)
		}
		for range 5 {
			if _, opened, err := s.RecordFailure(ctx, p, t0, r); err != nil || opened {
				t.Fatalf("a forced-closed breaker: opened %v, %v", opened, err)
			}
		}
		if b, err = s.Force(ctx, p, failover.ForceAuto); err != nil || b.State(t0) != failover.Closed || b.Forced != failover.ForceAuto || b.Failures != 0 {
			t.Fatalf("back to auto = %+v, %v; want closed, counts reset", b, err)
		}
	})
}
