// Package failover tests provider failover end to end (issue 38) on a
// private local stack whose email fails over to a second region (the runner
// starts a second SES emulator for it and routes that region's calls there)
// and whose SMS fails over from SNS to End User Messaging SMS (the runner's
// /_dev/sms-voice); POST /_dev/faults {"provider": "ses-primary"|"sns",
// "mode": "outage"} takes a primary down. The rules themselves are internal/failover's and
// internal/worker's unit tests (the unknown-outcome interleaving among them).
package failover

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

const secondaryRegion = "eu-west-1"

func TestMain(m *testing.M) {
	stacktest.Main(m, devstack.Config{
		ScheduleInterval: time.Hour,
		Overrides: map[string]string{
			devstack.EmailSecondaryRegionParam: secondaryRegion, "EmailSecondaryIdentity": "example.com",
			devstack.SMSVoiceIdentityParam: devstack.LocalSMSVoiceIdentity,
			"BackoffBase":                  "1s", "BackoffCap": "2s",
		},
	})
}
