package capacity

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/events"
	"github.com/heraldhq/herald/internal/policy"
	"github.com/heraldhq/herald/internal/recovery"
)

// measured is a cost benchmark run (internal/e2e/cost, COST_OUT), checked in.
type measured struct {
	Date string          `json:"date"`
	Cost map[string]Cost `json:"costPerMillionUSD"`
	// ChannelBatch: the mappings' batch sizes of the measured run.
	ChannelBatch map[domain.Priority]float64 `json:"channelBatch"`
	Usage        map[string]Usage            `json:"usage"`
	// DeliveryEvents is the run's mode (none when absent) and SESFeedback
	// whether SES's delivery notifications arrived (never locally).
	DeliveryEvents events.Mode `json:"deliveryEvents"`
	SESFeedback    bool        `json:"sesFeedback"`
}

// TestModelAgreesWithMeasuredCost keeps the model honest: its cost per
// million of each kind, Lambda apart, is within 10% of what the benchmark
// measured on the local stack. Re-record with
// COST_OUT=$PWD/internal/capacity/testdata/measured.json go test -run '^$' -bench Cost -benchtime 1x ./internal/e2e/cost
func TestModelAgreesWithMeasuredCost(t *testing.T) {
	raw, err := os.ReadFile("testdata/measured.json")
	if err != nil {
		t.Fatal(err)
	}
	var m measured
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.ChannelBatch) != 3 {
		t.Fatalf("%s: channelBatch %v: the run's batch sizes per priority are not recorded", m.Date, m.ChannelBatch)
	}
	for _, k := range Kinds() {
		got, ok := m.Cost[k.Name]
		if !ok {
			t.Errorf("%s: not measured (%s)", k.Name, m.Date)
			continue
		}
		// The run's tracing: a run with Tracing Active recorded traced
		// invocations (of every function it invoked).
		traced := map[string]bool{}
		if u := m.Usage[k.Name]; u.TracedInvocations > 0 {
			for fn := range u.Invocations {
				traced[fn] = true
			}
		}
		_, c, err := CostOf(k, ListPrices, m.ChannelBatch, traced)
		if err != nil {
			t.Fatal(err)
		}
		// Delivery events as the run published them: the entries the bus
		// received are the model's count, and their cost is added.
		mode := m.DeliveryEvents
		if mode == "" {
			mode = events.ModeNone
		}
		if want, got := EventEntriesPerNotification(k, mode, m.SESFeedback), m.Usage[k.Name].EventEntries; math.Abs(want-got) > 0.01 {
			t.Errorf("%s: %.2f PutEvents entries per notification measured (DeliveryEvents %s), the model counts %.2f", k.Name, got, mode, want)
		}
		c.Total += EventsCostPerMillion(k, mode, m.SESFeedback, ListPrices)
		// Lambda is compared apart: the run's durations are the emulators'
		// (DynamoDB Local, the runner), several times AWS's and varying with
		// the machine's load, while the model prices AWS's. Everything else
		// (units, requests, messages, log bytes, entries) is the same on
		// both, and must agree within 10%; the measured Lambda can only be
		// dearer than the model's, never cheaper (a cheaper one means the
		// model counts an invocation the run did not make).
		model, run := c.Total-c.Lambda, got.Total-got.Lambda
		diff := math.Abs(model-run) / run
		t.Logf("%-24s model $%.2f/M, measured $%.2f/M (%+.1f%%); without Lambda $%.2f vs $%.2f (%+.1f%%)", k.Name, c.Total, got.Total,
			100*(c.Total-got.Total)/got.Total, model, run, 100*(model-run)/run)
		if diff > 0.10 {
			t.Errorf("%s: model $%.2f/M vs measured $%.2f/M without Lambda: %.0f%% apart (model %+v; measured %+v)", k.Name, model, run, 100*diff, c, got)
		}
		if got.Lambda < 0.9*c.Lambda {
			t.Errorf("%s: Lambda measured $%.2f/M, below the model's $%.2f/M", k.Name, got.Lambda, c.Lambda)
		}
		// Storage (beside the total) follows the same item builders.
		if got.Storage == 0 || math.Abs(c.Storage-got.Storage)/got.Storage > 0.10 {
			t.Errorf("%s: storage model $%.2f/M vs measured $%.2f/M", k.Name, c.Storage, got.Storage)
		}
	}
}

