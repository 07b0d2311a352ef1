package events_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	wire "github.com/heraldhq/herald/client/events"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/events"
)

func delivery(s domain.Status, attempts int) *domain.Delivery {
	return &domain.Delivery{NotificationID: "n1", Channel: domain.ChannelEmail, UserID: "u1", Priority: domain.PriorityNormal,
		Status: s, Reason: domain.ReasonExhausted, Attempts: attempts, UpdatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		LastError: "550 mailbox a@example.com unknown", ProviderMessageID: "pm-1",
		Caller: "billing", Type: "invoice_paid", CampaignID: "c1", ResourceID: "inv-9"}
}

func TestParseMode(t *testing.T) {
	for _, s := range []string{"none", "failures", "all"} {
		if m, err := events.ParseMode(s); err != nil || string(m) != s {
			t.Errorf("ParseMode(%q) = %q, %v", s, m, err)
		}
	}
	if _, err := events.ParseMode("some"); err == nil {
		t.Error("ParseMode accepted some")
	}
}

func TestDeliveryEntryByMode(t *testing.T) {
	cases := []struct {
		mode   events.Mode
		status domain.Status
		want   bool
	}{
		{events.ModeAll, domain.StatusSent, true},
		{events.ModeAll, domain.StatusDelivered, true},
		{events.ModeAll, domain.StatusSkipped, true},
		{events.ModeAll, domain.StatusBounced, true},
		{events.ModeAll, domain.StatusQueued, false},
		{events.ModeAll, domain.StatusSending, false},
		{events.ModeAll, domain.StatusRetrying, false},
		{events.ModeAll, domain.StatusDeferred, false},
		{events.ModeFailures, domain.StatusSent, false},
		{events.ModeFailures, domain.StatusSkipped, false},
		{events.ModeFailures, domain.StatusFailed, true},
		{events.ModeFailures, domain.StatusBounced, true},
		{events.ModeFailures, domain.StatusComplained, true},
		{events.ModeFailures, domain.StatusDropped, true},
		{events.ModeNone, domain.StatusFailed, false},
	}
	for _, c := range cases {
		_, ok, err := events.DeliveryEntry(c.mode, delivery(domain.StatusSending, 1), delivery(c.status, 1))
		if err != nil || ok != c.want {
			t.Errorf("%s %s: ok=%v err=%v, want %v", c.mode, c.status, ok, err, c.want)
		}
	}
}

func TestDeliveryEntryOnlyOnStatusChange(t *testing.T) {
	// A MODIFY that keeps the status (attempts counted, provider id set) is no event.
	if _, ok, _ := events.DeliveryEntry(events.ModeAll, delivery(domain.StatusSent, 1), delivery(domain.StatusSent, 1)); ok {
		t.Error("unchanged status published")
	}
	// A delivery created in its state (INSERT: no old image) is one.
	if _, ok, _ := events.DeliveryEntry(events.ModeAll, nil, delivery(domain.StatusSkipped, 0)); !ok {
		t.Error("delivery created skipped not published")
	}
}

func TestDeliveryEntryDetail(t *testing.T) {
	e, ok, err := events.DeliveryEntry(events.ModeAll, delivery(domain.StatusRetrying, 3), delivery(domain.StatusFailed, 3))
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if e.Source != "herald" || e.DetailType != "Delivery State Change" {
		t.Errorf("source/detail-type = %q/%q", e.Source, e.DetailType)
	}
	var d wire.DeliveryDetail
	if err := json.Unmarshal(e.Detail, &d); err != nil {
		t.Fatal(err)
	}
	want := wire.DeliveryDetail{EventID: e.ID, Version: "1", NotificationID: "n1", Type: "invoice_paid", Caller: "billing", UserID: "u1",
		Channel: "email", Status: "failed", Reason: "exhausted", Attempts: 3, At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		CampaignID: "c1", ResourceID: "inv-9"}
	if d != want {
		t.Errorf("detail = %+v\nwant     %+v", d, want)
	}
	// The delivery's provider error and message id never leave Herald.
	for _, leak := range []string{"@", "mailbox", "pm-1"} {
		if strings.Contains(string(e.Detail), leak) {
			t.Errorf("detail carries %q: %s", leak, e.Detail)
		}
	}
	if err := validate(t, loadSchemas(t), e.DetailType, e.Detail); err != nil {
		t.Errorf("detail does not validate: %v", err)
	}
}

func TestEventIDDeterministic(t *testing.T) {
	a, _, _ := events.DeliveryEntry(events.ModeAll, nil, delivery(domain.StatusFailed, 3))
	b, _, _ := events.DeliveryEntry(events.ModeAll, delivery(domain.StatusSending, 3), delivery(domain.StatusFailed, 3))
	if a.ID != b.ID || !strings.HasPrefix(a.ID, "dlv_") {
		t.Errorf("same state, ids %q and %q", a.ID, b.ID)
	}
	other := delivery(domain.StatusFailed, 3)
	other.Channel = domain.ChannelSMS
	c, _, _ := events.DeliveryEntry(events.ModeAll, nil, other)
	d, _, _ := events.DeliveryEntry(events.ModeAll, nil, delivery(domain.StatusBounced, 3))
	if c.ID == a.ID || d.ID == a.ID {
		t.Error("different states share an id")
	}
}

func campaign(s domain.CampaignStatus) *domain.Campaign {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return &domain.Campaign{ID: "c1", Caller: "marketing", Type: "promo", Status: s, CreatedAt: at, StartedAt: at.Add(time.Minute),
		FinishedAt: at.Add(time.Hour), Recipients: 10, Counts: domain.CampaignCounts{Notified: 10, Sent: 7, Skipped: 1, Failed: 1, Dropped: 1}}
}

func TestCampaignEntry(t *testing.T) {
	schemas := loadSchemas(t)
	for status, want := range map[domain.CampaignStatus]string{domain.CampaignRunning: "started", domain.CampaignDone: "finished", domain.CampaignCancelled: "cancelled"} {
		e, ok, err := events.CampaignEntry(events.ModeFailures, campaign(domain.CampaignDraft), campaign(status))
		if err != nil || !ok {
			t.Fatalf("%s: %v %v", status, ok, err)
		}
		var d wire.CampaignDetail
		if err := json.Unmarshal(e.Detail, &d); err != nil {
			t.Fatal(err)
		}
		if d.Status != want || d.Counts.Sent != 7 || d.Counts.Recipients != 10 || d.Caller != "marketing" || d.EventID != e.ID {
			t.Errorf("%s: detail %+v", status, d)
		}
		if err := validate(t, schemas, e.DetailType, e.Detail); err != nil {
			t.Errorf("%s: %v", status, err)
		}
	}
	if _, ok, _ := events.CampaignEntry(events.ModeAll, campaign(domain.CampaignRunning), campaign(domain.CampaignRunning)); ok {
		t.Error("a count update of a running campaign published")
	}
	if _, ok, _ := events.CampaignEntry(events.ModeNone, campaign(domain.CampaignDraft), campaign(domain.CampaignRunning)); ok {
		t.Error("mode none published")
	}
}
