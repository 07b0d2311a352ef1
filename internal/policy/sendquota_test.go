package policy

import (
	"slices"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

func TestSendQuotaShards(t *testing.T) {
	for _, tc := range []struct {
		name           string
		q              SendQuota
		shards         int
		caps, bulkCaps []int
		bulkRate       int
	}{
		{"unlimited", SendQuota{Rate: 0, BulkShare: 60}, 0, nil, nil, 0},
		{"one shard", SendQuota{Rate: 20, BulkShare: 60}, 1, []int{20}, []int{12}, 12},
		{"exactly one shard's writes", SendQuota{Rate: 500, BulkShare: 60}, 1, []int{500}, []int{300}, 300},
		{"uneven split", SendQuota{Rate: 1001, BulkShare: 60}, 3, []int{334, 334, 333}, []int{200, 200, 199}, 599},
		{"campaign peak", SendQuota{Rate: 20000, BulkShare: 60}, 40, slices.Repeat([]int{500}, 40), slices.Repeat([]int{300}, 40), 12000},
		{"all bulk", SendQuota{Rate: 7, BulkShare: 100}, 1, []int{7}, []int{7}, 7},
		{"tiny share rounds down", SendQuota{Rate: 3, BulkShare: 10}, 1, []int{3}, []int{0}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.q.Shards(); got != tc.shards {
				t.Fatalf("Shards = %d, want %d", got, tc.shards)
			}
			var caps, bulk []int
			sum := 0
			for i := range tc.shards {
				caps = append(caps, tc.q.ShardCap(i))
				bulk = append(bulk, tc.q.ShardBulkCap(i))
				sum += tc.q.ShardCap(i)
				if tc.q.ShardCap(i) > MaxShardWrites {
					t.Errorf("shard %d cap %d over %d writes/s", i, tc.q.ShardCap(i), MaxShardWrites)
				}
				if tc.q.Cap(domain.PriorityHigh, i) != tc.q.ShardCap(i) || tc.q.Cap(domain.PriorityLow, i) != tc.q.ShardBulkCap(i) ||
					tc.q.Cap(domain.PriorityNormal, i) != tc.q.ShardBulkCap(i) {
					t.Errorf("Cap by priority wrong for shard %d", i)
				}
			}
			if !slices.Equal(caps, tc.caps) || !slices.Equal(bulk, tc.bulkCaps) {
				t.Errorf("caps %v bulk %v, want %v %v", caps, bulk, tc.caps, tc.bulkCaps)
			}
			if tc.shards > 0 && sum != tc.q.Rate {
				t.Errorf("caps add up to %d, want the rate %d", sum, tc.q.Rate)
			}
			if got := tc.q.BulkRate(); got != tc.bulkRate || got*100 > tc.q.Rate*tc.q.BulkShare {
				t.Errorf("BulkRate = %d, want %d (never over the share)", got, tc.bulkRate)
			}
			if tc.q.ShardCap(tc.shards) != 0 || tc.q.ShardCap(-1) != 0 {
				t.Error("a shard out of range must have no cap")
			}
		})
	}
}

func TestSendQuotaProbeOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rate  int
		p     domain.Priority
		start int
		want  []int
	}{
		{"unlimited probes nothing", 0, domain.PriorityHigh, 0, nil},
		{"one shard high", 20, domain.PriorityHigh, 0, []int{0}},
		{"one shard low", 20, domain.PriorityLow, 0, []int{0}},
		{"high wraps", 20000, domain.PriorityHigh, 39, []int{39, 0, 1}},
		{"bulk probes two", 20000, domain.PriorityNormal, 5, []int{5, 6}},
		{"two shards high", 1000, domain.PriorityHigh, 1, []int{1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SendQuota{Rate: tc.rate, BulkShare: 60}.ProbeOrder(tc.p, tc.start)
			if !slices.Equal(got, tc.want) {
				t.Errorf("ProbeOrder = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestQuotaDelayAndWindow(t *testing.T) {
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
	if got := WindowStart(at); !got.Equal(time.Date(2026, 12, 3, 8, 0, 7, 0, time.UTC)) {
		t.Errorf("WindowStart = %v", got)
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
