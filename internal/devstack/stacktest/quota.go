package stacktest

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/policy"
)

// CheckBulkWithinQuota asserts the send quota's promise as the provider
// sees it: bulk (low priority) sends, counted per whole second of
// the emulator's receive stamps in perSecond, stay within q's bulk budget
// over every window of one or more quota spans, plus the bulk sends the
// workers logged as reaching the provider later than the quota allows for
// ("send quota overrun" lines in logs; none on an idle machine: nothing in
// the code can bound a provider call's latency). A window of whole emulator
// seconds [s, s+w) is a w-second window of real time. It returns the busiest
// span's count, so a test can check the quota bound at all.
func CheckBulkWithinQuota(t testing.TB, perSecond map[int64]int, q policy.SendQuota, logs *LogBuffer) (peakSpan int) {
	t.Helper()
	budget := q.SpanBudget(domain.PriorityLow)
	span := int64(policy.QuotaSpan / time.Second)
	secs := slices.Sorted(maps.Keys(perSecond))
	busiest := func(w int64) int {
		best := 0
		for _, from := range secs {
			n := 0
			for s := from; s < from+w; s++ {
				n += perSecond[s]
			}
			best = max(best, n)
		}
		return best
	}
	overruns := bulkOverruns(t, logs)
	t.Logf("bulk sends that outlasted the lag allowance (send quota overrun): %d", overruns)
	for _, w := range []int64{1, span, 2 * span} {
		got := busiest(w)
		t.Logf("bulk: max %d sends in any %d s by the emulator's stamps (budget %d per %s, %.0f/s on average)", got, w, budget, policy.QuotaSpan, q.EffectiveRate(domain.PriorityLow))
		if spans := w / span; spans > 0 && got > int(spans)*budget+overruns {
			t.Errorf("bulk sent %d in %d s, over %d (%d %% of %d/s over every %s) + %d overrun sends", got, w, int(spans)*budget, q.BulkShare, q.Rate, policy.QuotaSpan, overruns)
		}
	}
	return busiest(span)
}

// bulkOverruns counts the workers' "send quota overrun" lines for bulk
// (low-priority) sends.
func bulkOverruns(t testing.TB, logs *LogBuffer) int {
	t.Helper()
	n := 0
	for line := range strings.Lines(logs.String()) {
		if !strings.Contains(line, `"send quota overrun"`) {
			continue
		}
		var l struct{ Priority string }
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("overrun line %q: %v", line, err)
		}
		if policy.BulkCapped(domain.Priority(l.Priority)) {
			n++
		}
	}
	return n
}
