package policy

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

func TestSendQuotaShards(t *testing.T) {
	for _, tc := range []struct {
		name             string
		q                SendQuota
		shards           int
		spans, bulkSpans []int // per shard, over QuotaSpan
		bulkSpan         int
	}{
		{"unlimited", SendQuota{Rate: 0, BulkShare: 60}, 0, nil, nil, 0},
		{"one shard", SendQuota{Rate: 20, BulkShare: 60}, 1, []int{100}, []int{60}, 60},
		{"exactly one shard's writes", SendQuota{Rate: 500, BulkShare: 60}, 1, []int{2500}, []int{1500}, 1500},
		{"uneven split", SendQuota{Rate: 1001, BulkShare: 60}, 3, []int{1669, 1668, 1668}, []int{1001, 1001, 1001}, 3003},
		{"campaign peak", SendQuota{Rate: 20000, BulkShare: 60}, 40, slices.Repeat([]int{2500}, 40), slices.Repeat([]int{1500}, 40), 60000},
		{"all bulk", SendQuota{Rate: 7, BulkShare: 100}, 1, []int{35}, []int{35}, 35},
		{"tiny share rounds down", SendQuota{Rate: 1, BulkShare: 10}, 1, []int{5}, []int{0}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.q.Shards(); got != tc.shards {
				t.Fatalf("Shards = %d, want %d", got, tc.shards)
			}
			var spans, bulk []int
			sum := 0
			for i := range tc.shards {
				spans = append(spans, tc.q.ShardSpanBudget(domain.PriorityHigh, i))
				bulk = append(bulk, tc.q.ShardSpanBudget(domain.PriorityLow, i))
				sum += spans[i]
				if spans[i] > MaxShardWrites*spanSeconds {
					t.Errorf("shard %d budget %d over %d writes/s", i, spans[i], MaxShardWrites)
				}
				if bulk[i] > spans[i] {
					t.Errorf("shard %d: bulk budget %d over its whole budget %d", i, bulk[i], spans[i])
				}
			}
			if !slices.Equal(spans, tc.spans) || !slices.Equal(bulk, tc.bulkSpans) {
				t.Errorf("span budgets %v bulk %v, want %v %v", spans, bulk, tc.spans, tc.bulkSpans)
			}
			if tc.shards > 0 && sum != tc.q.Rate*spanSeconds {
				t.Errorf("shard budgets add up to %d, want rate × span %d", sum, tc.q.Rate*spanSeconds)
			}
			if got := tc.q.SpanBudget(domain.PriorityLow); got != tc.bulkSpan || got*100 > tc.q.Rate*spanSeconds*tc.q.BulkShare {
				t.Errorf("bulk SpanBudget = %d, want %d (never over the share)", got, tc.bulkSpan)
			}
			if tc.q.ShardSpanBudget(domain.PriorityHigh, tc.shards) != 0 || tc.q.ShardSpanBudget(domain.PriorityHigh, -1) != 0 {
				t.Error("a shard out of range must have no budget")
			}
		})
	}
}

// slotCaps is every shard's cap summed, per slot from first, for n slots.
func slotCaps(q SendQuota, p domain.Priority, first int64, n int) []int {
	out := make([]int, n)
	for k := range out {
		slot := time.UnixMilli((first + int64(k)) * QuotaSlot.Milliseconds())
		for i := range q.Shards() {
			out[k] += q.SlotCap(p, i, slot)
		}
	}
	return out
}

// worstProviderWindow is the most sends an adversary can land in one window
// of length span at the provider when every slot's sends are all admitted
// (caps[k] in slot first+k) and each lands anywhere from its slot's start to
// lag after it: the window [a, a+span) receives every slot starting in
// [a-lag, a+span). Every start a over the caps' range, to the millisecond.
func worstProviderWindow(caps []int, lag, span time.Duration) int {
	slotMs := QuotaSlot.Milliseconds()
	total := int64(len(caps)) * slotMs
	worst := 0
	for a := lag.Milliseconds(); a+span.Milliseconds() <= total; a++ {
		n := 0
		for k, c := range caps {
			start := int64(k) * slotMs
			if start >= a-lag.Milliseconds() && start < a+span.Milliseconds() {
				n += c
			}
		}
		worst = max(worst, n)
	}
	return worst
}

