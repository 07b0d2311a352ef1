package capacity

import (
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/failover"
)

// TestFailoverCost: with failover on and the primary healthy, the breaker's
// cached reads (every worker instance once per failover.Rules.Refresh, half
// a read unit each: the item is 251 bytes) add at most $0.05 per million to
// every kind the cost benchmark measures (issue 38); nothing else changes
// (no write, no secondary send). In an outage: every send to the primary
// records its failure on the breakers' one partition until the caches see
// it open, and the secondary carries the busy hour on its own quota.
func TestFailoverCost(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model")
	}
	res, err := defaultRun(t)
	if err != nil {
		t.Fatal(err)
	}
	f := res.Failover
	if f.BreakerItemBytes != 251 || f.RefreshSeconds != 5 {
		t.Errorf("breaker item %d B, refresh %v s; want 251 B (half a read unit), 5 s", f.BreakerItemBytes, f.RefreshSeconds)
	}
	// 35 instances (20 + 8 + 7 mappings) × a read per 5 s × 0.5 unit.
	if h := f.Healthy["email"]; h.Instances != 35 || h.ReadsPerSecond != 7 || h.ReadUnitsPerSecond != 3.5 || h.DeliveriesPerSecond != 330 || h.PerMillionUSD != 0.0013 || h.BreakEvenPerSecond != 8.75 {
		t.Errorf("healthy email %+v", h)
	}
	if h := f.Healthy["sms"]; h.DeliveriesPerSecond != 30 || h.PerMillionUSD != 0.0146 {
		t.Errorf("healthy sms %+v", h)
	}
	for _, k := range Kinds() {
		added, ok := f.HealthyPerMillionUSD[k.Name]
		if !ok {
			t.Errorf("%s: no healthy failover figure", k.Name)
			continue
		}
		// The model without failover, and with it: the reads are the only
		// addition while the primary answers.
		without := res.Cost[k.Name].Total
		if with := without + added; with-without > FailoverHealthyLimitUSD {
			t.Errorf("%s: $%.4f/M with failover vs $%.4f/M without: more than $%.2f", k.Name, with, without, FailoverHealthyLimitUSD)
		}
	}
	if f.HealthyPerMillionUSD["push"] != 0 || f.HealthyPerMillionUSD["security.login_alert"] != 0.0159 {
		t.Errorf("healthy per kind %v: push has no failover, security.login_alert pays email's and SMS's", f.HealthyPerMillionUSD)
	}
	if o := f.Outage["email"]; o.FailureWritesPerSecond != 416.67 || o.FailureWriteUnits != 2083.33 || o.ReadUnitsPerSecond != 7 || o.ProbeWritesPerSecond != 0.07 ||
		o.Secondary.Whole != 416.67 || o.Secondary.Low != 250 || o.BusyHour != 381.94 {
		t.Errorf("email outage %+v", o)
	}
	for name, want := range map[string][2]float64{
		CheckFailoverHealthy:          {0.0159, 0.05},
		CheckFailoverBreakerPartition: {833.34, 1000},
		CheckFailoverSecondaryQuota:   {381.94, 416.67},
	} {
		if c := namedCheck(t, res, name); !c.OK || c.Value != want[0] || c.Limit != want[1] {
			t.Errorf("%s: %+v, want %v of %v", name, c, want[0], want[1])
		}
	}

	// The checks fail where they should: a stack sending 5 notifications a
	// second pays its instances' reads over few deliveries; a secondary of
	// 100/s cannot carry email's busy hour.
	quiet := DefaultProfile()
	quiet.AveragePerSecond, quiet.PerDay = 5, 5*86400+float64(quiet.CampaignUsers)
	l := res.Limits
	l.SecondarySendRate = map[domain.Channel]float64{}
	fq, err := FailoverCosts(quiet, l, failover.DefaultRules, ListPrices)
	if err != nil {
		t.Fatal(err)
	}
	var r Result
	r.checkFailover(fq)
	if c := namedCheck(t, r, CheckFailoverHealthy); c.OK || !strings.Contains(c.Detail, "sms") && !strings.Contains(c.Detail, "security.login_alert") {
		t.Errorf("5 notifications/s: %+v, want the healthy check to fail", c)
	}
	l.SecondarySendRate = map[domain.Channel]float64{domain.ChannelEmail: 100}
	fs, err := FailoverCosts(DefaultProfile(), l, failover.DefaultRules, ListPrices)
	if err != nil {
		t.Fatal(err)
	}
	r = Result{}
	r.checkFailover(fs)
	if c := namedCheck(t, r, CheckFailoverSecondaryQuota); c.OK || c.Limit != 83.33 {
		t.Errorf("secondary at 100/s: %+v, want a failure against its 83.33/s", c)
	}
}
