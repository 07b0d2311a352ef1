// Package campaignscale is issue 15 §3 at scale on a private local stack with
// an email quota of 40/s (bulk share 60 %: at most 120 bulk in any 5 s): a
// campaign to 300 users in make test, 2,000 in make bench
// (HERALD_CAMPAIGNSCALE_USERS; an inline quarter plus chunks of a half and a
// quarter) reaches every user exactly once, by email and inbox, paced within the
// bulk share as the SES emulator receives it, while security alerts (high)
// go from queue to provider within an idle stack's time plus one quota
// span. Small campaign cases (cancel, replays, 4xx) are
// internal/e2e/campaigns'.
package campaignscale

import (
	"strconv"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

const (
	emailRate = 40
	bulkShare = 60
)

// logs are the functions' log lines: the workers' "send quota overrun"
// lines say which sends reached the provider later than the quota allows for.
var logs = &stacktest.LogBuffer{}

func TestMain(m *testing.M) {
	stacktest.Main(m, devstack.Config{
		ScheduleInterval: time.Second,
		Logs:             logs,
		Overrides: map[string]string{
			"EmailSendRate": strconv.Itoa(emailRate), "BulkQuotaShare": strconv.Itoa(bulkShare),
			// Enough low-priority concurrency that the quota, not the
			// workers, paces the campaign (as in internal/e2e/quota).
			"LowBatchSize": "10", "LowMaximumConcurrency": "4",
			// Recount a lot's outcomes every 2 s, not 30 s: done follows
			// the last send closely.
			"CampaignReconcileDelay": "2s",
		},
	})
}