// TestSlotCapsBoundEverySlidingWindow: with every slot filled to its caps and
// each send landing at the worst moment within QuotaLag of its slot's start,
// no provider window of QuotaSpan, at any phase, holds more than the span's
// budget (bulk, and bulk + high); the budget is reached (the spreading wastes
// nothing), and the reserve is in every run of slots high may wait across.
func TestSlotCapsBoundEverySlidingWindow(t *testing.T) {
	n := SpanSlots()
	if n != 30 {
		t.Fatalf("SpanSlots = %d, want 30 ((5 s + 1 s lag) / 200 ms)", n)
	}
	first := SlotIndex(time.Date(2026, 12, 3, 13, 0, 0, 0, time.UTC)) + 7 // an arbitrary phase
	for _, q := range []SendQuota{
		{Rate: 20, BulkShare: 60}, {Rate: 40, BulkShare: 60}, {Rate: 1, BulkShare: 60}, {Rate: 7, BulkShare: 100},
		{Rate: 13, BulkShare: 33}, {Rate: 1001, BulkShare: 60}, {Rate: 20000, BulkShare: 60}, {Rate: 3, BulkShare: 1},
	} {
		t.Run(strconv.Itoa(q.Rate)+"/"+strconv.Itoa(q.BulkShare), func(t *testing.T) {
			bulk := slotCaps(q, domain.PriorityLow, first, 3*n)
			total := slotCaps(q, domain.PriorityHigh, first, 3*n)
			for _, c := range []struct {
				what string
				caps []int
				p    domain.Priority
			}{{"bulk", bulk, domain.PriorityLow}, {"bulk + high", total, domain.PriorityHigh}} {
				budget := q.SpanBudget(c.p)
				if got := worstProviderWindow(c.caps, QuotaLag, QuotaSpan); got != budget {
					t.Errorf("%s: worst %s provider window holds %d, want exactly the budget %d", c.what, QuotaSpan, got, budget)
				}
				// Sends landing at once (no lag) are within the budget too.
				if got := worstProviderWindow(c.caps, 0, QuotaSpan); got > budget {
					t.Errorf("%s: %d in a window without lag, over %d", c.what, got, budget)
				}
			}
			reserve := q.SpanBudget(domain.PriorityHigh) - q.SpanBudget(domain.PriorityLow)
			for k := range total {
				if total[k] < bulk[k] {
					t.Fatalf("slot %d: high cap %d below bulk's %d", k, total[k], bulk[k])
				}
				// Any run of m slots holds at least floor(m·reserve/n) for
				// high, less one per shard for each shard's own rounding.
				got := 0
				for m := 1; k+m <= len(total) && m <= n; m++ {
					got += total[k+m-1] - bulk[k+m-1]
					if want := m*reserve/n - q.Shards(); got < want {
						t.Fatalf("slots %d..%d: reserve %d, want ≥ %d", k, k+m-1, got, want)
					}
				}
			}
		})
	}
}

// TestLagIsWhatTheSlotsPayFor: spreading the budget over the span's own slots
// (25, as if sends landed when admitted) breaks the bound once sends land up
// to QuotaLag late, which is why SpanSlots counts the lag: the checker above
// catches an over-admitting spread.
func TestLagIsWhatTheSlotsPayFor(t *testing.T) {
	const budget = 60 // 20/s, 60 %
	naive := int(QuotaSpan / QuotaSlot)
	caps := make([]int, 3*naive)
	for k := range caps {
		caps[k] = spread(budget, naive, int64(k))
	}
	if got := worstProviderWindow(caps, QuotaLag, QuotaSpan); got <= budget {
		t.Fatalf("naive spread: worst window %d, want over %d (the checker must see the lag)", got, budget)
	}
	if got := worstProviderWindow(caps, 0, QuotaSpan); got != budget {
		t.Errorf("naive spread without lag: %d, want %d", got, budget)
	}
}

