package domain

import (
	"testing"
	"time"
)

// TestCampaignEstimate: a draft is estimated from now (or its sendAt) with
// all its recipients, a running campaign from now with those it has left, a
// finished one is its finish; no pace, no estimate.
func TestCampaignEstimate(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	pace := CampaignPace{RecipientsPerSecond: 25, Tail: 2 * time.Second}
	tests := []struct {
		name string
		c    Campaign
		now  time.Time
		want time.Time
		ok   bool
	}{
		{"draft", Campaign{Status: CampaignDraft, Recipients: 2000, Pace: pace}, t0, t0.Add(82 * time.Second), true},
		{"draft sent later", Campaign{Status: CampaignDraft, Recipients: 2000, SendAt: t0.Add(time.Hour), Pace: pace}, t0, t0.Add(time.Hour + 82*time.Second), true},
		{"running, nothing counted", Campaign{Status: CampaignRunning, Recipients: 2000, StartedAt: t0, Pace: pace}, t0.Add(10 * time.Second), t0.Add(82 * time.Second), true},
		{"running, half left at the last count", Campaign{Status: CampaignRunning, Recipients: 2000, StartedAt: t0, CountedAt: t0.Add(50 * time.Second), Pace: pace,
			Counts: CampaignCounts{Notified: 2000, Sent: 900, Skipped: 50, Failed: 25, Dropped: 25}}, t0.Add(60 * time.Second), t0.Add(50*time.Second + 42*time.Second), true},
		{"running, behind its pace", Campaign{Status: CampaignRunning, Recipients: 2000, StartedAt: t0, CountedAt: t0.Add(time.Second), Pace: pace}, t0.Add(2 * time.Minute), t0.Add(2 * time.Minute), true},
		{"running, all counted", Campaign{Status: CampaignRunning, Recipients: 10, StartedAt: t0, CountedAt: t0.Add(time.Minute), Pace: pace, Counts: CampaignCounts{Sent: 10}}, t0.Add(time.Minute), t0.Add(time.Minute + 2*time.Second), true},
		{"done", Campaign{Status: CampaignDone, Recipients: 10, FinishedAt: t0.Add(time.Minute), Pace: pace}, t0.Add(time.Hour), t0.Add(time.Minute), true},
		{"no pace", Campaign{Status: CampaignRunning, Recipients: 10}, t0, time.Time{}, false},
	}
	for _, tt := range tests {
		got, ok := tt.c.EstimatedCompletion(tt.now)
		if ok != tt.ok || !got.Equal(tt.want) {
			t.Errorf("%s: %s, %v; want %s, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
	c := Campaign{Status: CampaignDone, Recipients: 2000, StartedAt: t0, FinishedAt: t0.Add(90 * time.Second), Pace: pace}
	if got, ok := c.StartEstimate(); !ok || !got.Equal(t0.Add(82*time.Second)) {
		t.Errorf("start estimate %s, %v; want %s", got, ok, t0.Add(82*time.Second))
	}
	for settled, want := range map[int]int{0: 0, 199: 0, 200: 1, 1999: 9, 2000: 10} {
		c.Counts = CampaignCounts{Sent: settled}
		if got := c.ProgressTenths(); got != want {
			t.Errorf("%d of 2000 settled: %d tenths, want %d", settled, got, want)
		}
	}
}
