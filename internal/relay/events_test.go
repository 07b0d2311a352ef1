package relay_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/relay"
)

// sink records the records handed to the events publisher and fails some.
type sink struct {
	got  []string
	fail map[string]bool
}

func (s *sink) Handle(_ context.Context, recs []events.DynamoDBEventRecord) []int {
	var failed []int
	for i, r := range recs {
		s.got = append(s.got, r.Change.SequenceNumber)
		if s.fail[r.Change.SequenceNumber] {
			failed = append(failed, i)
		}
	}
	return failed
}

// The bulk mapping hands the relay delivery and campaign state changes too:
// new notifications are relayed, everything else goes to the events sink,
// and only the records the sink could not publish nor park are retried.
func TestRoutesStateChangesToTheEventSink(t *testing.T) {
	s := &sink{fail: map[string]bool{"4": true}}
	f := newFixture(t, func(d *relay.Deps) { d.Events = s })
	f.user("u1", nil)
	modify := insert("2", reservation("n2", "u1", nil))
	modify.EventName = "MODIFY"
	delivery := insert("3", reservation("n3", "u1", nil))
	delivery.Change.NewImage["sk"] = events.NewStringAttribute("D#email")
	parked := insert("4", reservation("n4", "u1", nil))
	parked.EventName = "MODIFY"
	failed := f.handle(t, insert("1", reservation("n1", "u1", nil)), modify, delivery, parked)
	if len(failed) != 1 || failed[0] != "4" {
		t.Errorf("failed %v, want [4]", failed)
	}
	if got := s.got; len(got) != 3 || got[0] != "2" || got[1] != "3" || got[2] != "4" {
		t.Errorf("events sink got %v, want [2 3 4]", got)
	}
	f.wantDelivery(t, "n1", domain.ChannelEmail, domain.StatusQueued, "")
}

// A delivery the relay creates (here deferred: one sent at once is created
// by the worker's claim, which carries the same) carries its notification's
// caller, type, campaign and resource so that its events are built from its
// own stream image.
func TestDeliveryCarriesTheNotificationFieldsEventsNeed(t *testing.T) {
	f := newFixture(t)
	f.user("u1", nil)
	n := reservation("n1", "u1", func(n *domain.Notification) {
		n.CampaignID, n.ResourceID, n.Caller, n.SendAt = "c1", "r1", "svc", now.Add(time.Hour)
	})
	rec := insert("1", n)
	rec.Change.NewImage["campaignId"] = events.NewStringAttribute("c1")
	rec.Change.NewImage["resourceId"] = events.NewStringAttribute("r1")
	if failed := f.handle(t, rec); len(failed) > 0 {
		t.Fatal(failed)
	}
	d := f.wantDelivery(t, "n1", domain.ChannelEmail, domain.StatusDeferred, domain.ReasonScheduled)
	if d.Caller != "svc" || d.Type != "reservation.approved" || d.CampaignID != "c1" || d.ResourceID != "r1" {
		t.Errorf("delivery %+v", d)
	}
}
