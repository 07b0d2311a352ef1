package domain

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCanTransitionCampaign(t *testing.T) {
	tests := []struct {
		from, to CampaignStatus
		want     bool
	}{
		{CampaignDraft, CampaignRunning, true},
		{CampaignDraft, CampaignCancelled, true},
		{CampaignRunning, CampaignDone, true},
		{CampaignRunning, CampaignCancelled, true},
		{CampaignDraft, CampaignDone, false},
		{CampaignRunning, CampaignDraft, false},
		{CampaignDone, CampaignCancelled, false},
		{CampaignCancelled, CampaignRunning, false},
	}
	for _, tt := range tests {
		if got := CanTransitionCampaign(tt.from, tt.to); got != tt.want {
			t.Errorf("%s → %s = %v, want %v", tt.from, tt.to, got, tt.want)
		}
	}
}

func TestOutcomeOf(t *testing.T) {
	email, push := ChannelEmail, ChannelPush
	d := func(s Status) Delivery { return Delivery{Status: s} }
	tests := []struct {
		name string
		ds   map[Channel]Delivery
		want RecipientOutcome
	}{
		{"no delivery yet", map[Channel]Delivery{}, OutcomePending},
		{"one channel missing", map[Channel]Delivery{email: d(StatusSent)}, OutcomePending},
		{"one channel in flight", map[Channel]Delivery{email: d(StatusSent), push: d(StatusDeferred)}, OutcomePending},
		{"sent on one, skipped on the other", map[Channel]Delivery{email: d(StatusSent), push: d(StatusSkipped)}, OutcomeSent},
		{"delivered counts as sent", map[Channel]Delivery{email: d(StatusDelivered), push: d(StatusFailed)}, OutcomeSent},
		{"failed beats dropped", map[Channel]Delivery{email: d(StatusFailed), push: d(StatusDropped)}, OutcomeFailed},
		{"bounced is failed", map[Channel]Delivery{email: d(StatusBounced), push: d(StatusSkipped)}, OutcomeFailed},
		{"dropped beats skipped", map[Channel]Delivery{email: d(StatusDropped), push: d(StatusSkipped)}, OutcomeDropped},
		{"all skipped", map[Channel]Delivery{email: d(StatusSkipped), push: d(StatusSkipped)}, OutcomeSkipped},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := OutcomeOf([]Channel{email, push}, tt.ds); got != tt.want {
				t.Errorf("OutcomeOf = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestCampaignCounts(t *testing.T) {
	var c CampaignCounts
	for _, o := range []RecipientOutcome{OutcomeSent, OutcomeSent, OutcomeSkipped, OutcomeFailed, OutcomeDropped, OutcomePending} {
		c.Count(o)
	}
	if want := (CampaignCounts{Sent: 2, Skipped: 1, Failed: 1, Dropped: 1}); c != want || c.Final() != 5 {
		t.Fatalf("counts %+v (final %d), want %+v (5)", c, c.Final(), want)
	}
	next := c.Add(CampaignCounts{Notified: 3, Sent: 1})
	if delta := next.Sub(c); delta != (CampaignCounts{Notified: 3, Sent: 1}) {
		t.Errorf("delta %+v", delta)
	}
}

func TestCampaignNotificationID(t *testing.T) {
	a := CampaignNotificationID("c1", "u1")
	if a != CampaignNotificationID("c1", "u1") {
		t.Error("not deterministic")
	}
	if a == CampaignNotificationID("c1", "u2") || a == CampaignNotificationID("c2", "u1") || a == CampaignNotificationID("c1u", "1") {
		t.Error("collides across campaigns or users")
	}
	if len(a) != 27 || a[0] != 'n' {
		t.Errorf("id %q is not shaped like a notification id", a)
	}
}

func TestDecodeCampaignMessage(t *testing.T) {
	tests := []struct {
		body string
		ok   bool
	}{
		{`{"kind":"plan","campaignId":"c1"}`, true},
		{`{"kind":"plan","campaignId":"c1","after":"0000000003"}`, true},
		{`{"kind":"lot","campaignId":"c1","chunk":"inline"}`, true},
		{`{"kind":"reconcile","campaignId":"c1","chunk":"0000000000"}`, true},
		{`{"kind":"reconcile","campaignId":"c1","chunk":"0000000000","notBefore":"2026-12-06T08:00:00Z","idle":2}`, true},
		{`{"kind":"reconcile","campaignId":"c1","chunk":"0000000000","idle":-1}`, false},
		{`{"kind":"lot","campaignId":"c1","chunk":"inline","notBefore":"2026-12-06T08:00:00Z"}`, false},
		{`{"kind":"plan","campaignId":"c1","idle":1}`, false},
		{`{"kind":"lot","campaignId":"c1"}`, false},
		{`{"kind":"plan"}`, false},
		{`{"kind":"send","campaignId":"c1"}`, false},
		{`{"kind":"plan","campaignId":"c1","extra":1}`, false},
		{`not json`, false},
		{`{"kind":"scan","campaignId":"c1","segments":16}`, true},
		{`{"kind":"scan","campaignId":"c1","segment":15,"segments":16,"page":3,"after":"u9"}`, true},
		{`{"kind":"scan","campaignId":"c1"}`, false},                            // no segments
		{`{"kind":"scan","campaignId":"c1","segment":16,"segments":16}`, false}, // out of range
		{`{"kind":"scan","campaignId":"c1","segments":1001}`, false},            // too many
		{`{"kind":"scan","campaignId":"c1","segments":2,"page":1}`, false},      // a next page without where
		{`{"kind":"scan","campaignId":"c1","segments":2,"after":"u1"}`, false},  // a first page with where
		{`{"kind":"scan","campaignId":"c1","segment":-1,"segments":2}`, false},  // negative
	}
	for _, tt := range tests {
		_, err := DecodeCampaignMessage(tt.body)
		if (err == nil) != tt.ok {
			t.Errorf("%s: err %v, want ok %v", tt.body, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrMalformedCampaignMessage) {
			t.Errorf("%s: %v is not ErrMalformedCampaignMessage", tt.body, err)
		}
	}
}

// A waiting reconcile's fields survive the queue: encoded as the campaign
// function sends it, decoded as it receives it.
func TestReconcileMessageRoundTrip(t *testing.T) {
	m := CampaignMessage{Kind: CampaignReconcile, CampaignID: "c1", Chunk: "0000000007", NotBefore: time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC), Idle: 3}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeCampaignMessage(string(b))
	if err != nil || !got.NotBefore.Equal(m.NotBefore) || got.Idle != 3 || got.Chunk != m.Chunk {
		t.Errorf("%s decoded as %+v, %v", b, got, err)
	}
	if b, _ := json.Marshal(CampaignMessage{Kind: CampaignReconcile, CampaignID: "c1", Chunk: "x"}); strings.Contains(string(b), "notBefore") || strings.Contains(string(b), "idle") {
		t.Errorf("a reconcile that does not wait carries %s", b)
	}
}

func TestCampaignErrorsAreConflicts(t *testing.T) {
	for _, err := range []error{ErrCampaignNotDraft, ErrCampaignFinished, ErrChunkConflict, ErrSegmentAudience} {
		if !errors.Is(err, ErrConflict) {
			t.Errorf("%v is not an ErrConflict", err)
		}
	}
	if errors.Is(ErrChunkConflict, ErrCampaignNotDraft) {
		t.Error("campaign errors must stay distinct")
	}
	if ChunkKey(7) != "0000000007" || ChunkKey(12) <= ChunkKey(7) || InlineChunk <= ChunkKey(9_999_999_999) {
		t.Error("chunk keys must sort by number, before the inline chunk")
	}
}
