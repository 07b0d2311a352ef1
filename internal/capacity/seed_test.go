package capacity

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/domain"
)

// namedCheck is the check called name in res (fails the test when absent).
func namedCheck(t *testing.T, res Result, name string) Check {
	t.Helper()
	for _, c := range res.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %q", name)
	return Check{}
}

// TestSeedChecksPassWithTheDefaults: the template's defaults close the seed
// profile's arithmetic, check by check, with the figures docs/capacity.md
// and the README quote.
func TestSeedChecksPassWithTheDefaults(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model")
	}
	res, err := defaultRun(t)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range SeedCheckNames {
		if c := namedCheck(t, res, name); !c.OK || c.Detail == "" || len(c.Figures) == 0 {
			t.Errorf("%s: %+v", name, c)
		}
	}
	for _, tc := range []struct {
		name         string
		value, limit float64
	}{
		{CheckSendQuota, 250, 250},            // email's low rate: 60 % of 500/s over 6 s of slots
		{CheckSteadyState, 381.94, 416.67},    // email's busy hour: 1.5 × (40 M a day × 55 %) / 86,400
		{CheckCampaignDrain, 9.43, 12},        // hours, against StuckAfter(low)
		{CheckLiveConnections, 2407.41, 3000}, // pings × 2 against the stage throttle (writes: 3,704 of the 5,273 the campaign second leaves)
		{CheckRelayHigh, 32, 1000},            // 32,000 warm writes: 32 shards; nothing reserved, the account's 1,000
		{CheckSMSSpend, 500000, 540000},       // the alarm under 90 % of the limit, above a month of 2.5 M SMS a day at $0.00581 (441,802)
		{CheckPutEvents, 183.33, 400},         // 1,667 events/s: 10 a request, one partial per relay batch
		{CheckLiveQueueRetention, 543.2, 900}, // 3.2 s delay + 3 receives × 180 s
		{CheckCampaignPriority, 0, 0},         // high refused
		{CheckEventBusName, 0, 0},             // the bus is <stack>-<suffix>
	} {
		if c := namedCheck(t, res, tc.name); c.Value != tc.value || c.Limit != tc.limit {
			t.Errorf("%s: %v of %v (%s), want %v of %v", tc.name, c.Value, c.Limit, c.Detail, tc.value, tc.limit)
		}
	}
	if live := res.Seed.Live; live.Connections != 650000 || live.PingsPerSecond != 1203.7 || live.TableWritesPerSecond != 3703.7 || live.TableWriteBudget != 5273 ||
		live.AccountRequestsPerSecond > HTTPAPIRequestsPerSecond {
		t.Errorf("live load %+v", live)
	}
	if sms := res.Seed.SMS; sms.USDPerMonth != 441802.08 || sms.USDPerMonth > sms.AlarmUSD {
		t.Errorf("SMS spend %+v", sms)
	}
}