// TestAdmissionSequencesHoldTheShare replays random admission sequences
// through the counter's conditional semantics (the count of a shard's slot
// item, bulk admitted below its cap, high below the whole cap): bursts of
// bulk and high in random order over 40 s, each admitted send landing at
// the provider a random lag within QuotaLag after its slot's start. Every
// sliding QuotaSpan at the provider holds at most the budgets, measured to
// the millisecond and in whole seconds (as the SES emulator stamps).
func TestAdmissionSequencesHoldTheShare(t *testing.T) {
	for _, q := range []SendQuota{{Rate: 20, BulkShare: 60}, {Rate: 40, BulkShare: 60}, {Rate: 1200, BulkShare: 75}} {
		t.Run(strconv.Itoa(q.Rate), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(q.Rate), 15))
			counts := map[[2]int64]int{}    // (shard, slot) → count
			var bulkAt, allAt []int64       // provider receipt, ms since start
			var bulkSlots, allSlots []int64 // the admitting slots' starts
			start := time.Date(2026, 12, 3, 13, 0, 0, 0, time.UTC)
			const runMs = 40_000
			for ms := int64(0); ms < runMs; ms += 5 {
				// Offered: several times the rate in bursts; bulk alone for
				// the first half (it fills the bulk budget), then half high
				// (high fills the whole quota).
				for range rng.IntN(q.Rate*3/100 + 2) {
					p := domain.PriorityLow
					if ms >= runMs/2 && rng.IntN(2) == 0 {
						p = domain.PriorityHigh
					}
					now := start.Add(time.Duration(ms) * time.Millisecond)
					slot := SlotStart(now)
					for _, shard := range q.ProbeOrder(rng.IntN(q.Shards())) {
						k := [2]int64{int64(shard), SlotIndex(slot)}
						if counts[k] >= q.SlotCap(p, shard, slot) {
							continue
						}
						counts[k]++
						// The lag: none, the most allowed, or between.
						lag := [3]int64{0, QuotaLag.Milliseconds(), rng.Int64N(QuotaLag.Milliseconds() + 1)}[rng.IntN(3)]
						from := slot.Sub(start).Milliseconds()
						allAt, allSlots = append(allAt, from+lag), append(allSlots, from)
						if p != domain.PriorityHigh {
							bulkAt, bulkSlots = append(bulkAt, from+lag), append(bulkSlots, from)
						}
						break
					}
				}
			}
			for _, c := range []struct {
				what      string
				at, slots []int64
				budget    int
			}{{"bulk", bulkAt, bulkSlots, q.SpanBudget(domain.PriorityLow)}, {"all", allAt, allSlots, q.SpanBudget(domain.PriorityHigh)}} {
				slices.Sort(c.at)
				worst, worstSec := maxInWindow(c.at, QuotaSpan.Milliseconds()), maxInWindow(seconds(c.at), QuotaSpan.Milliseconds())
				if worst > c.budget || worstSec > c.budget {
					t.Errorf("%s: %d in some %s (%d by whole seconds), over %d", c.what, worst, QuotaSpan, worstSec, c.budget)
				}
				// The offered load filled the quota: some SpanSlots run of
				// slots admitted the whole budget (else this proves nothing).
				if got := maxInWindow(c.slots, int64(SpanSlots())*QuotaSlot.Milliseconds()); got != c.budget {
					t.Errorf("%s: at most %d admitted in %d slots, want the budget %d: the sequence never saturated the quota", c.what, got, SpanSlots(), c.budget)
				}
				t.Logf("%s: %d sends, at most %d in any %s at the provider (budget %d)", c.what, len(c.at), worst, QuotaSpan, c.budget)
			}
		})
	}
}

// maxInWindow is the most sorted times in any half-open window of width w.
func maxInWindow(at []int64, w int64) int {
	worst, lo := 0, 0
	for hi := range at {
		for at[hi]-at[lo] >= w {
			lo++
		}
		worst = max(worst, hi-lo+1)
	}
	return worst
}

// seconds truncates millisecond stamps to whole seconds (in ms).
func seconds(at []int64) []int64 {
	out := make([]int64, len(at))
	for i, a := range at {
		out[i] = a / 1000 * 1000
	}
	return out
}

func TestSendQuotaProbeOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rate  int
		start int
		want  []int
	}{
		{"unlimited probes nothing", 0, 0, nil},
		{"one shard", 20, 0, []int{0}},
		{"two probes, wrapping", 20000, 39, []int{39, 0}},
		{"two probes", 20000, 5, []int{5, 6}},
		{"two shards", 1000, 1, []int{1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SendQuota{Rate: tc.rate, BulkShare: 60}.ProbeOrder(tc.start)
			if !slices.Equal(got, tc.want) {
				t.Errorf("ProbeOrder = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestOnlyLowIsCappedAtTheBulkShare: low priority (campaigns) is held to
// BulkShare; normal shares the whole quota with high, in the span and in
// every slot, and the reserve low cannot take is there for both.
func TestOnlyLowIsCappedAtTheBulkShare(t *testing.T) {
	q := SendQuota{Rate: 500, BulkShare: 60}
	if got := q.SpanBudget(domain.PriorityLow); got != 1500 {
		t.Errorf("low span budget %d, want 60 %% of 500/s × 5 s = 1,500", got)
	}
	for _, p := range []domain.Priority{domain.PriorityNormal, domain.PriorityHigh} {
		if got := q.SpanBudget(p); got != 2500 {
			t.Errorf("%s span budget %d, want the whole 500/s × 5 s = 2,500", p, got)
		}
		if BulkCapped(p) {
			t.Errorf("%s is capped at the bulk share", p)
		}
	}
	first := SlotIndex(time.Date(2026, 12, 3, 13, 0, 0, 0, time.UTC))
	low, normal, high := slotCaps(q, domain.PriorityLow, first, SpanSlots()), slotCaps(q, domain.PriorityNormal, first, SpanSlots()), slotCaps(q, domain.PriorityHigh, first, SpanSlots())
	if !slices.Equal(normal, high) {
		t.Errorf("slot caps: normal %v, high %v, want the same", normal, high)
	}
	sum := func(xs []int) (n int) {
		for _, x := range xs {
			n += x
		}
		return n
	}
	if sum(low) != 1500 || sum(normal) != 2500 {
		t.Errorf("caps over %d slots: low %d, normal %d, want 1,500 and 2,500", SpanSlots(), sum(low), sum(normal))
	}
	// The effective rates (SpanSlots spans the lag): 5/6 of nominal.
	if got := q.EffectiveRate(domain.PriorityLow); got != 250 {
		t.Errorf("low effective rate %v, want 250/s (1,500 over 6 s)", got)
	}
	if got := q.EffectiveRate(domain.PriorityNormal); math.Abs(got-2500.0/6) > 1e-9 {
		t.Errorf("normal effective rate %v, want 416.7/s (2,500 over 6 s)", got)
	}
}

func TestQuotaDelayAndSlot(t *testing.T) {
	for _, tc := range []struct {
		p      domain.Priority
		jitter float64
		want   time.Duration
	}{
		{domain.PriorityHigh, 0.99, time.Second},
		{domain.PriorityLow, 0, time.Second},
		{domain.PriorityLow, 0.49, time.Second},
		{domain.PriorityNormal, 0.5, 2 * time.Second},
		{domain.PriorityLow, 0.999, 2 * time.Second},
	} {
		if got := QuotaDelay(tc.p, tc.jitter); got != tc.want {
			t.Errorf("QuotaDelay(%s, %v) = %v, want %v", tc.p, tc.jitter, got, tc.want)
		}
	}
	at := time.Date(2026, 12, 3, 9, 0, 7, 999_000_000, time.FixedZone("x", 3600))
	if got := SlotStart(at); !got.Equal(time.Date(2026, 12, 3, 8, 0, 7, 800_000_000, time.UTC)) {
		t.Errorf("SlotStart = %v", got)
	}
	if got := SlotIndex(at.Add(time.Millisecond)) - SlotIndex(at); got != 1 {
		t.Errorf("the next millisecond is %d slots later, want 1", got)
	}
	if got, want := (SendQuota{Rate: 40, BulkShare: 60}).EffectiveRate(domain.PriorityLow), 20.0; got != want {
		t.Errorf("bulk EffectiveRate at 40/s = %v, want %v (120 per 6 s)", got, want)
	}
}

func TestSendQuotaFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    SendQuota
		wantErr bool
	}{
		{"unset is unlimited with the default share", nil, SendQuota{Rate: 0, BulkShare: 60}, false},
		{"set", map[string]string{"SEND_RATE": "20", "BULK_QUOTA_SHARE": "75"}, SendQuota{Rate: 20, BulkShare: 75}, false},
		{"zero rate", map[string]string{"SEND_RATE": "0"}, SendQuota{Rate: 0, BulkShare: 60}, false},
		{"negative rate", map[string]string{"SEND_RATE": "-1"}, SendQuota{}, true},
		{"text rate", map[string]string{"SEND_RATE": "fast"}, SendQuota{}, true},
		{"share zero", map[string]string{"BULK_QUOTA_SHARE": "0"}, SendQuota{}, true},
		{"share over 100", map[string]string{"BULK_QUOTA_SHARE": "101"}, SendQuota{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SendQuotaFromEnv(func(k string) string { return tc.env[k] })
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if !tc.wantErr && got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
