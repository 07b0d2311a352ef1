// Package quota tests the provider send quota end to end on a private local
// stack with an email quota of 10/s (bulk share 60 %: at most 30 in any 5 s):
// a low-priority backlog is paced by the quota while high-priority mail keeps
// flowing, and internal/dynamo tests the counter itself.
package quota

import (
	"strconv"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

const (
	// 10/s, bulk share 60 %: at most 30 bulk emails in any 5 s, so the
	// test's 100 bulk emails take ~17 s, several quota spans, with half the
	// work 200 at 20/s took.
	emailRate = 10
	bulkShare = 60
	// maxReceiveCount 3: a deferred message is delayed by visibility on its
	// first receive and re-sent on its second, so both paths run; 100
	// messages at 6/s wait up to ~17 s, deferred many times each, so without
	// the re-send they would reach the DLQ.
	maxReceiveCount = 3
)

// logs are the functions' log lines: the workers' "send quota overrun"
// lines say which sends reached the provider later than the quota allows for.
var logs = &stacktest.LogBuffer{}

func TestMain(m *testing.M) {
	stacktest.Main(m, devstack.Config{
		// No test here waits on the schedule: an hourly tick keeps the
		// scheduler's 64 due-index probes a run out of the idle stack.
		ScheduleInterval: time.Hour,
		Logs:             logs,
		Overrides: map[string]string{
			"EmailSendRate": strconv.Itoa(emailRate), "BulkQuotaShare": strconv.Itoa(bulkShare),
			"MaxReceiveCount": strconv.Itoa(maxReceiveCount),
			"BackoffBase":     "1s", "BackoffCap": "2s",
			// Enough low-priority concurrency that the quota, not the
			// workers, is what paces the backlog.
			"LowBatchSize": "10", "LowMaximumConcurrency": "4",
		},
	})
}