// defaultRun is the model's run of the default profile against the
// repository template, made once for the tests that only read it (a run
// simulates 50,000 notifications: a few seconds under -race, tens of
// seconds before the model built each shape's watch item once).
var defaultRun = func() func(t *testing.T) (Result, error) {
	var (
		once sync.Once
		res  Result
		err  error
	)
	return func(t *testing.T) (Result, error) {
		t.Helper()
		once.Do(func() { res, err = Run(DefaultProfile(), repoLimits(t)) })
		return res, err
	}
}()

// repoLimits are the repository template's limits for the default profile:
// loaded once (a template parse each), each caller given its own copy to
// change (a JSON round trip, checked lossless once).
var repoLimits = func() func(t *testing.T) Limits {
	var (
		once sync.Once
		raw  []byte
		err  error
	)
	return func(t *testing.T) Limits {
		t.Helper()
		once.Do(func() {
			var l Limits
			if l, err = LoadLimits("../../template.yaml", DefaultProfile()); err != nil {
				return
			}
			if raw, err = json.Marshal(l); err != nil {
				return
			}
			var back Limits
			if err = json.Unmarshal(raw, &back); err == nil && !reflect.DeepEqual(back, l) {
				err = fmt.Errorf("the limits' JSON round trip loses a field: %+v, back %+v", l, back)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		var l Limits
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatal(err)
		}
		return l
	}
}()

func TestProfilePassesEveryLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 50,000 notifications")
	}
	res, err := defaultRun(t)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range res.LimitsExceeded {
		t.Error(l)
	}
	if res.MaxPartitionWriteUnitsPerSecond <= 0 || res.MaxPartitionWriteUnitsPerSecond > PartitionWriteUnitsPerSecond {
		t.Errorf("max partition WCU/s %v", res.MaxPartitionWriteUnitsPerSecond)
	}
	// The due index takes the deferred share of the campaign (paced to
	// 2,000/s) on its shards.
	campaign := res.Peaks[1]
	if due := campaign.WriteUnits["gsi3"]; due.Units < 10 || due.Units > 60 {
		t.Errorf("busiest due partition %+v at 600 deferrals/s over 32 shards, want ~20", due)
	}
	raw, _ := json.MarshalIndent(res, "", "  ")
	t.Logf("%s", raw)
}

// TestLimitDetection shows the model catches a hot key: deferrals beyond
// what the due index's shards take.
func TestLimitDetection(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates notifications")
	}
	p := DefaultProfile()
	p.PeakPerSecond, p.DeferredShare = 40000, 1 // 40,000 deferrals/s: 1,250 per shard
	p.AveragePerSecond = 0
	p.BatchIntakeShare = 1 // through the batch route: not paced by the campaign function
	res, err := Run(p, repoLimits(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.LimitsExceeded) == 0 {
		t.Errorf("no limit exceeded at 40,000 deferrals/s")
	}
}

// TestCampaignKeys: the peak campaign's own keys (META, status copies, lot
// results) stay under a partition's limits at the default reconcile delay,
// and the model flags META when the delay is too short for the campaign's
// pending lots (10,000 lots every 5 s: 2,000 transactions/s on META).
func TestCampaignKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates notifications")
	}
	res, err := defaultRun(t)
	if err != nil {
		t.Fatal(err)
	}
	campaign := res.Peaks[1]
	if w := campaign.WriteUnits["table"]; w.Key != "C#"+peakCampaign || w.Units <= 0 || w.Units > PartitionWriteUnitsPerSecond {
		t.Errorf("busiest table write %+v, want the campaign's META under %d", w, PartitionWriteUnitsPerSecond)
	}
	if r := campaign.ReadUnits["table"]; r.Units > PartitionReadUnitsPerSecond {
		t.Errorf("busiest table read %+v", r)
	}
	p := DefaultProfile()
	p.CampaignReconcileSeconds = 5
	if res, err = Run(p, repoLimits(t)); err != nil {
		t.Fatal(err)
	}
	flagged := false
	for _, l := range res.LimitsExceeded {
		flagged = flagged || strings.Contains(l, "C#"+peakCampaign)
	}
	if !flagged {
		t.Errorf("10,000 lots recounted every 5 s not flagged: %v", res.LimitsExceeded)
	}
}

