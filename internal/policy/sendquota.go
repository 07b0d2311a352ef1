package policy

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

// SendQuota is one channel's provider send-rate quota, shared by every worker
// of every Lambda instance. Over ANY QuotaSpan (5 s) as the provider sees it,
// whatever the phase, it sends at most Rate × QuotaSpan, of which low
// priority ("bulk": campaigns) at most BulkShare percent. High and normal
// priority may take all of it, and a reserve low priority can never consume
// is spread over every slot: high and normal never wait behind a campaign
// for quota.
//
// Counting is per QuotaSlot (200 ms) with per-slot caps spread evenly
// (SlotCap), so that any SpanSlots consecutive slots add up to the span's
// budget exactly. A send lands at the provider after its slot started, by at
// most QuotaLag (the worker refuses a token older than MaxTokenAge when it
// calls, ProviderAllowance covers the call): so a provider window of
// QuotaSpan only ever holds sends of slots starting within QuotaSpan +
// QuotaLag, which is what SpanSlots counts. The price is that the quota runs
// at QuotaSpan / (QuotaSpan + QuotaLag) of the rate (5/6).
//
// Each slot's count is sharded: Shards items, so no single DynamoDB item
// takes more than MaxShardWrites successful writes per second.
type SendQuota struct {
	// Rate is sends per second; 0 means unlimited (no quota request at all).
	Rate int
	// BulkShare is the percentage of Rate low priority may use.
	BulkShare int
}

const (
	// QuotaSlot is the counters' granularity. Slots are aligned to the Unix
	// epoch, so every worker of every instance agrees on them.
	QuotaSlot = 200 * time.Millisecond
	// QuotaSpan is the sliding window over which the quota and the bulk
	// share hold at the provider.
	QuotaSpan = 5 * time.Second
	// MaxTokenAge is the latest a worker may start the provider call after
	// the start of its token's slot; an older token is replaced by one of the
	// current slot (or the send deferred).
	MaxTokenAge = 600 * time.Millisecond
	// ProviderAllowance is how long a provider call may take from its start
	// to the provider's receipt without breaking the bound. A call that
	// outlasts it is logged ("send quota overrun"); nothing else can bound it.
	ProviderAllowance = 400 * time.Millisecond
	// QuotaLag bounds how long after its slot's start a send reaches the
	// provider.
	QuotaLag = MaxTokenAge + ProviderAllowance
	// HighQuotaWait is how long a high-priority send waits in the worker,
	// slot by slot, for the reserve before it is deferred through its queue
	// (whose delays are whole seconds).
	HighQuotaWait = time.Second
)

// SpanSlots is how many consecutive slots can feed one provider window of
// QuotaSpan: the slots starting within QuotaSpan + QuotaLag before its end.
// Any SpanSlots consecutive slots hold exactly the span's budget.
func SpanSlots() int {
	return int((QuotaSpan + QuotaLag + QuotaSlot - 1) / QuotaSlot)
}

// MaxShardWrites is the most sends one shard item admits per second: half of a
// DynamoDB partition's 1,000 writes/s, because a refused conditional write
// consumes a write too (a full shard keeps receiving probes).
const MaxShardWrites = 500

// DefaultBulkShare is BulkQuotaShare's default, in percent.
const DefaultBulkShare = 60

// Unlimited reports whether the channel has no quota.
func (q SendQuota) Unlimited() bool { return q.Rate <= 0 }

// Shards is the number of counter items per slot: ceil(Rate/MaxShardWrites).
func (q SendQuota) Shards() int {
	if q.Unlimited() {
		return 0
	}
	return (q.Rate + MaxShardWrites - 1) / MaxShardWrites
}

// spanSeconds is QuotaSpan in whole seconds (budgets are rates × seconds).
const spanSeconds = int(QuotaSpan / time.Second)

// BulkCapped reports whether priority p is capped at the bulk share: only
// low priority is. Normal and high share the whole quota, the reserve low
// cannot take included.
func BulkCapped(p domain.Priority) bool { return p == domain.PriorityLow }

// SpanBudget is the most sends of priority p's class in any QuotaSpan at the
// provider: Rate × QuotaSpan for high and normal (the whole quota),
// BulkShare of it, rounded down, for low.
func (q SendQuota) SpanBudget(p domain.Priority) int {
	if q.Unlimited() {
		return 0
	}
	if !BulkCapped(p) {
		return q.Rate * spanSeconds
	}
	return q.Rate * spanSeconds * q.BulkShare / 100
}

// ShardSpanBudget is shard i's part of SpanBudget(p); the parts add up to it
// exactly, and a shard's bulk part never exceeds its whole part.
func (q SendQuota) ShardSpanBudget(p domain.Priority, i int) int {
	return split(q.SpanBudget(p), q.Shards(), i)
}

