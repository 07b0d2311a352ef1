// Package release tests the sharded due index end to end on the local stack:
// deliveries deferred to the same instant spread over the index's shards, and
// the scheduler's tick fans their release out through the release queue.
// It moves the stack's clock, so it has a stack of its own.
package release

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
)

func TestMain(m *testing.M) {
	if slices.Contains(os.Args[1:], "-test.run=^$") { // make bench: no benchmarks here
		os.Exit(m.Run())
	}
	stacktest.Main(m, devstack.Config{ScheduleInterval: time.Second})
}

// DueEnv sets how many deliveries fall due at once: 320 in make test, where
// every shard still holds some (all 32 but one in a thousand runs) and none
// more than 3× the mean (one in a million), each one page of the release (its
// pages hold 100); make bench runs 1,000, the size docs/benchmarks.md reports.
const DueEnv = "HERALD_RELEASE_DUE"

func population(t *testing.T) int {
	n := 320
	if v := os.Getenv(DueEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 320 || n > 10000 {
			t.Fatalf("%s=%q: want 320 to 10,000 (fewer and the shard spread is left to chance)", DueEnv, v)
		}
	}
	return n
}

// TestThousandDueAtOnceAreReleasedOnce defers many single-channel emails
// (DueEnv: 320, 1,000 in make bench) to the same instant, moves the clock
// past it, and checks that every one is sent exactly once, within a bounded
// time.
func TestThousandDueAtOnceAreReleasedOnce(t *testing.T) {
	n := population(t)
	t.Logf("%d due at once (%s)", n, DueEnv)
	st := stacktest.Stack(t)
	obs := stacktest.NewStores(dynamo.New(dynamodb.NewFromConfig(st.AWS), st.Resources.Table))
	run := stacktest.UniqueID("rel")
	sendAt := st.Clock.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	users := make([]string, n)
	for i := range users {
		users[i] = fmt.Sprintf("%s-%04d", run, i)
	}

	// Intake: batches of up to 100, five at a time. An item the API had no
	// time left for answers 5xx; like any caller, retry it with its key.
	ids := make([]string, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 5)
	for b := 0; b < n; b += 100 {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			pending := make([]int, 0, 100)
			for i := b; i < min(b+100, n); i++ {
				pending = append(pending, i)
			}
			for attempt := 1; len(pending) > 0; attempt++ {
				var items []string
				for _, i := range pending {
					items = append(items, fmt.Sprintf(`{"idempotencyKey":%q,"type":"reservation.approved","priority":"high","channels":["email"],"sendAt":%q,`+
						`"recipient":{"userId":%q,"email":"%s@example.com"},"data":{"reservationUrl":"https://example.com/r/%d"}}`,
						users[i], sendAt.Format(time.RFC3339), users[i], users[i], i))
				}
				resp := stacktest.Do(t, http.MethodPost, "/v1/notifications/batch", `{"notifications":[`+strings.Join(items, ",")+`]}`)
				var out struct {
					Results []struct {
						Index, Status int
						ID            string
					}
				}
				resp.JSON(t, &out)
				var retry []int
				for _, r := range out.Results {
					i := pending[r.Index]
					switch {
					case r.Status == http.StatusAccepted:
						ids[i] = r.ID
					case r.Status >= 500 && attempt < 5:
						retry = append(retry, i)
					default:
						t.Errorf("batch item %d = %d (%s)", i, r.Status, resp.Body)
					}
				}
				if len(retry) > 0 {
					t.Logf("attempt %d: %d items of batch %d to retry", attempt, len(retry), b/100)
				}
				pending = retry
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// Every delivery is deferred, spread over the index's shards.
	byShard := map[int]int{}
	waitAll(t, obs, ids, 2*time.Minute, "deferred", func(d *domain.Delivery) bool { return d.Status == domain.StatusDeferred })
	for _, id := range ids {
		p := dynamo.DuePartitionOf(sendAt, id, domain.ChannelEmail)
		byShard[p.Shard]++
	}
	mean := n / dynamo.DueShards
	for shard, c := range byShard {
		if c > 3*mean {
			t.Errorf("shard %d holds %d of %d, more than 3× the mean %d", shard, c, n, mean)
		}
	}
	if len(byShard) < dynamo.DueShards*3/4 {
		t.Errorf("deliveries in %d of %d shards", len(byShard), dynamo.DueShards)
	}
	if got := stacktest.Emails(t); countTo(got, run) != 0 {
		t.Fatalf("%d emails before the due time", countTo(got, run))
	}

	// Due: the ticks fan the release out; all are sent within the bound.
	start := time.Now()
	st.Clock.Advance(sendAt.Sub(st.Clock.Now()) + time.Second)
	defer st.Clock.Advance(-2 * time.Hour)
	waitAll(t, obs, ids, 4*time.Minute, "sent", func(d *domain.Delivery) bool { return d.Status == domain.StatusSent })
	t.Logf("%d deferred deliveries released and sent in %v", n, time.Since(start).Round(time.Millisecond))

	// Exactly once: one email per user, and no delivery needed a second attempt.
	per := map[string]int{}
	for _, e := range stacktest.Emails(t) {
		for _, to := range e.Destination.To {
			if strings.HasPrefix(to, run+"-") {
				per[to]++
			}
		}
	}
	if len(per) != n {
		t.Errorf("%d users got mail, want %d", len(per), n)
	}
	for to, c := range per {
		if c != 1 {
			t.Errorf("%s got %d emails", to, c)
		}
	}
}

func countTo(emails []stacktest.Email, prefix string) int {
	c := 0
	for _, e := range emails {
		for _, to := range e.Destination.To {
			if strings.HasPrefix(to, prefix+"-") {
				c++
			}
		}
	}
	return c
}

// waitAll polls every delivery until done holds for all of them.
func waitAll(t *testing.T, obs *stacktest.Stores, ids []string, timeout time.Duration, what string, done func(*domain.Delivery) bool) {
	t.Helper()
	pending := slices.Clone(ids)
	deadline := time.Now().Add(timeout)
	for len(pending) > 0 {
		if time.Now().After(deadline) {
			d, err := obs.GetDelivery(context.Background(), pending[0], domain.ChannelEmail)
			t.Fatalf("%d of %d not %s after %v; e.g. %+v %v", len(pending), len(ids), what, timeout, d, err)
		}
		var mu sync.Mutex
		var next []string
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		for _, id := range pending {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				d, err := obs.GetDelivery(context.Background(), id, domain.ChannelEmail)
				if err != nil || !done(d) {
					mu.Lock()
					next = append(next, id)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		pending = next
		if len(pending) > 0 {
			time.Sleep(500 * time.Millisecond)
		}
	}
}
