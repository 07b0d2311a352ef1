package push

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/webpush"
)

// delayedSender is a Web Push sender whose push services answer after a
// delay per endpoint, unless the request's context ends first (then it
// fails as the real sender does: transient, no status).
type delayedSender struct {
	delay map[string]time.Duration

	mu             sync.Mutex
	inFlight, peak int
}

func (s *delayedSender) Send(ctx context.Context, sub webpush.Subscription, _ webpush.Message) (webpush.Result, error) {
	s.mu.Lock()
	s.inFlight++
	s.peak = max(s.peak, s.inFlight)
	s.mu.Unlock()
	defer func() { s.mu.Lock(); s.inFlight--; s.mu.Unlock() }()
	t := time.NewTimer(s.delay[sub.Endpoint])
	defer t.Stop()
	select {
	case <-t.C:
		return webpush.Result{StatusCode: 201, MessageID: "loc-" + sub.Endpoint}, nil
	case <-ctx.Done():
		return webpush.Result{}, &webpush.ProviderError{Transient: true, Origin: "https://push.example", Err: ctx.Err()}
	}
}

func slowSubs(n int) []domain.PushSubscription {
	var out []domain.PushSubscription
	for i := range n {
		out = append(out, domain.PushSubscription{ID: fmt.Sprintf("s%d", i), Endpoint: fmt.Sprintf("https://push.example/%d", i), P256dh: "k", Auth: "a"})
	}
	return out
}

// One slow push service does not hold up the user's other targets: they
// are pushed at the same time, and the slow one is cut off where the call's
// context ends (the worker's send deadline) and retried; the others —
// one answering just before that deadline — are reported reached.
func TestSlowPushServiceDoesNotStallTheOthers(t *testing.T) {
	const deadline = time.Second
	subs := slowSubs(4)
	sender := &delayedSender{delay: map[string]time.Duration{
		subs[0].Endpoint: deadline + 300*time.Millisecond, // just after the deadline
		subs[1].Endpoint: deadline - 300*time.Millisecond, // just before it
		subs[2].Endpoint: 10 * time.Millisecond,
		subs[3].Endpoint: time.Minute, // a push service that hangs
	}}
	p := New(sender, &deletedSubs{}, time.Now)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	m := message(subs, domain.PriorityHigh, time.Time{})
	start := time.Now()
	_, err := p.Send(ctx, m)
	if elapsed := time.Since(start); elapsed > 30*time.Second {
		t.Errorf("Send took %v: the hanging service held it past its context", elapsed)
	}
	var pe *channel.ProviderError
	if !errors.As(err, &pe) || !pe.Transient || pe.Code != "timeout" {
		t.Fatalf("Send = %v, want transient timeout (the slow target is retried)", err)
	}
	if !sameTargets(m.Accepted, []string{"s1", "s2"}) {
		t.Errorf("accepted %v, want s1 and s2", m.Accepted)
	}
}

// Without a deadline from its caller, each target is still bounded by
// TargetTimeout; and at most MaxParallelTargets are pushed at once.
func TestTargetsAreBounded(t *testing.T) {
	subs := slowSubs(domain.MaxPushSubscriptionsPerUser + domain.MaxDevicesPerUser)
	delays := map[string]time.Duration{}
	for _, s := range subs {
		delays[s.Endpoint] = 20 * time.Millisecond
	}
	delays[subs[3].Endpoint] = time.Minute
	sender := &delayedSender{delay: delays}
	p := New(sender, &deletedSubs{}, time.Now).WithTargetTimeout(300 * time.Millisecond)
	m := message(subs, domain.PriorityNormal, time.Time{})
	start := time.Now()
	_, err := p.Send(context.Background(), m)
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("Send took %v, want about the target timeout", elapsed)
	}
	var pe *channel.ProviderError
	if !errors.As(err, &pe) || !pe.Transient || len(m.Accepted) != len(subs)-1 {
		t.Errorf("Send = %v with %d accepted, want transient with %d", err, len(m.Accepted), len(subs)-1)
	}
	if sender.peak > MaxParallelTargets || sender.peak < 2 {
		t.Errorf("%d pushes at once, want 2..%d", sender.peak, MaxParallelTargets)
	}
}
