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
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

func TestMain(m *testing.M) {
	stacktest.Main(m, devstack.Config{
		// No test here waits on the schedule.
		ScheduleInterval: time.Hour,
		// A call cut at the deadline is retried a second later.
		// RetentionDays at its minimum: the furthest sendAt outlives it.
		Overrides: map[string]string{"BackoffBase": "1s", "BackoffCap": "2s", "EmailRateLimit": "0", "RetentionDays": "1"},
	})
}