// TestTracingIsPricedWhenActive: X-Ray is priced from the template's
// Tracing parameter: nothing with the default PassThrough, 5 % of the
// invocations at $5 per million traces with Active.
func TestTracingIsPricedWhenActive(t *testing.T) {
	def := repoLimits(t)
	if len(def.Traced) != 0 {
		t.Errorf("default template traces %v, want none (Tracing PassThrough)", def.Traced)
	}
	tm, err := devstack.LoadTemplate("../../template.yaml", map[string]string{"EmailSendRate": "500", "SmsSendRate": "500", "PushSendRate": "500", "Tracing": "Active"})
	if err != nil {
		t.Fatal(err)
	}
	active, err := limitsOf(tm, "../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(active.Traced) < 6 || !active.Traced["ApiFunction"] || !active.Traced["EmailFunction"] {
		t.Fatalf("Tracing Active traces %v, want every function", active.Traced)
	}
	email := Kinds()[0]
	u0, c0, err := CostOf(email, ListPrices, def.Batch, def.Traced)
	if err != nil {
		t.Fatal(err)
	}
	u1, c1, err := CostOf(email, ListPrices, active.Batch, active.Traced)
	if err != nil {
		t.Fatal(err)
	}
	if c0.XRay != 0 || u0.TracedInvocations != 0 {
		t.Errorf("PassThrough: X-Ray $%.2f/M from %v traced invocations, want 0", c0.XRay, u0.TracedInvocations)
	}
	invocations := 0.0
	for _, n := range u1.Invocations {
		invocations += n
	}
	if want := invocations * XRaySampledShare * ListPrices.XRayTraceRecorded * 1e6; math.Abs(c1.XRay-want) > 1e-9 || c1.XRay < 0.2 {
		t.Errorf("Active: X-Ray $%.3f/M, want %.3f (every invocation traced)", c1.XRay, want)
	}
	if math.Abs(c1.Total-c0.Total-c1.XRay) > 1e-9 {
		t.Errorf("Active costs %.3f, PassThrough %.3f: the difference is not X-Ray's %.3f", c1.Total, c0.Total, c1.XRay)
	}
}

// TestProfileCreatesWriteTheProfilesIndex: each new profile writes its own
// keys-only gsi4 entry (1 WCU), which the segment-"all" scan reads.
func TestProfileCreatesWriteTheProfilesIndex(t *testing.T) {
	m, tl := newModel(repoLimits(t).Batch), newTally()
	if err := m.createProfiles(tl, 10); err != nil {
		t.Fatal(err)
	}
	if tl.usage.WriteUnits["gsi4"] != 10 || len(tl.write["gsi4"]) != 10 || tl.usage.WriteUnits["table"] != 10 {
		t.Fatalf("10 profiles wrote %v units (%d gsi4 keys)", tl.usage.WriteUnits, len(tl.write["gsi4"]))
	}
}

// TestLimitsComeFromTheTemplate: the values the model checks are the
// template's defaults (and the profile's send rate for the required ones).
func TestLimitsComeFromTheTemplate(t *testing.T) {
	l := repoLimits(t)
	if l.Batch[domain.PriorityLow] != 4 || l.MaxConcurrency[domain.PriorityLow] != 7 || l.Batch[domain.PriorityHigh] != 10 {
		t.Errorf("channel mappings %v %v", l.Batch, l.MaxConcurrency)
	}
	if l.SendRate[domain.ChannelEmail] != 500 || l.BulkSharePercent != 60 {
		t.Errorf("send rate %v, bulk share %v", l.SendRate, l.BulkSharePercent)
	}
	if l.RouteRateLimit != 1500 || l.routeLimit("POST /v1/unsubscribe") != 50 || l.routeLimit(routeNotify) != 1500 {
		t.Errorf("route throttles %v, %v", l.RouteRateLimit, l.Routes)
	}
	if l.CampaignFanOutRate != 2000 || l.CampaignMaxConcurrency != 10 || l.CampaignTimeoutSeconds != 60 || l.SchedulerReleaseRate != 3200 {
		t.Errorf("campaign %v/s × %v, timeout %v, release %v", l.CampaignFanOutRate, l.CampaignMaxConcurrency, l.CampaignTimeoutSeconds, l.SchedulerReleaseRate)
	}
	if l.WarmWrite["table"] != 32000 || l.warm("gsi2", true) != 32000 || l.warm("gsi3", true) != NewTableWarmWriteUnitsPerSecond {
		t.Errorf("warm throughput %v", l.WarmWrite)
	}
	if len(l.Reserved) != 0 || l.MappingConcurrency["EmailFunction"] != 20+8+7 {
		t.Errorf("reserved %v, mappings %v", l.Reserved, l.MappingConcurrency)
	}
	if len(l.StreamRecordAge) == 0 || len(l.QueueRetention) != 11 {
		t.Errorf("stream mappings %v, work queues %v", l.StreamRecordAge, l.QueueRetention)
	}
	for id, age := range l.StreamRecordAge {
		if age != -1 {
			t.Errorf("%s: MaximumRecordAgeInSeconds %v", id, age)
		}
	}
}

