package worker

import (
	"errors"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

// The provider accepted the email and the → sent write fails once (the
// table's answer lost or throttled past the SDK's retries): the worker must
// record sent, not leave the delivery sending for a later receive or the
// scheduler's watch to send it a second time. Found by the store fault
// sweep (internal/e2e/faults: EmailFunction DynamoDB.UpdateItem #2 refused
// → 2 emails).
func TestFailedSentWriteDoesNotSendTwice(t *testing.T) {
	h := newHarness(t, domain.ChannelEmail, Config{})
	clock := &testClock{t: fixedAt}
	h.deps.Now = clock.Now
	h.handler = New(h.deps)
	h.notification("n1", "reservation.approved", domain.ChannelEmail, domain.StatusQueued)
	failed := false
	h.store.failTransition = func(c domain.Change) error {
		if c.To == domain.StatusSent && !failed {
			failed = true
			return errors.New("InternalServerError")
		}
		return nil
	}
	first := h.handle(t, message("m1", "n1", domain.ChannelEmail, 1))

	// Whatever the first receive did, the message's next receive after the
	// lease (or the watch's re-send) must not send again.
	clock.Advance(h.deps.Config.Lease + time.Hour)
	second := h.handle(t, message("m1", "n1", domain.ChannelEmail, 2))
	d := h.store.delivery("n1", domain.ChannelEmail)
	if h.provider.sends() != 1 || d.Status != domain.StatusSent {
		t.Fatalf("%d sends, delivery %s (receives failed: %v, %v); want sent once", h.provider.sends(), d.Status, first, second)
	}
	if len(first) != 0 {
		t.Errorf("first receive failed %v: the outcome is recorded, the message done", first)
	}
}