// split is part i of total divided into n parts that differ by at most one.
func split(total, n, i int) int {
	if n <= 0 || i < 0 || i >= n {
		return 0
	}
	c := total / n
	if i < total%n {
		c++
	}
	return c
}

// SlotIndex numbers the slot containing t since the Unix epoch.
func SlotIndex(t time.Time) int64 { return t.UnixMilli() / QuotaSlot.Milliseconds() }

// SlotStart is the start of the quota slot containing t.
func SlotStart(t time.Time) time.Time {
	return time.UnixMilli(SlotIndex(t) * QuotaSlot.Milliseconds()).UTC()
}

// spread is slot k's part of budget spread evenly over every run of n
// slots: floor((j+1)·budget/n) − floor(j·budget/n) with j = k mod n. The
// parts of any n consecutive slots add up to budget exactly, and of any m
// consecutive slots to at most ceil(m·budget/n).
func spread(budget, n int, k int64) int {
	if budget <= 0 || n <= 0 {
		return 0
	}
	j := int(((k % int64(n)) + int64(n)) % int64(n))
	return (j+1)*budget/n - j*budget/n
}

// SlotCap is how far shard i's count in the slot starting at slot may go for
// priority p: the bulk budget spread over the slots for low; that plus the
// shard's reserve (its whole budget minus bulk's), spread the same way, for
// normal and high. Every priority shares one count, so low never takes more
// than its cap and normal and high always find the reserve.
func (q SendQuota) SlotCap(p domain.Priority, i int, slot time.Time) int {
	n, k := SpanSlots(), SlotIndex(slot)
	bulk := q.ShardSpanBudget(domain.PriorityLow, i)
	c := spread(bulk, n, k)
	if !BulkCapped(p) {
		c += spread(q.ShardSpanBudget(domain.PriorityHigh, i)-bulk, n, k)
	}
	return c
}

// EffectiveRate is the sends per second priority p's class gets at most, on
// average, once the lag allowance is paid: SpanBudget over the SpanSlots it
// is spread across.
func (q SendQuota) EffectiveRate(p domain.Priority) float64 {
	return float64(q.SpanBudget(p)) / (float64(SpanSlots()) * QuotaSlot.Seconds())
}

// Probes is how many shards a send tries before it is deferred: 2 (or
// every shard, when fewer), whatever the priority. Shards are picked at
// random, so one full shard while others have room is normal near the end of
// a slot; a bounded number of probes bounds the cost of an exhausted quota.
// A third probe for high priority changed nothing measurable
// (BenchmarkSendQuotaRequests: 1.171 requests a send either way, every high
// send admitted at 20,000/s, 1,001/s and 500/s), so there is one rule.
func (q SendQuota) Probes() int { return min(2, q.Shards()) }

// ProbeOrder is the shards to try, starting at start (a random shard):
// consecutive shards, wrapping around.
func (q SendQuota) ProbeOrder(start int) []int {
	n := q.Shards()
	if n == 0 {
		return nil
	}
	order := make([]int, q.Probes())
	for k := range order {
		order[k] = (start + k) % n
	}
	return order
}

// QuotaDelay is how long a message that found no quota stays invisible: SQS
// counts whole seconds, so 1 s at least; longer for bulk (1 or 2 s by jitter
// in [0,1)) so that deferred campaign traffic does not all return at once to
// refill the same slots.
func QuotaDelay(p domain.Priority, jitter float64) time.Duration {
	if p == domain.PriorityHigh {
		return time.Second
	}
	return time.Second + time.Duration(jitter*2)*time.Second
}

// MaxQuotaDelay is the longest QuotaDelay of priority p: how long after
// the quota had room a send that found none last may come back (2 s for
// low and normal, 1 s for high).
func MaxQuotaDelay(p domain.Priority) time.Duration {
	return QuotaDelay(p, math.Nextafter(1, 0))
}

// SendQuotaFromEnv reads SEND_RATE (sends per second, 0 or unset:
// unlimited) and BULK_QUOTA_SHARE (percent, 1–100; unset: 60).
func SendQuotaFromEnv(getenv func(string) string) (SendQuota, error) {
	q := SendQuota{BulkShare: DefaultBulkShare}
	if v := getenv("SEND_RATE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return q, fmt.Errorf("SEND_RATE %q: want a non-negative integer", v)
		}
		q.Rate = n
	}
	if v := getenv("BULK_QUOTA_SHARE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return q, fmt.Errorf("BULK_QUOTA_SHARE %q: want an integer percentage from 1 to 100", v)
		}
		q.BulkShare = n
	}
	return q, nil
}
