package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/failover"
	"github.com/heraldhq/herald/internal/storetest"
)

const (
	primaryName   = "ses:us-east-1"
	secondaryName = "ses:eu-west-1"
)

var (
	throttled = &channel.ProviderError{Transient: true, Code: "TooManyRequestsException", Err: errors.New("slow down")}
	lost      = &channel.ProviderError{Transient: true, Unknown: true, Code: "transport", Err: errors.New("read: connection reset")}
	rejected  = &channel.ProviderError{Reason: domain.ReasonRejected, Code: "MessageRejected", Err: errors.New("bad address")}
)

// failoverHarness is a worker with a secondary email provider and a
// breaker store, on a clock the test moves.
type failoverHarness struct {
	*harness
	secondary *fakeProvider
	breakers  *storetest.MemBreakers
	mu        sync.Mutex
	now       time.Time
}

func newFailoverHarness(t *testing.T) *failoverHarness {
	f := &failoverHarness{harness: newHarness(t, domain.ChannelEmail, Config{}), secondary: &fakeProvider{channel: domain.ChannelEmail},
		breakers: storetest.NewMemBreakers(), now: fixedAt}
	f.deps.Now = f.clock
	f.deps.ProviderName, f.deps.Breakers = primaryName, f.breakers
	f.deps.Failover = &Failover{Secondary: f.secondary, SecondaryName: secondaryName}
	f.handler = New(f.deps)
	return f
}

func (f *failoverHarness) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *failoverHarness) advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

// deliver runs one receive of a work message for notification id.
func (f *failoverHarness) deliver(t *testing.T, id string, receives int) domain.Delivery {
	t.Helper()
	f.handle(t, message(fmt.Sprintf("m-%s-%d", id, receives), id, domain.ChannelEmail, receives))
	return f.store.delivery(id, domain.ChannelEmail)
}

func TestHighFailsOverAtOnce(t *testing.T) {
	f := newFailoverHarness(t)
	f.notification("n1", "security.login_alert", domain.ChannelEmail, domain.StatusQueued)
	f.provider.errs = []error{throttled}
	d := f.deliver(t, "n1", 1)
	if d.Status != domain.StatusSent || d.Provider != secondaryName || d.Attempts != 1 || f.secondary.sends() != 1 || f.provider.sends() != 0 {
		t.Fatalf("delivery %+v, primary %d sends, secondary %d; want sent by the secondary in the first attempt", d, f.provider.sends(), f.secondary.sends())
	}
	if b, _ := f.breakers.Breaker(context.Background(), primaryName); b.Failures != 1 {
		t.Errorf("primary breaker %+v; want the failure counted", b)
	}
}

func TestNormalMovesOnlyOnceTheBreakerOpens(t *testing.T) {
	f := newFailoverHarness(t)
	threshold := failover.DefaultRules.Threshold
	errs := make([]error, threshold)
	for i := range errs {
		errs[i] = throttled
	}
	f.provider.errs = errs
	for i := range threshold - 1 {
		id := fmt.Sprintf("n%d", i)
		f.notification(id, "reservation.approved", domain.ChannelEmail, domain.StatusQueued)
		d := f.deliver(t, id, 1)
		if d.Status != domain.StatusRetrying || d.Provider != primaryName || f.secondary.sends() != 0 {
			t.Fatalf("normal %d: delivery %+v, secondary %d sends; want retrying on the primary", i, d, f.secondary.sends())
		}
	}
	f.notification(fmt.Sprintf("n%d", threshold-1), "reservation.approved", domain.ChannelEmail, domain.StatusQueued)
	f.deliver(t, fmt.Sprintf("n%d", threshold-1), 1)
	// The last failure above opened the breaker: its NORMAL attempt went over.
	if got := f.store.delivery(fmt.Sprintf("n%d", threshold-1), domain.ChannelEmail); got.Status != domain.StatusSent || got.Provider != secondaryName {
		t.Fatalf("the attempt that opened the breaker: %+v; want sent by the secondary", got)
	}
	f.notification("later", "reservation.approved", domain.ChannelEmail, domain.StatusQueued)
	primaryCalls := len(f.provider.errs)
	if d := f.deliver(t, "later", 1); d.Status != domain.StatusSent || d.Provider != secondaryName || len(f.provider.errs) != primaryCalls {
		t.Fatalf("normal while open: %+v; want sent by the secondary without a primary call", d)
	}
	// After OpenFor, one probe goes to the primary, which answers: closed.
	f.advance(failover.DefaultRules.OpenFor + time.Second)
	f.notification("probe", "reservation.approved", domain.ChannelEmail, domain.StatusQueued)
	if d := f.deliver(t, "probe", 1); d.Status != domain.StatusSent || d.Provider != primaryName {
		t.Fatalf("probe: %+v; want sent by the primary", d)
	}
	if b, _ := f.breakers.Breaker(context.Background(), primaryName); b.State(f.clock()) != failover.Closed {
		t.Fatalf("breaker after a good probe: %+v; want closed", b)
	}
	f.notification("back", "security.login_alert", domain.ChannelEmail, domain.StatusQueued)
	if d := f.deliver(t, "back", 1); d.Provider != primaryName {
		t.Errorf("after closing: %+v; want the primary", d)
	}
}

