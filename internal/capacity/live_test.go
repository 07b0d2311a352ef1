package capacity

import (
	"strings"
	"testing"
)

// An announcement's broadcast to the default profile's 10 M users, 5 %
// online with 1.3 connections each, at the template's LiveBroadcastRate:
// 650 k posts, 15 k pages (queries, queue messages, invocations: 1.5 M
// online-set entries evaluated, 100 a page, each taken once on the
// announcement item: 5 write units), 25 minutes, $0.94 (0.65 of it
// WebSocket messages, 0.05 the pages' taking).
func TestLiveBroadcastCost(t *testing.T) {
	l := repoLimits(t)
	if l.LiveBroadcastRate != 500 {
		t.Fatalf("LiveBroadcastRate %v, want the template's 500", l.LiveBroadcastRate)
	}
	b := LiveBroadcastCost(ListPrices, DefaultLiveProfile(), float64(DefaultProfile().Users), l.LiveBroadcastRate)
	want := LiveBroadcast{OnlineUsers: 500e3, Posts: 650e3, Queries: 15e3, QueueMessages: 15e3, Invocations: 15e3, Seconds: 1500, USD: 0.94}
	if b != want {
		t.Errorf("broadcast %+v, want %+v", b, want)
	}
	// A small population still reads every shard once.
	if small := LiveBroadcastCost(ListPrices, DefaultLiveProfile(), 1000, 500); small.Queries != 16 {
		t.Errorf("1,000 users: %v queries, want one per shard (16)", small.Queries)
	}
}

// The template's broadcast pace leaves the inbox route's throttle twice
// its refetches, its first wave fits the route's burst, and the online
// set's writes at API Gateway's connect quota fit a partition; a faster
// pace is refused.
func TestLiveBroadcastChecks(t *testing.T) {
	run := func(l Limits) Result {
		res := Result{Live: LiveCosts(ListPrices, DefaultLiveProfile())}
		res.checkLive(l)
		return res
	}
	l := repoLimits(t)
	res := run(l)
	want := map[string][2]float64{
		"live broadcast: GET /v1/users/{userId}/inbox refetches/s × headroom vs route throttle":                      {1300, 1500},
		"live broadcast: first wave's refetches vs GET /v1/users/{userId}/inbox burst":                               {2080, 3000},
		"live broadcast: GET /v1/users/{userId}/inbox refetches/s with the kit's catch-up reloads vs route throttle": {1300, 1500},
		"live online set: write units/s per shard at the connect quota vs partition limit":                           {31.25, 1000},
		"live broadcast: progress write units/s on the announcement item vs partition limit":                         {80, 1000},
	}
	for _, c := range res.Checks {
		w, ok := want[c.Name]
		if !ok {
			t.Errorf("unexpected check %q", c.Name)
			continue
		}
		delete(want, c.Name)
		if c.Value != w[0] || c.Limit != w[1] || !c.OK {
			t.Errorf("%s: %v of %v (ok %v), want %v of %v", c.Name, c.Value, c.Limit, c.OK, w[0], w[1])
		}
	}
	if len(want) != 0 || len(res.LimitsExceeded) != 0 {
		t.Errorf("missing checks %v; exceeded %v", want, res.LimitsExceeded)
	}
	l.LiveBroadcastRate = 600 // 600 × 1.3 × 2 = 1,560 > 1,500
	// Both the headroom and the catch-up checks refuse it.
	if res := run(l); len(res.LimitsExceeded) != 2 || !strings.Contains(res.LimitsExceeded[0], "LiveBroadcastRate 600") || !strings.Contains(res.LimitsExceeded[1], "LiveBroadcastRate 600") {
		t.Errorf("a pace over the route's throttle: %v", res.LimitsExceeded)
	}
}
