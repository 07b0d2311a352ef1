// Package e2e holds end-to-end tests of the whole pipeline on the local
// stack: HTTP intake → DynamoDB → stream → relay → SQS → channel function →
// provider emulator.
package e2e

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

func TestMain(m *testing.M) {
	// No test here waits on the schedule: an hourly tick keeps the
	// scheduler's 64 due-index probes a run out of the idle stack.
	stacktest.Main(m, devstack.Config{ScheduleInterval: time.Hour})
}
