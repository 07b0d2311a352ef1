package worker

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/domain"
)

// failWrites fails the first n writes of a change to status to, then lets
// every write through. The worker tries an outcome write
// outcomeWriteAttempts times: failing that many is a write that failed.
func failWrites(to domain.Status, n int) func(domain.Change) error {
	failed := 0
	return func(c domain.Change) error {
		if c.To == to && failed < n {
			failed++
			return errors.New("ProvisionedThroughputExceededException")
		}
		return nil
	}
}

// A transient provider error whose → retrying write fails leaves the
// delivery sending under this attempt's lease. The message must come back
// only when that lease has ended, and a receive that still finds its own
// lease live must keep the message (not take it for another worker's claim
// and delete it): the delivery is sent on a later receive, not left
// sending until the scheduler's watch (issue 36, defect 4).
func TestFailedRetryingWriteKeepsTheMessage(t *testing.T) {
	h := newHarness(t, domain.ChannelEmail, Config{})
	clock := &testClock{t: fixedAt}
	h.deps.Now = clock.Now
	h.handler = New(h.deps)
	h.notification("n1", "reservation.approved", domain.ChannelEmail, domain.StatusQueued)
	h.provider.errs = []error{&channel.ProviderError{Transient: true, Code: "Throttling", Err: errors.New("slow down")}}
	h.store.failTransition = failWrites(domain.StatusRetrying, outcomeWriteAttempts)

	if failed := h.handle(t, message("m1", "n1", domain.ChannelEmail, 1)); len(failed) != 1 {
		t.Fatalf("first receive: failures %v, want the message retried", failed)
	}
	d := h.store.delivery("n1", domain.ChannelEmail)
	if d.Status != domain.StatusSending {
		t.Fatalf("delivery %s, want still sending (its retrying write failed)", d.Status)
	}
	vis := h.vis.all()
	if len(vis) != 1 || clock.Now().Add(vis[0].timeout).Before(d.LeaseUntil) {
		t.Errorf("visibility %v: the message comes back before the lease ends at %v", vis, d.LeaseUntil)
	}
	if !strings.Contains(h.logs.String(), `"msg":"record outcome failed"`) {
		t.Errorf("the failed write is not logged:\n%s", h.logs)
	}

	// Back early all the same (a visibility change that failed, a short
	// Retry-After): its own lease is live; the message is kept.
	clock.Advance(5 * time.Second)
	if failed := h.handle(t, message("m1", "n1", domain.ChannelEmail, 2)); len(failed) != 1 {
		t.Fatalf("receive under its own live lease: failures %v, want the message kept", failed)
	}
	if got := h.store.delivery("n1", domain.ChannelEmail); got.Status != domain.StatusSending || h.provider.sends() != 0 {
		t.Fatalf("delivery %s after %d sends, want sending and nothing sent", got.Status, h.provider.sends())
	}
	if vis := h.vis.all(); clock.Now().Add(vis[len(vis)-1].timeout).Before(d.LeaseUntil) {
		t.Errorf("visibility %v: back before the lease ends at %v", vis[len(vis)-1], d.LeaseUntil)
	}

	// After the lease: reclaimed and sent.
	clock.Advance(h.deps.Config.Lease + time.Minute)
	if failed := h.handle(t, message("m1", "n1", domain.ChannelEmail, 3)); len(failed) != 0 {
		t.Fatalf("receive after the lease: failures %v", failed)
	}
	if got := h.store.delivery("n1", domain.ChannelEmail); got.Status != domain.StatusSent || h.provider.sends() != 1 || got.Attempts != 2 {
		t.Errorf("delivery %s after %d sends, %d attempts; want sent once on the second attempt", got.Status, h.provider.sends(), got.Attempts)
	}
}

