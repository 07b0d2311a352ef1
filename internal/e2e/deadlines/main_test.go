// Package deadlines runs each channel's provider answering just before and
// just after the cut a channel worker puts on its provider call (issue 36),
// on a private local stack: the provider's latency is a slow fault
// (devstack.Faults' FaultSlow: an SDK middleware before SES SendEmail and SNS
// Publish, a held request at the local push service), the invocation's
// deadline is the function's timeout read from the template, and the
// deliveries end sent exactly once either way, with no invocation running to
// its timeout. Faults are global to the stack: the test runs the channels
// side by side, each with its own fault switch. The package also holds the
// long horizons of the stack's clock, run after the deadlines (they move
// the clock a year, then hours, then a day): the furthest sendAt at the shortest
// retention (horizon_test.go), a relay lag of three hours over quiet hours
// and over an escalation (lag_test.go), a relay DLQ redrive a day later over
// a digest (redrive_test.go).
package deadlines

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

// channelTimeout is the email and SMS functions' timeout on this stack (the
// template's is 30 s): the deadline test asserts the margin rule (the cut is
// the timeout less worker.DefaultSendMargin), not the absolute, and waits on
// the cut twice per channel. Push keeps the template's: its cut is the push
// provider's per-target timeout (10 s), which must come before the worker's.
const channelTimeout = 12

// relayRetries is the relay stream mappings' MaximumRetryAttempts on this
// stack (the template's is 5): the relay tests park records in the relay DLQ
// by making every relay of them fail, and each retry is a poll interval
// longer than the last (devstack's streamMapping.retryDelay); two retries
// still carry a passing fault.
const relayRetries = 2

func TestMain(m *testing.M) {
	os.Exit(stacktest.RunEdited(m, editTemplate, devstack.Config{
		// No test here waits on the schedule.
		ScheduleInterval: time.Hour,
		// A call cut at the deadline is retried a second later.
		// RetentionDays at its minimum: the furthest sendAt outlives it.
		Overrides: map[string]string{"BackoffBase": "1s", "BackoffCap": "2s", "EmailRateLimit": "0", "RetentionDays": "1"},
	}, stacktest.Options{}))
}

// editTemplate makes this stack's changes to the repository's template:
// channelTimeout on the email and SMS functions (which take the Globals'
// without one), relayRetries on the relay's stream mappings.
func editTemplate(tmpl string) (string, error) {
	for _, fn := range []string{"EmailFunction", "SmsFunction"} {
		start := strings.Index(tmpl, "\n  "+fn+":\n")
		props := strings.Index(tmpl[max(start, 0):], "\n    Properties:\n")
		if start < 0 || props < 0 {
			return "", fmt.Errorf("no %s with Properties", fn)
		}
		at := start + props + len("\n    Properties:\n")
		tmpl = tmpl[:at] + fmt.Sprintf("      Timeout: %d\n", channelTimeout) + tmpl[at:]
	}
	const retries = "\n      MaximumRetryAttempts: 5\n"
	if n := strings.Count(tmpl, retries); n != 2 {
		return "", fmt.Errorf("%d mappings with MaximumRetryAttempts 5, want the relay's two", n)
	}
	return strings.ReplaceAll(tmpl, retries, fmt.Sprintf("\n      MaximumRetryAttempts: %d\n", relayRetries)), nil
}

// settle waits until nothing more can be sent without the test acting: for
// quiet (two of the stream mappings' polls), no function has run and every
// queue but the DLQs has been empty, nothing visible, in flight (a retry's
// backoff) or delayed. A duplicate of a send would come from such a
// message; waiting for none is shorter than waiting out a backoff, and
// catches a message whose visibility outlasts it.
func settle(t *testing.T) {
	t.Helper()
	const quiet = 250 * time.Millisecond
	st := stacktest.Stack(t)
	start, since := time.Now(), time.Time{}
	defer func() { t.Logf("settled after %v", time.Since(start).Round(time.Millisecond)) }()
	stacktest.Eventually(t, 30*time.Second, "every queue empty and no function running", func() bool {
		depths, err := st.QueueDepths(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		busy := slices.ContainsFunc(depths, func(q devstack.QueueCounts) bool { return !q.DLQ && q.Visible+q.InFlight+q.Delayed > 0 })
		if busy || st.Running() > 0 {
			since = time.Time{}
			return false
		}
		if since.IsZero() {
			since = time.Now()
		}
		return time.Since(since) >= quiet
	})
}
