package capacity

import (
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/domain"
)

// The scenario table of docs/capacity.md quotes the model (herald capacity
// with the template's defaults): its whole-table and index write and read
// figures are the model's, rounded, so that the page cannot drift from the
// tool again (it said 26,015 write units for the campaign second long after
// the model printed 24,255).
func TestCapacityDocQuotesTheModel(t *testing.T) {
	res, doc := modelAndDoc(t, "../../docs/capacity.md")
	const header = "| scenario | table WRU/s | table RRU/s | gsi2 / gsi3 / gsi4 WRU/s |"
	start := strings.Index(doc, header)
	if start < 0 {
		t.Fatalf("docs/capacity.md: no table %q", header)
	}
	table, _, _ := strings.Cut(doc[start:], "\n\n")
	units := func(v float64) string { return commas(int64(math.Round(v))) }
	rows := []string{"average", "campaign second (2,000/s)", "08:00 release (3,200/s)"}
	if len(res.Peaks) < len(rows) {
		t.Fatalf("%d scenarios in the model, the page lists %d", len(res.Peaks), len(rows))
	}
	for i, name := range rows {
		p := res.Peaks[i]
		m := regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(name) + ` \| ([^|]+) \| ([^|]+) \| ([^|]+) \|`).FindStringSubmatch(table)
		if m == nil {
			t.Errorf("docs/capacity.md: no row %q", name)
			continue
		}
		got := []string{strings.Trim(m[1], " *"), strings.TrimSpace(m[2]), strings.TrimSpace(m[3])}
		want := []string{units(p.TableWriteUnitsPerSecond), units(p.TableReadUnitsPerSecond),
			units(p.IndexWriteUnitsPerSecond["gsi2"]) + " / " + units(p.IndexWriteUnitsPerSecond["gsi3"]) + " / " + units(p.IndexWriteUnitsPerSecond["gsi4"])}
		for j := range want {
			if got[j] != want[j] {
				t.Errorf("docs/capacity.md, row %q (%s), column %d: %q, the model prints %q", name, p.Scenario, j+2, got[j], want[j])
			}
		}
	}
	for _, quote := range []string{
		"`tableWriteUnitsPerSecond` " + units(res.TableWriteUnitsPerSecond),
		"`tableReadUnitsPerSecond`\n  " + units(res.TableReadUnitsPerSecond),
	} {
		if !strings.Contains(doc, quote) {
			t.Errorf("docs/capacity.md does not quote the model's %q", quote)
		}
	}
}

// commas writes n with thousands separators, as the docs do.
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// docs/benchmarks.md quotes the model beside the measured cost: the
// current table's model and storage columns are herald capacity's, and the
// summary line repeats that table (it said storage 1.81–2.08 a day after
// the model printed 1.18–1.57, and quoted the run before the table's).
func TestBenchmarksDocQuotesTheModel(t *testing.T) {
	res, doc := modelAndDoc(t, "../../docs/benchmarks.md")
	const header = "| kind | measured $/M | without events | without events and Lambda | model (`herald capacity`) | storage beside (model) | provider fee |"
	start := strings.Index(doc, header)
	if start < 0 {
		t.Fatalf("docs/benchmarks.md: no table %q", header)
	}
	table, _, _ := strings.Cut(doc[start:], "\n\n")
	measured := map[string]string{}
	usd := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\| ([^|]+) \\| [^|]+ \\| [^|]+ \\| ([^|]+) \\| ([^|]+) \\|").FindAllStringSubmatch(table, -1) {
		kind, model, storage := m[1], strings.TrimSpace(m[3]), strings.TrimSpace(m[4])
		measured[kind] = strings.TrimSpace(m[2])
		cost, ok := res.CostPerMillionUSD[kind]
		if !ok {
			if model != "—" || storage != "—" {
				t.Errorf("docs/benchmarks.md, %s: model %s, storage %s for a kind the model does not price (want —)", kind, model, storage)
			}
			continue
		}
		if model != usd(cost) || storage != usd(res.StoragePerMillionUSD[kind]) {
			t.Errorf("docs/benchmarks.md, %s: model %s, storage %s; herald capacity prints %s and %s", kind, model, storage, usd(cost), usd(res.StoragePerMillionUSD[kind]))
		}
	}
	if len(measured) < len(res.CostPerMillionUSD) {
		t.Fatalf("docs/benchmarks.md: %d rows in the cost table, the model prices %d kinds", len(measured), len(res.CostPerMillionUSD))
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range res.StoragePerMillionUSD {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	for _, quote := range []string{
		"email " + measured["email"] + ", SMS " + measured["sms"] + ", push " + measured["push"] + " measured",
		"the model, with the default `failures`: " + usd(res.CostPerMillionUSD["email"]) + " / " + usd(res.CostPerMillionUSD["sms"]) + " / " + usd(res.CostPerMillionUSD["push"]),
		"batch intake " + measured["email-batch"] + " / " + measured["sms-batch"] + " / " + measured["push-batch"],
		"storage over the retention beside (the model): " + usd(lo) + "–" + usd(hi),
	} {
		if !strings.Contains(doc, quote) {
			t.Errorf("docs/benchmarks.md's summary does not quote %q", quote)
		}
	}
}

// TestLatencyObjectiveTable: docs/capacity.md's latency objective table
// quotes the model's budget (herald capacity's latencyObjective), and the
// check fails an objective the path cannot meet (2 s for high).
func TestLatencyObjectiveTable(t *testing.T) {
	res, doc := modelAndDoc(t, "../../docs/capacity.md")
	for _, pr := range []string{"high", "normal"} {
		b, ok := res.Seed.Latency[pr]
		if !ok {
			t.Fatalf("no %s budget in the model", pr)
		}
		row := regexp.MustCompile(`(?m)^\| ` + pr + ` \| [^|]+ \| [^|]+ \| ([0-9.]+) \|$`).FindStringSubmatch(doc)
		if row == nil || row[1] != strconv.FormatFloat(b.Total, 'f', 2, 64) {
			t.Errorf("docs/capacity.md, %s's total: %v, the model's %.2f", pr, row, b.Total)
		}
		if b.Total > b.Objective {
			t.Errorf("%s: %.2f s over its objective %.2f s", pr, b.Total, b.Objective)
		}
	}
	for _, c := range res.Checks {
		if c.Name == CheckLatencyObjective && !c.OK {
			t.Errorf("latencyObjective fails with the defaults: %+v", c)
		}
	}
	l, err := LoadLimits("../../template.yaml", DefaultProfile())
	if err != nil {
		t.Fatal(err)
	}
	l.LatencyObjective[domain.PriorityHigh] = 2000
	var failing Result
	failing.Seed.Steady = res.Seed.Steady
	failing.checkLatencyObjective(l)
	if c := failing.Checks[len(failing.Checks)-1]; c.Name != CheckLatencyObjective || c.OK {
		t.Errorf("a 2 s high objective passes: %+v", c)
	}
}

// modelAndDoc is the model's run of the defaults and the page at path that
// quotes it (skipped with -short: the model runs).
func modelAndDoc(t *testing.T, path string) (Result, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the model")
	}
	res, err := defaultRun(t)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(raw)
}
