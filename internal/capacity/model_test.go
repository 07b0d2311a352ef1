package capacity

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
)

// measured is a cost benchmark run (internal/e2e/cost, COST_OUT), checked in.
type measured struct {
	Date string          `json:"date"`
	Cost map[string]Cost `json:"costPerMillionUSD"`
}

// TestModelAgreesWithMeasuredCost keeps the model honest: its cost per
// million of each kind is within 10% of what the benchmark measured on the
// local stack. Re-record with
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
	for _, k := range Kinds() {
		got, ok := m.Cost[k.Name]
		if !ok {
			t.Errorf("%s: not measured (%s)", k.Name, m.Date)
			continue
		}
		_, c, err := CostOf(k, ListPrices)
		if err != nil {
			t.Fatal(err)
		}
		diff := math.Abs(c.Total-got.Total) / got.Total
		t.Logf("%-24s model $%.2f/M, measured $%.2f/M (%+.1f%%)", k.Name, c.Total, got.Total, 100*(c.Total-got.Total)/got.Total)
		if diff > 0.10 {
			t.Errorf("%s: model $%.2f/M vs measured $%.2f/M: %.0f%% apart (model %+v; measured %+v)", k.Name, c.Total, got.Total, 100*diff, c, got)
		}
	}
}

func TestProfilePassesEveryLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 50,000 notifications")
	}
	res, err := Run(DefaultProfile())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range res.LimitsExceeded {
		t.Error(l)
	}
	if res.MaxPartitionWriteUnitsPerSecond <= 0 || res.MaxPartitionWriteUnitsPerSecond > PartitionWriteUnitsPerSecond {
		t.Errorf("max partition WCU/s %v", res.MaxPartitionWriteUnitsPerSecond)
	}
	// The due index takes the deferred share of the campaign on its shards.
	campaign := res.Peaks[1]
	if due := campaign.WriteUnits["gsi3"]; due.Units < 100 || due.Units > 400 {
		t.Errorf("busiest due partition %+v at 6,000 deferrals/s over 32 shards, want ~190", due)
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
	res, err := Run(p)
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
	res, err := Run(DefaultProfile())
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
	if res, err = Run(p); err != nil {
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

// TestProfileCreatesWriteTheProfilesIndex: each new profile writes its own
// keys-only gsi4 entry (1 WCU), which the segment-"all" scan reads.
func TestProfileCreatesWriteTheProfilesIndex(t *testing.T) {
	m, tl := newModel(), newTally()
	if err := m.createProfiles(tl, 10); err != nil {
		t.Fatal(err)
	}
	if tl.usage.WriteUnits["gsi4"] != 10 || len(tl.write["gsi4"]) != 10 || tl.usage.WriteUnits["table"] != 10 {
		t.Fatalf("10 profiles wrote %v units (%d gsi4 keys)", tl.usage.WriteUnits, len(tl.write["gsi4"]))
	}
}
