package capacity

import (
	"math"
	"testing"
)

// Delivery events are priced per 64 KB chunk of each entry ($1.00 per
// million) plus the bulk relay's share; off costs nothing.
func TestEventsPerMillion(t *testing.T) {
	if c := eventEntryChunks(); c != 1 {
		t.Fatalf("a delivery event is %v chunks of 64 KB, want 1", c)
	}
	res, err := defaultRun(t)
	if err != nil {
		t.Fatal(err)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) < 0.05 }
	email, sms := res.EventsPerMillionUSD["email"], res.EventsPerMillionUSD["sms"]
	if email["none"] != 0 || email["failures"] != 0 || !near(email["all"], 2.02) || !near(sms["all"], 1.01) {
		t.Errorf("email %v, sms %v", email, sms)
	}
	if !near(res.EventsPerMillionFailuresUSD, 1.01) {
		t.Errorf("per million failures %v", res.EventsPerMillionFailuresUSD)
	}
	if !near(res.EventsPerMillionUSD["reservation.approved"]["all"], 3.03) {
		t.Errorf("email+push %v", res.EventsPerMillionUSD["reservation.approved"])
	}
}

// The live inbox: a 10 M campaign is 100 k queue messages and batch reads,
// never one call per user; posts only for the online share; the prices add
// up as listed.
func TestLiveCosts(t *testing.T) {
	lp := DefaultLiveProfile()
	c := LiveCosts(ListPrices, lp)
	if c.Campaign10MQueueMessages != 100e3 || c.Campaign10MBatchReads != 100e3 {
		t.Errorf("10 M campaign: %.0f messages, %.0f batch reads, want 100 k each", c.Campaign10MQueueMessages, c.Campaign10MBatchReads)
	}
	if want := 10e6 * lp.OnlineShare * lp.ConnectionsPerOnlineUser; c.Campaign10MPosts != want {
		t.Errorf("posts %.0f, want %.0f", c.Campaign10MPosts, want)
	}
	if !(c.PerMillionNotifications > 0 && c.PerMillionNotifications < c.PerMillionPosts) {
		t.Errorf("per million: %v with the profile, %v all online", c.PerMillionNotifications, c.PerMillionPosts)
	}
	// An hour connected: 60 minutes at $0.25/M and a ping every 9 minutes
	// (6.67 an hour) of at least a message and a write unit each, and of at
	// most that plus an invocation and 10 ms of it: $27.39.
	pings := 3600 / lp.PingSeconds
	if lp.PingSeconds != 540 || lp.PingWrites != 1 {
		t.Errorf("profile pings every %v s with %v writes, want the kit's 540 s and 1", lp.PingSeconds, lp.PingWrites)
	}
	if min := 1e6 * (60*0.25/1e6 + pings*(1.00/1e6+0.625/1e6)); c.PerMillionConnectedHours < min || c.PerMillionConnectedHours != 27.39 {
		t.Errorf("connected hour %.2f per million, want 27.39 (at least %.2f)", c.PerMillionConnectedHours, min)
	}
}
