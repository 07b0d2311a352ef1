package dynamo_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

// TestCampaignPaceAndCountedAt: the pace a campaign is created with is read
// back as it was (its channels in order), and every count update stamps
// countedAt with the store's clock, which a progress event's estimate is
// made at.
func TestCampaignPaceAndCountedAt(t *testing.T) {
	s, _, clock := newStore(t)
	ctx := context.Background()
	id := "c" + uniq(t)
	c := draft(id, clock.Now())
	c.Pace = domain.CampaignPace{RecipientsPerSecond: 12.5, FanOutPerSecond: 2000, Tail: 1500 * time.Millisecond,
		Channels: []domain.ChannelPace{{Channel: domain.ChannelSMS, SendsPerSecond: 12.5}, {Channel: domain.ChannelEmail, SendsPerSecond: 0}}}
	if _, err := s.CreateCampaign(ctx, c, []string{"a", "b"}, "h"); err != nil {
		t.Fatal(err)
	}
	got := mustCampaign(t, s, id)
	if !reflect.DeepEqual(got.Pace, c.Pace) || !got.CountedAt.IsZero() {
		t.Fatalf("pace %+v, countedAt %s; want %+v and none", got.Pace, got.CountedAt, c.Pace)
	}
	if _, err := s.StartCampaign(ctx, id, "svc"); err != nil {
		t.Fatal(err)
	}
	clock.Set(clock.Now().Add(time.Minute))
	if err := s.RecordLot(ctx, id, &domain.CampaignLot{Chunk: domain.InlineChunk, Total: 2, Pending: []string{"a"}, Counts: domain.CampaignCounts{Notified: 1, Skipped: 1}}); err != nil {
		t.Fatal(err)
	}
	if got := mustCampaign(t, s, id); !got.CountedAt.Equal(clock.Now()) || got.Remaining() != 1 {
		t.Fatalf("after the lot: countedAt %s, remaining %d; want %s and 1", got.CountedAt, got.Remaining(), clock.Now())
	}

	// A campaign created without a pace (none known, or before paces) has none.
	bare := draft("c"+uniq(t), clock.Now())
	if _, err := s.CreateCampaign(ctx, bare, nil, ""); err != nil {
		t.Fatal(err)
	}
	if got := mustCampaign(t, s, bare.ID); got.Pace.Known() || got.Pace.Channels != nil {
		t.Fatalf("pace %+v, want none", got.Pace)
	}
}