// TestSeedProfileFigures: the deterministic figures of the seed profile
// with the template's defaults (docs/capacity.md and the README quote them).
func TestSeedProfileFigures(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model")
	}
	res, err := defaultRun(t)
	if err != nil {
		t.Fatal(err)
	}
	// 5.5 M emails at what the send quota's effective 416.67/s leaves once
	// the day's own 254.63 emails/s are sent (162.04/s: less than low's
	// effective 250/s): 9.43 h; the pollers do not slow it.
	if res.CampaignDrainMinimumHours != 9.43 || res.CampaignDrainHours > res.CampaignDrainMinimumHours*1.1 || res.CampaignDrain["email"].PerSecond != 162.04 {
		t.Errorf("drain %v h, minimum %v h", res.CampaignDrainHours, res.CampaignDrainMinimumHours)
	}
	if res.CampaignLotSeconds != 20 {
		t.Errorf("lot %v s, want 1,000 at 2,000/(10×4) per second: 20 s", res.CampaignLotSeconds)
	}
	campaign := res.Peaks[1]
	if campaign.CampaignNotificationsPerSecond != 2000 || campaign.TableWriteUnitsPerSecond <= res.Peaks[0].TableWriteUnitsPerSecond ||
		campaign.TableWriteUnitsPerSecond > res.Limits.WarmWrite["table"] || res.TableWriteUnitsPerSecond != campaign.TableWriteUnitsPerSecond {
		t.Errorf("campaign second %v/s: table %v WRU/s (max %v)", campaign.CampaignNotificationsPerSecond, campaign.TableWriteUnitsPerSecond, res.TableWriteUnitsPerSecond)
	}
	if res.WriteUnitsPerCampaignNotification < 4 || res.WriteUnitsPerCampaignNotification > 9 {
		t.Errorf("%v write units per campaign notification", res.WriteUnitsPerCampaignNotification)
	}
	names := map[string]bool{}
	for _, c := range res.Checks {
		names[c.Name] = true
		if !c.OK {
			t.Errorf("check %+v", c)
		}
	}
	for _, want := range []string{"campaignDrainHours within 10% of the quota-bound minimum", "average second: POST /v1/notifications requests/s × headroom vs route throttle",
		"campaign second (2000/s low, 30% deferred to 08:00): table write units/s vs per-table quota",
		"EmailLowQueue retention vs twice the campaign's drain", "RelayStreamMapping MaximumRecordAgeInSeconds is -1 (a backlog is relayed late, never discarded)"} {
		if !names[want] {
			t.Errorf("no check %q", want)
		}
	}
}

// TestOldDefaultsFail: the template's defaults before this model checked
// them each break a check (they fail the seed profile). A change that
// alters the simulated seconds (the fan-out's pace) runs the whole model; a
// limit checked per simulated second (route throttles, warm throughput)
// checks the default run's seconds again (checkPeak, as Run does); one that
// is not per second (drain, record age, reserved concurrency, retention) is
// checked as Run ends, by checkLimits, from the profile and the limits
// alone. None of them simulates 50,000 notifications again for a limit no
// notification changes (Run makes the same checks: TestSeedProfileFigures
// finds them in its result).
func TestOldDefaultsFail(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model")
	}
	for _, tc := range []struct {
		name   string
		change func(*Limits)
		want   string
		// simulate: the change alters the simulated seconds (a new run);
		// seconds: only their checks (the default run's seconds checked
		// again); otherwise the limits that are not per second.
		simulate, seconds bool
	}{
		{"low batch 2 × 2 pollers", func(l *Limits) { l.Batch[domain.PriorityLow], l.MaxConcurrency[domain.PriorityLow] = 2, 2 }, "drains in 22.9 h", false, false},
		{"100 requests/s per route", func(l *Limits) { l.RouteRateLimit = 100 }, "POST /v1/notifications takes 600 requests/s", false, true},
		{"records discarded after an hour", func(l *Limits) { l.StreamRecordAge["RelayStreamMapping"] = 3600 }, "MaximumRecordAgeInSeconds 3600", false, false},
		{"fan-out unpaced at the 20,000/s peak", func(l *Limits) { l.CampaignFanOutRate = 20000; l.CampaignMaxConcurrency = 100 }, "> the per-table quota 40000", true, false},
		{"no warm throughput", func(l *Limits) { delete(l.WarmWrite, "table") }, "> its warm throughput 4000", false, true},
		{"reserved beyond the pool", func(l *Limits) { l.Reserved["EmailFunction"] = 950 }, "fewer than 100", false, false},
		{"retention shorter than the drain", func(l *Limits) { l.QueueRetention["EmailLowQueue"] = 3600 }, "EmailLowQueue keeps messages 1 h", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // one of them runs the whole model: CPU only
			l := repoLimits(t)
			tc.change(&l)
			res := Result{CampaignDrain: map[string]Drain{}}
			switch {
			case tc.simulate:
				var err error
				if res, err = Run(DefaultProfile(), l); err != nil {
					t.Fatal(err)
				}
			case tc.seconds:
				def, err := defaultRun(t)
				if err != nil {
					t.Fatal(err)
				}
				for _, pk := range def.Peaks {
					res.checkPeak(DefaultProfile(), l, pk)
				}
			default:
				res.checkLimits(DefaultProfile(), l)
			}
			found := false
			for _, e := range res.LimitsExceeded {
				found = found || strings.Contains(e, tc.want)
			}
			if !found {
				t.Errorf("no limit exceeded naming %q: %v", tc.want, res.LimitsExceeded)
			}
		})
	}
}

