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
	res, err := Run(DefaultProfile(), repoLimits(t))
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