// Another message's live claim is still another worker's: its copy is
// deleted (the holder's own message carries the delivery on).
func TestAnotherMessagesLiveLeaseDeletesTheCopy(t *testing.T) {
	h := newHarness(t, domain.ChannelEmail, Config{})
	h.notification("n1", "reservation.approved", domain.ChannelEmail, domain.StatusSending)
	h.store.edit("n1", domain.ChannelEmail, func(d *domain.Delivery) { d.LeaseUntil, d.LeaseHolder = fixedAt.Add(time.Minute), "m-other" })
	if failed := h.handle(t, message("m1", "n1", domain.ChannelEmail, 1)); len(failed) != 0 || len(h.vis.all()) != 0 {
		t.Fatalf("failures %v, visibility %v; want the copy deleted", failed, h.vis.all())
	}
}

// The last receive's failed: exhausted write fails: logged, never ignored,
// and the message still goes to the DLQ (its delivery sending there, which
// herald dlq redrive and the scheduler's watch both carry on).
func TestFailedExhaustedWriteIsLogged(t *testing.T) {
	h := newHarness(t, domain.ChannelEmail, Config{})
	h.notification("n1", "reservation.approved", domain.ChannelEmail, domain.StatusRetrying)
	h.provider.errs = []error{&channel.ProviderError{Transient: true, Code: "Throttling", Err: errors.New("slow down")}}
	h.store.failTransition = failWrites(domain.StatusFailed, outcomeWriteAttempts)
	if failed := h.handle(t, message("m1", "n1", domain.ChannelEmail, h.deps.Config.MaxReceiveCount)); len(failed) != 1 {
		t.Fatalf("failures %v, want the message failed (to the DLQ)", failed)
	}
	if vis := h.vis.all(); len(vis) != 1 || vis[0].timeout != 0 {
		t.Errorf("visibility %v, want 0 (to the DLQ at once)", vis)
	}
	if logs := h.logs.String(); !strings.Contains(logs, `"msg":"record outcome failed"`) || !strings.Contains(logs, `"outcome":"failed"`) {
		t.Errorf("the failed write is not logged:\n%s", logs)
	}
}

// An account-level refusal (SES sending paused) is nobody's recipient's
// fault: the delivery is retried, not failed: rejected; each attempt logs
// the operator alert and counts ProviderRefused (the alarm's metric); when
// retries run out it is failed: exhausted and parked in the DLQ for a
// redrive once the account sends again (issue 36, defect 6).
func TestAccountRefusalIsRetriedAndAlarmed(t *testing.T) {
	h := newHarness(t, domain.ChannelEmail, Config{})
	rec := &recorder{counts: map[string]int{}}
	h.deps.Metrics = rec
	h.handler = New(h.deps)
	h.notification("n1", "reservation.approved", domain.ChannelEmail, domain.StatusQueued)
	paused := &channel.ProviderError{Transient: true, Alert: true, Code: "SendingPausedException", Err: errors.New("sending paused")}
	h.provider.errs = []error{paused, paused}

	if failed := h.handle(t, message("m1", "n1", domain.ChannelEmail, 1)); len(failed) != 1 {
		t.Fatalf("failures %v, want the message retried", failed)
	}
	if d := h.store.delivery("n1", domain.ChannelEmail); d.Status != domain.StatusRetrying || d.LastError != "SendingPausedException" {
		t.Errorf("delivery %s (%s), want retrying", d.Status, d.LastError)
	}
	if failed := h.handle(t, message("m1", "n1", domain.ChannelEmail, h.deps.Config.MaxReceiveCount)); len(failed) != 1 {
		t.Fatalf("last receive: failures %v, want the message failed to the DLQ", failed)
	}
	if d := h.store.delivery("n1", domain.ChannelEmail); d.Status != domain.StatusFailed || d.Reason != domain.ReasonExhausted {
		t.Errorf("delivery %s/%s, want failed: exhausted (in the DLQ for a redrive)", d.Status, d.Reason)
	}
	if n := rec.counts["ProviderRefused/email/normal/"]; n != 2 {
		t.Errorf("ProviderRefused counted %d, want once per attempt (counts %v)", n, rec.counts)
	}
	if n := strings.Count(h.logs.String(), channel.OperatorAlert); n != 2 {
		t.Errorf("%d operator alerts logged, want 2", n)
	}
}
