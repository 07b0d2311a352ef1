package campaigns

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
)

// Issue 36, defect 1: a campaign's sendAt is accepted up to a year ahead,
// but its items, its recipients' notifications and their deferred
// deliveries expired at their creation plus RetentionDays (90 here): TTL
// deleted them before they were due. Every item the campaign wrote, and
// the status copies its cancel writes for the workers, now expires no
// earlier than its sendAt plus the retention.
func TestScheduledCampaignKeepsItsItemsUntilItsSendAt(t *testing.T) {
	st := stacktest.Stack(t)
	people := users(stacktest.UniqueID("cmp-far"), 0, 2)
	putUsers(t, people)
	sendAt := st.Clock.Now().Add(200 * 24 * time.Hour).UTC().Truncate(time.Second)
	c := startScheduled(t, people, sendAt)
	ids := make([]string, len(people))
	for i, u := range people {
		ids[i] = domain.CampaignNotificationID(c.ID, u)
	}
	s := stacktest.Store(t)
	stacktest.Eventually(t, 30*time.Second, "deliveries deferred", func() bool {
		for _, id := range ids {
			if d, err := s.GetDelivery(context.Background(), id, domain.ChannelEmail); err != nil || d.Status != domain.StatusDeferred {
				return false
			}
		}
		return true
	})
	if r := stacktest.Do(t, http.MethodDelete, "/v1/campaigns/"+c.ID, nil); r.StatusCode != http.StatusOK {
		t.Fatalf("cancel: %d %s", r.StatusCode, r.Body)
	}

	floor := sendAt.Add(stacktest.Retention(t))
	keys := map[string][2]string{
		"META":        {dynamo.CampaignPK(c.ID), "META"},
		"DATA":        {dynamo.CampaignPK(c.ID), "DATA"},
		"lot":         {dynamo.CampaignLotPK(c.ID, domain.InlineChunk), "LOT"},
		"status copy": {dynamo.CampaignStatusPK(c.ID, ids[0]), "STATUS"},
	}
	for i, id := range ids {
		keys["notification "+people[i]] = [2]string{dynamo.NotificationPK(id), "N"}
		keys["deferred delivery "+people[i]] = [2]string{dynamo.NotificationPK(id), "D#email"}
	}
	for name, k := range keys {
		if got := stacktest.Expiry(t, k[0], k[1]); got.Before(floor) {
			t.Errorf("%s expires %v, before sendAt + RetentionDays (%v)", name, got, floor)
		}
	}
}