// TestSeedChecksFailWithTheOldDefaults: each named check fails with the
// default it replaced (or, for a figure no default set, a value that
// breaks it), from the default run's seconds: no second simulation.
func TestSeedChecksFailWithTheOldDefaults(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model")
	}
	base, err := defaultRun(t)
	if err != nil {
		t.Fatal(err)
	}
	busiest := base.Peaks[1] // the campaign second
	for _, tc := range []struct {
		check  string
		change func(p *Profile, l *Limits, res *Result)
		rule   func(domain.Priority) error
		want   string
	}{
		{CheckSendQuota, func(p *Profile, l *Limits, res *Result) {
			// The model before: the parameter and its share, not the limiter's 5/6.
			nominal := map[domain.Channel]Rate{}
			for c, r := range effectiveRates(*l) {
				nominal[c] = Rate{Nominal: r.Nominal, Low: r.Nominal * l.BulkSharePercent / 100, Whole: r.Nominal}
			}
			res.CampaignDrain = campaignDrain(*p, *l, nominal)
		}, nil, "low rate the model uses vs the limiter's effective low rate: 300.00 > 250.00"},
		{CheckSteadyState, func(p *Profile, _ *Limits, _ *Result) { p.BusyHourFactor = 2 }, nil, "email: busy-hour demand vs effective send rate: 509.26 > 416.67"},
		{CheckCampaignDrain, func(_ *Profile, l *Limits, _ *Result) { l.StuckAfterLowSeconds = 6 * 3600 }, nil, "drain hours vs StuckAfter(low): 9.43 > 6.00"},
		{CheckLiveConnections, func(_ *Profile, _ *Limits, res *Result) {
			// A ping a minute, each touching the connection and trying a
			// presence write (billed when its condition refuses it).
			res.Live.Profile.PingSeconds, res.Live.Profile.PingWrites = 60, 2
		}, nil, "pings/s × headroom vs the WebSocket stage throttle: 21666.67 > 3000.00"},
		{CheckLiveConnections, func(_ *Profile, l *Limits, _ *Result) { l.LiveRouteRateLimit = 1500 }, nil, "pings/s × headroom vs the WebSocket stage throttle: 2407.41 > 1500.00"},
		{CheckRelayHigh, func(_ *Profile, l *Limits, _ *Result) { l.Reserved["RelayHighFunction"] = 10 }, nil, "32.00 > 10.00"},
		{CheckCampaignPriority, nil, func(domain.Priority) error { return nil }, "campaigns accepted at high priority: 1.00 > 0.00"},
		{CheckSMSSpend, func(_ *Profile, l *Limits, _ *Result) { l.SMSSpendAlarmUSD = 800 }, nil, "441802.08 > 800.00"},
		{CheckPutEvents, func(_ *Profile, l *Limits, _ *Result) {
			for c := range l.SendRate {
				l.SendRate[c] = 5000
			}
		}, nil, "1833.33 > 400.00"},
		{CheckEventBusName, func(_ *Profile, l *Limits, _ *Result) { l.EventBusPerStack = false }, nil, "event bus names without the stack's name: 1.00 > 0.00"},
		{CheckLiveQueueRetention, func(_ *Profile, l *Limits, _ *Result) { l.LiveBroadcastRate = 4 }, nil, "940.00 > 900.00"},
	} {
		t.Run(tc.check, func(t *testing.T) {
			p, l := DefaultProfile(), cloneLimits(base.Limits)
			res := Result{Live: base.Live, CampaignDrain: map[string]Drain{}}
			if tc.change != nil {
				tc.change(&p, &l, &res)
			}
			if len(res.CampaignDrain) == 0 {
				res.CampaignDrain = campaignDrain(p, l, effectiveRates(l))
			}
			for _, d := range res.CampaignDrain {
				res.CampaignDrainHours = max(res.CampaignDrainHours, d.Hours)
			}
			rule := domain.CampaignPriority
			if tc.rule != nil {
				rule = tc.rule
			}
			res.checkSeed(p, l, busiest, rule)
			if c := namedCheck(t, res, tc.check); c.OK {
				t.Fatalf("%s passes: %+v", tc.check, c)
			}
			failed := 0
			for _, e := range res.LimitsExceeded {
				if strings.HasPrefix(e, tc.check+": ") {
					failed++
					if !strings.Contains(e, tc.want) {
						t.Errorf("exceeded %q, want it to name %q", e, tc.want)
					}
				}
			}
			if failed != 1 || len(res.LimitsExceeded) != 1 {
				t.Errorf("exceeded %v, want %s alone", res.LimitsExceeded, tc.check)
			}
		})
	}
}

// TestOldTemplateDefaultsFailTheirChecks puts the template's old defaults
// back in a copy of template.yaml (the high relay's 10 reserved, the 800 USD
// SMS alarm, the bus named by the parameter alone, the live stage on the
// HTTP API's throttle) and reads its limits: each named check they feed
// fails.
func TestOldTemplateDefaultsFailTheirChecks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model")
	}
	base, err := defaultRun(t)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		check, from, to string
	}{
		{CheckRelayHigh, "  RelayHighReservedConcurrency:\n    Type: Number\n    Default: -1\n", "  RelayHighReservedConcurrency:\n    Type: Number\n    Default: 10\n"},
		{CheckSMSSpend, "  SmsMonthlySpendAlarmUSD:\n    Type: Number\n    Default: 500000\n", "  SmsMonthlySpendAlarmUSD:\n    Type: Number\n    Default: 800\n"},
		{CheckEventBusName, `      Name: !Join ["-", [!Ref AWS::StackName, !Ref EventBusName]]`, "      Name: !Ref EventBusName"},
		{CheckLiveConnections, "        ThrottlingRateLimit: !Ref LiveThrottlingRateLimit", "        ThrottlingRateLimit: !Ref ApiThrottlingRateLimit"},
	} {
		t.Run(tc.check, func(t *testing.T) {
			if !strings.Contains(string(raw), tc.from) {
				t.Fatalf("template.yaml has no %q", tc.from)
			}
			path := filepath.Join(t.TempDir(), "template.yaml")
			if err := os.WriteFile(path, []byte(strings.Replace(string(raw), tc.from, tc.to, 1)), 0o600); err != nil {
				t.Fatal(err)
			}
			l, err := LoadLimits(path, DefaultProfile())
			if err != nil {
				t.Fatal(err)
			}
			res := Result{Live: base.Live, CampaignDrain: base.CampaignDrain, CampaignDrainHours: base.CampaignDrainHours}
			res.checkSeed(DefaultProfile(), l, base.Peaks[1], domain.CampaignPriority)
			if c := namedCheck(t, res, tc.check); c.OK {
				t.Errorf("%s passes with the old default: %+v", tc.check, c)
			}
			if len(res.LimitsExceeded) != 1 || !strings.HasPrefix(res.LimitsExceeded[0], tc.check+": ") {
				t.Errorf("exceeded %v, want %s alone", res.LimitsExceeded, tc.check)
			}
		})
	}
}
