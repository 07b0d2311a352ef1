// Package faults sweeps the store faults of a notification's paths on a
// private local stack: every DynamoDB and SQS call the relay, the channel
// workers, the scheduler and the campaign function make for one
// notification fails once, in turn (devstack.StoreFaults, an SDK middleware
// on the functions' aws.Config: the adapters and the emulators run
// unchanged), and each run must end with the delivery sent exactly once, or
// parked in a DLQ with its reason — never stuck past its watch, never sent
// twice. The stack's clock brings watches and schedules due without waiting.
// Faults are global to the stack: the tests here do not run in parallel.
package faults

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

func TestMain(m *testing.M) {
	stacktest.Main(m, devstack.Config{
		// The tests tick the scheduler themselves (after moving the clock).
		ScheduleInterval: time.Hour,
		// A failed table call is retried after a second, not the default's.
		Overrides: map[string]string{"BackoffBase": "1s", "BackoffCap": "2s", "EmailRateLimit": "0",
			// A campaign's lot recounts a second after its deliveries move.
			"CampaignReconcileDelay": "1s"},
	})
}