func TestPermanentErrorDoesNotFailOver(t *testing.T) {
	f := newFailoverHarness(t)
	f.notification("n1", "security.login_alert", domain.ChannelEmail, domain.StatusQueued)
	f.provider.errs = []error{rejected}
	d := f.deliver(t, "n1", 1)
	if d.Status != domain.StatusFailed || d.Reason != domain.ReasonRejected || d.Provider != primaryName || f.secondary.sends() != 0 {
		t.Fatalf("delivery %+v, secondary %d sends; want failed: rejected by the primary, nothing on the secondary", d, f.secondary.sends())
	}
	if b, _ := f.breakers.Breaker(context.Background(), primaryName); b.Failures != 0 {
		t.Errorf("breaker %+v; a recipient's error counted against the provider", b)
	}
}

// The unknown-outcome rule, interleaved with an outage: a HIGH send to the
// primary gets no answer (it may have gone out); meanwhile the primary's
// breaker opens and other HIGH sends go to the secondary. The delivery with
// the unknown outcome is never sent on the secondary: its retries go to the
// primary only, while open, and it ends sent there once — never on both.
func TestUnknownOutcomeStaysOnItsProvider(t *testing.T) {
	f := newFailoverHarness(t)
	f.notification("lost", "security.login_alert", domain.ChannelEmail, domain.StatusQueued)
	f.provider.errs = []error{lost}
	d := f.deliver(t, "lost", 1)
	if d.Status != domain.StatusRetrying || d.PinnedProvider != primaryName || d.LastError != "unknown_outcome:transport" || f.secondary.sends() != 0 {
		t.Fatalf("unknown outcome: %+v, secondary %d sends; want retrying, pinned to the primary, nothing on the secondary", d, f.secondary.sends())
	}
	// The outage: other HIGH sends fail over and open the breaker.
	threshold := failover.DefaultRules.Threshold
	f.provider.errs = nil
	for i := range threshold {
		f.provider.errs = append(f.provider.errs, throttled)
		id := fmt.Sprintf("other%d", i)
		f.notification(id, "security.login_alert", domain.ChannelEmail, domain.StatusQueued)
		if d := f.deliver(t, id, 1); d.Provider != secondaryName || d.Status != domain.StatusSent {
			t.Fatalf("%s: %+v; want sent by the secondary", id, d)
		}
	}
	if b, _ := f.breakers.Breaker(context.Background(), primaryName); b.State(f.clock()) != failover.Open {
		t.Fatalf("breaker %+v; want open", b)
	}
	secondarySends := f.secondary.sends()
	// The pinned delivery's retry, the breaker open: the primary again
	// (still down), never the secondary.
	f.provider.errs = []error{throttled}
	d = f.deliver(t, "lost", 2)
	if d.Status != domain.StatusRetrying || d.Provider != primaryName || f.secondary.sends() != secondarySends {
		t.Fatalf("pinned retry while open: %+v, secondary %d sends (was %d); want retrying on the primary", d, f.secondary.sends(), secondarySends)
	}
	// The primary answers again: sent there, once.
	d = f.deliver(t, "lost", 3)
	if d.Status != domain.StatusSent || d.Provider != primaryName || f.provider.sends() != 1 || f.secondary.sends() != secondarySends {
		t.Fatalf("pinned retry: %+v, primary %d sends, secondary %d; want sent once by the primary", d, f.provider.sends(), f.secondary.sends())
	}
	for _, m := range f.secondary.sent {
		if m.Notification.ID == "lost" {
			t.Fatal("the delivery with an unknown outcome was sent on the secondary")
		}
	}
}

func TestNoSecondaryRetriesOnThePrimary(t *testing.T) {
	f := newFailoverHarness(t)
	f.deps.Failover = nil
	f.handler = New(f.deps)
	f.notification("n1", "security.login_alert", domain.ChannelEmail, domain.StatusQueued)
	f.provider.errs = []error{throttled}
	if d := f.deliver(t, "n1", 1); d.Status != domain.StatusRetrying || d.Provider != primaryName {
		t.Fatalf("without a secondary: %+v; want retrying on the primary", d)
	}
}
