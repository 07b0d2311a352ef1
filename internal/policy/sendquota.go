package policy

import (
	"fmt"
	"strconv"
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

// SendQuota is one channel's provider send-rate quota, shared by every worker
// of every Lambda instance: at most Rate sends in each QuotaWindow, of which
// low and normal priority ("bulk") may take at most BulkShare percent. High
// priority may take all of it, so the remainder is a reserve bulk traffic can
// never consume: high priority never waits behind bulk for quota.
//
// The window's count is sharded: Shards items, each taking at most
// ShardCap(i) sends (bulk: ShardBulkCap(i)), so no single DynamoDB item takes
// more than MaxShardWrites successful writes per second.
type SendQuota struct {
	// Rate is sends per second; 0 means unlimited (no quota request at all).
	Rate int
	// BulkShare is the percentage of Rate low and normal priority may use.
	BulkShare int
}

// QuotaWindow is the length of a quota window. Windows are aligned to the
// Unix epoch, so every worker of every instance agrees on them.
const QuotaWindow = time.Second

// MaxShardWrites is the most sends one shard item admits per window: half of a
// DynamoDB partition's 1,000 writes/s, because a refused conditional write
// consumes a write too (a full shard keeps receiving probes).
const MaxShardWrites = 500

// DefaultBulkShare is BulkQuotaShare's default, in percent.
const DefaultBulkShare = 60

// Unlimited reports whether the channel has no quota.
func (q SendQuota) Unlimited() bool { return q.Rate <= 0 }

// Shards is the number of counter items per window: ceil(Rate/MaxShardWrites).
func (q SendQuota) Shards() int {
	if q.Unlimited() {
		return 0
	}
	return (q.Rate + MaxShardWrites - 1) / MaxShardWrites
}

// ShardCap is shard i's part of Rate; the parts add up to Rate exactly.
func (q SendQuota) ShardCap(i int) int {
	n := q.Shards()
	if n == 0 || i < 0 || i >= n {
		return 0
	}
	c := q.Rate / n
	if i < q.Rate%n {
		c++
	}
	return c
}

// ShardBulkCap is how much of shard i bulk traffic may take: its cap times
// BulkShare, rounded down, so the bulk total never exceeds BulkShare of Rate.
func (q SendQuota) ShardBulkCap(i int) int { return q.ShardCap(i) * q.BulkShare / 100 }

// Cap is shard i's cap for a priority: the whole shard for high, the bulk
// share for the rest.
func (q SendQuota) Cap(p domain.Priority, i int) int {
	if p == domain.PriorityHigh {
		return q.ShardCap(i)
	}
	return q.ShardBulkCap(i)
}

// BulkRate is the most bulk sends per window: the sum of the shards' bulk caps.
func (q SendQuota) BulkRate() int {
	total := 0
	for i := range q.Shards() {
		total += q.ShardBulkCap(i)
	}
	return total
}

// Probes is how many shards a send tries before it is deferred: every shard
// for high priority up to 3, 2 for bulk. Shards are picked at random, so one
// full shard while others have room is normal near the end of a window; a
// bounded number of probes bounds the cost of an exhausted quota.
func (q SendQuota) Probes(p domain.Priority) int {
	want := 2
	if p == domain.PriorityHigh {
		want = 3
	}
	return min(want, q.Shards())
}

// ProbeOrder is the shards to try, starting at start (a random shard):
// consecutive shards, wrapping around.
func (q SendQuota) ProbeOrder(p domain.Priority, start int) []int {
	n := q.Shards()
	if n == 0 {
		return nil
	}
	order := make([]int, q.Probes(p))
	for k := range order {
		order[k] = (start + k) % n
	}
	return order
}

// WindowStart is the start of the quota window containing t.
func WindowStart(t time.Time) time.Time { return t.UTC().Truncate(QuotaWindow) }

// QuotaDelay is how long a message that found no quota stays invisible: to
// the next window at least (SQS counts whole seconds, so 1 s), longer for bulk
// (1 or 2 s by jitter in [0,1)) so that deferred campaign traffic
// does not all return at once to refill the same window.
func QuotaDelay(p domain.Priority, jitter float64) time.Duration {
	if p == domain.PriorityHigh {
		return QuotaWindow
	}
	return QuotaWindow + time.Duration(jitter*2)*time.Second
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
