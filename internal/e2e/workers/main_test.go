// Package workers tests the channel workers end to end on a private local
// stack with small retry settings: delivery on each channel, injected
// provider faults, backoff and DLQs, rechecks, duplicates, Web Push
// subscription clean-up, SES feedback and one-click unsubscribe. Faults are
// global to the stack, so the tests here do not run in parallel.
package workers

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

// Retry settings of this package's stack: a transient failure is retried
// after 1 s, then 1–2 s, and the third receive is the last.
const (
	backoffBase     = time.Second
	backoffCap      = 2 * time.Second
	maxReceiveCount = 3
)

func TestMain(m *testing.M) {
	stacktest.Main(m, devstack.Config{
		// No test here waits on the schedule: an hourly tick keeps the
		// scheduler's 64 due-index probes a run out of the idle stack.
		ScheduleInterval: time.Hour,
		Overrides: map[string]string{
			"BackoffBase": backoffBase.String(), "BackoffCap": backoffCap.String(), "MaxReceiveCount": "3",
		},
	})
}