// TestItemSizesAreFullBuilds: the model sizes one notification and one
// delivery item per shape; a run that also builds every item in full finds
// each one's sizes equal to its shape's (a smaller profile: every path and
// kind, fewer of each). It failed while the shape left out the length of
// the user's id (the release path's users are r0…r999 and their
// deliveries have no key that shows it).
func TestItemSizesAreFullBuilds(t *testing.T) {
	p := DefaultProfile()
	p.AveragePerSecond, p.PeakPerSecond, p.PerDay = 300, 300, 1000/p.DeferredShare
	if _, err := run(p, repoLimits(t), true); err != nil {
		t.Fatal(err)
	}
}

// TestBudgetSizesAreFullBuilds: the model sizes a user's budget item once
// per id length; every user's is still its own full item's, on the user's
// own partition.
func TestBudgetSizesAreFullBuilds(t *testing.T) {
	m := newModel(repoLimits(t).Batch)
	for _, user := range []string{"u1", "u2", "u77", "u12345", "c1", "c999999", "u0123456789012345678901234567890123456789"} {
		got := m.budgetSize(user)
		full := dynamo.BudgetItemKeys(user, m.now, policy.BudgetSlots)
		if got != full.Size || full.PK != dynamo.UserPK(user) {
			t.Errorf("%s: the model's budget item %d bytes, its full item %d on %s", user, got, full.Size, full.PK)
		}
	}
}

// TestWatchKeysAreAFullBuilds: the model builds one full watch item per
// shape (priority, channels) and sizes the others from it; every watch's keys
// and sizes are still exactly those of its own full item (the due shard in
// its keys changes the size by a byte or two).
func TestWatchKeysAreAFullBuilds(t *testing.T) {
	m := newModel(repoLimits(t).Batch)
	shards := map[string]bool{}
	for _, p := range domain.Priorities {
		for _, chans := range [][]domain.Channel{{domain.ChannelEmail}, {domain.ChannelSMS}, {domain.ChannelEmail, domain.ChannelPush}} {
			for range 40 {
				w := recovery.Watch{ID: recovery.NewWatchID(), Priority: p, ArmedAt: m.now, DueAt: m.now.Add(recovery.StuckAfter(p))}
				got, err := m.watchKeys(w, chans)
				if err != nil {
					t.Fatal(err)
				}
				full := w
				for i := range relayRecordsPerBatch {
					for _, c := range chans {
						full.Entries = append(full.Entries, recovery.WatchEntry{NotificationID: fmt.Sprintf("%s-%03d", m.id(), i), Channel: c})
					}
				}
				want, err := m.store.WatchItemKeys(full)
				if err != nil {
					t.Fatal(err)
				}
				if got.PK != want.PK || got.Size != want.Size || !maps.Equal(got.Index, want.Index) || !maps.Equal(got.Sparse, want.Sparse) {
					t.Fatalf("%s %v: the model's watch %+v, its full item %+v", p, chans, got, want)
				}
				shards[want.Index[dynamo.IndexDue]] = true
			}
		}
	}
	if len(shards) < 20 {
		t.Errorf("%d due partitions over 360 watches: the ids did not vary the shard", len(shards))
	}
}
