package dynamo_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/policy"
)

// TestTakeSendTokenHoldsItsCap: concurrent takers on one shard of one slot
// — bulk gets exactly its cap, high exactly the rest; another shard and the
// next slot count apart; the item expires.
func TestTakeSendTokenHoldsItsCap(t *testing.T) {
	s, db, _ := newStore(t)
	ctx := context.Background()
	const bulkCap, highCap = 12, 20 // the caps the worker would pass
	// A slot of its own: the seconds since t0 make each run's keys unique.
	window := t0.Add(time.Duration(seq.Add(1)*1000+time.Now().UnixNano()%1000) * time.Second)
	take := func(shard int, p domain.Priority, at time.Time, n int) int {
		var ok atomic.Int32
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				limit := bulkCap
				if p == domain.PriorityHigh {
					limit = highCap
				}
				got, err := s.TakeSendToken(ctx, domain.ChannelPush, shard, at, policy.QuotaSlot, limit)
				if err != nil {
					t.Error(err)
				}
				if got {
					ok.Add(1)
				}
			})
		}
		wg.Wait()
		return int(ok.Load())
	}
	for _, tc := range []struct {
		name  string
		shard int
		p     domain.Priority
		at    time.Time
		n     int
		want  int
	}{
		{"bulk stops at its share", 0, domain.PriorityLow, window, 30, 12},
		{"high takes the reserve and no more", 0, domain.PriorityHigh, window, 30, 8},
		{"bulk finds the shard full", 0, domain.PriorityNormal, window, 5, 0},
		{"another shard counts apart", 1, domain.PriorityHigh, window, 25, 20},
		{"the next slot starts empty", 0, domain.PriorityLow, window.Add(policy.QuotaSlot), 15, 12},
	} {
		if got := take(tc.shard, tc.p, tc.at, tc.n); got != tc.want {
			t.Errorf("%s: %d of %d admitted, want %d", tc.name, got, tc.n, tc.want)
		}
	}
	pk, sk := dynamo.SendQuotaKey(domain.ChannelPush, 0, window)
	item := rawItem(t, db, s.Name(), pk, sk)
	count, _ := item["count"].(*types.AttributeValueMemberN)
	ttl, _ := item["ttl"].(*types.AttributeValueMemberN)
	if count == nil || count.Value != "20" {
		t.Errorf("count %v, want 20", item["count"])
	}
	if want := strconv.FormatInt(window.Add(policy.QuotaSlot+10*time.Minute).Unix(), 10); ttl == nil || ttl.Value != want {
		t.Errorf("ttl %v, want %s (10 min after the slot)", item["ttl"], want)
	}
	if _, sk := dynamo.SendQuotaKey(domain.ChannelPush, 0, window.Add(policy.QuotaSlot)); sk != "W#"+strconv.FormatInt(window.Add(policy.QuotaSlot).UnixMilli(), 10) {
		t.Errorf("slot key %s: want the slot's start in Unix milliseconds", sk)
	}
	if got, err := s.TakeSendToken(ctx, domain.ChannelPush, 0, window, policy.QuotaSlot, 0); got || err != nil {
		t.Errorf("limit 0 = %v, %v; want refused without a request", got, err)
	}
}
