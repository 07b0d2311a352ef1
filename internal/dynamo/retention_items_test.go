package dynamo_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
)

// Issue 36, defect 1, on DynamoDB Local: every item of a campaign scheduled
// past the retention that is read after its start — META, DATA, a lot, the
// status copies a cancel writes for the workers — lives until its sendAt
// plus the retention, not its creation plus the retention. (A chunk
// uploaded to the draft keeps its upload + retention: its lot reads it at
// the start.)
func TestScheduledCampaignItemsOutliveTheirSendAt(t *testing.T) {
	const retention = 24 * time.Hour
	s, db, clock := newStore(t, dynamo.WithRetention(retention))
	ctx := context.Background()
	c := draft("c"+uniq(t), clock.Now())
	c.SendAt = clock.Now().Add(200 * 24 * time.Hour)
	want := fmt.Sprint(c.SendAt.Add(retention).Unix())
	if _, err := s.CreateCampaign(ctx, c, []string{"a", "b"}, "h"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddChunk(ctx, c.ID, "svc", domain.ChunkKey(0), []string{"c"}, "h0"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartCampaign(ctx, c.ID, "svc"); err != nil {
		t.Fatal(err)
	}
	lot := &domain.CampaignLot{Chunk: domain.ChunkKey(0), Total: 1, Pending: []string{"c"}, Counts: domain.CampaignCounts{Notified: 1}, RetainFrom: c.RetainFrom()}
	if err := s.RecordLot(ctx, c.ID, lot); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CancelCampaign(ctx, c.ID, "svc"); err != nil {
		t.Fatal(err)
	}
	items := map[string][2]string{
		"META":           {dynamo.CampaignPK(c.ID), "META"},
		"DATA":           {dynamo.CampaignPK(c.ID), "DATA"},
		"inline chunk":   {dynamo.CampaignPK(c.ID), "R#" + domain.InlineChunk},
		"lot":            {dynamo.CampaignLotPK(c.ID, domain.ChunkKey(0)), "LOT"},
		"a status copy":  {dynamo.CampaignStatusPK(c.ID, "n1"), "STATUS"},
		"another status": {dynamo.CampaignStatusPK(c.ID, "n2"), "STATUS"},
	}
	for name, k := range items {
		item := rawItem(t, db, s.Name(), k[0], k[1])
		if len(item) == 0 {
			t.Errorf("%s (%s/%s) not stored", name, k[0], k[1])
			continue
		}
		if got := numAttr(t, item, "ttl"); got != want {
			t.Errorf("%s: ttl %s, want sendAt + retention %s", name, got, want)
		}
	}
}

// A delivery deferred by a transition keeps its item until the new due time plus the
// retention; a digest planned after its window ended keeps its items from
// the planning on.
func TestLaterDueTimesExtendTheTTL(t *testing.T) {
	const retention = 24 * time.Hour
	s, db, clock := newStore(t, dynamo.WithRetention(retention))
	ctx := context.Background()
	id := uniq(t)
	if _, err := s.CreateDelivery(ctx, &domain.Delivery{NotificationID: id, Channel: domain.ChannelEmail, UserID: "u", Priority: domain.PriorityLow,
		Status: domain.StatusPlanned, UpdatedAt: clock.Now()}); err != nil {
		t.Fatal(err)
	}
	due := clock.Now().Add(30 * 24 * time.Hour)
	if _, err := s.Transition(ctx, id, domain.ChannelEmail, domain.Change{To: domain.StatusDeferred, From: []domain.Status{domain.StatusPlanned},
		Reason: domain.ReasonScheduled, DueAt: due}); err != nil {
		t.Fatal(err)
	}
	if got, want := numAttr(t, rawItem(t, db, s.Name(), dynamo.NotificationPK(id), "D#email"), "ttl"), fmt.Sprint(due.Add(retention).Unix()); got != want {
		t.Errorf("deferred to 30 days: ttl %s, want %s", got, want)
	}

	k := domain.DigestKey{UserID: uniq(t), Channel: domain.ChannelPush, BatchKey: "t"}
	end := clock.Now().Add(-10 * 24 * time.Hour) // planned ten days late (a relay DLQ redrive)
	if _, err := s.JoinDigest(ctx, domain.DigestRequest{Key: k, NotificationID: "lead", CreatedAt: end.Add(-5 * time.Minute), WindowEnd: end}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.JoinDigest(ctx, domain.DigestRequest{Key: k, NotificationID: "member", CreatedAt: end.Add(-time.Minute), WindowEnd: end}); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint(clock.Now().Add(7 * 24 * time.Hour).Unix())
	for _, sk := range []string{"HEAD", "D#lead"} {
		if got := numAttr(t, rawItem(t, db, s.Name(), dynamo.DigestPK(k), sk), "ttl"); got != want {
			t.Errorf("late digest %s: ttl %s, want now + 7 days %s (its window's end + 7 days has passed)", sk, got, want)
		}
	}
}
