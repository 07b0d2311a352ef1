package events_test

import (
	"encoding/json"
	"testing"
	"time"

	wire "github.com/heraldhq/herald/client/events"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/events"
)

// TestCampaignProgressEntry: a running campaign publishes progress when its
// outcomes cross another tenth of its recipients (one id per tenth, the
// estimate made at the count: its recipients left at the pace from then),
// never for a count within the same tenth nor at the last tenth (the
// finish is its own event); started and finished carry the estimate too.
func TestCampaignProgressEntry(t *testing.T) {
	schemas := loadSchemas(t)
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	pace := domain.CampaignPace{RecipientsPerSecond: 25, Tail: 2 * time.Second,
		Channels: []domain.ChannelPace{{Channel: domain.ChannelEmail, SendsPerSecond: 25}, {Channel: domain.ChannelPush}}}
	at := func(sent int, counted time.Duration) *domain.Campaign {
		return &domain.Campaign{ID: "c1", Caller: "marketing", Type: "promo", Status: domain.CampaignRunning, CreatedAt: t0, StartedAt: t0,
			CountedAt: t0.Add(counted), Recipients: 2000, Counts: domain.CampaignCounts{Notified: 2000, Sent: sent}, Pace: pace}
	}
	detail := func(e events.Entry) wire.CampaignDetail {
		t.Helper()
		var d wire.CampaignDetail
		if err := json.Unmarshal(e.Detail, &d); err != nil {
			t.Fatal(err)
		}
		if err := validate(t, schemas, e.DetailType, e.Detail); err != nil {
			t.Error(err)
		}
		return d
	}

	draft := at(0, 0)
	draft.Status, draft.StartedAt = domain.CampaignDraft, time.Time{}
	e, ok, err := events.CampaignEntry(events.ModeFailures, draft, at(0, 0))
	if d := detail(e); err != nil || !ok || d.Status != "started" || d.EstimatedCompletionAt == nil || !d.EstimatedCompletionAt.Equal(t0.Add(82*time.Second)) ||
		d.Estimate == nil || d.Estimate.RecipientsLeft != 2000 || d.Estimate.RecipientsPerSecond != 25 || len(d.Estimate.Channels) != 2 || d.Estimate.Channels[1].SendsPerSecond != nil {
		t.Fatalf("started: %+v %+v, %v %v", d, d.Estimate, ok, err)
	}

	e, ok, err = events.CampaignEntry(events.ModeFailures, at(150, 5*time.Second), at(500, 20*time.Second))
	d := detail(e)
	if err != nil || !ok || d.Status != wire.CampaignProgress || !d.At.Equal(t0.Add(20*time.Second)) ||
		d.EstimatedCompletionAt == nil || !d.EstimatedCompletionAt.Equal(t0.Add(20*time.Second+60*time.Second+2*time.Second)) || d.Estimate.RecipientsLeft != 1500 {
		t.Fatalf("progress at 500 of 2000: %+v, %v %v", d, ok, err)
	}
	again, _, _ := events.CampaignEntry(events.ModeFailures, at(150, 5*time.Second), at(500, 20*time.Second))
	next, _, _ := events.CampaignEntry(events.ModeFailures, at(500, 20*time.Second), at(600, 24*time.Second))
	if again.ID != e.ID || next.ID == e.ID {
		t.Errorf("ids: %s, again %s, the next tenth %s; want the same tenth's the same, the next another", e.ID, again.ID, next.ID)
	}
	for _, tt := range []struct {
		name     string
		old, new *domain.Campaign
	}{
		{"within a tenth", at(500, 20*time.Second), at(550, 22*time.Second)},
		{"the last tenth", at(1900, 80*time.Second), at(2000, 82*time.Second)},
	} {
		if _, ok, _ := events.CampaignEntry(events.ModeAll, tt.old, tt.new); ok {
			t.Errorf("%s: published", tt.name)
		}
	}
	if _, ok, _ := events.CampaignEntry(events.ModeNone, at(150, 5*time.Second), at(500, 20*time.Second)); ok {
		t.Error("mode none published progress")
	}

	done := at(2000, 85*time.Second)
	done.Status, done.FinishedAt = domain.CampaignDone, t0.Add(86*time.Second)
	e, ok, _ = events.CampaignEntry(events.ModeFailures, at(2000, 85*time.Second), done)
	if d := detail(e); !ok || d.Status != "finished" || d.EstimatedCompletionAt == nil || !d.EstimatedCompletionAt.Equal(done.FinishedAt) || d.Estimate.RecipientsLeft != 0 {
		t.Fatalf("finished: %+v", d)
	}
}
