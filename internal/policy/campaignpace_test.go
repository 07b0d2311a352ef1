package policy

import (
	"reflect"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

// TestCampaignPace: a low campaign goes at the slowest of its channels'
// bulk rates (5/6 of the rate × the bulk share) and the fan-out; a normal
// one at the whole effective rate; unlimited channels and an unpaced
// fan-out bound nothing. The tail is the reconcile delay plus, when a quota
// paces a channel, the longest quota deferral (2 s; 1 s for high).
func TestCampaignPace(t *testing.T) {
	s, err := PaceSettingsFromEnv(envMap{"EMAIL_SEND_RATE": "50", "SMS_SEND_RATE": "20", "BULK_QUOTA_SHARE": "60",
		"CAMPAIGN_FANOUT_RATE": "2000", "CAMPAIGN_RECONCILE_DELAY": "2s"}.get)
	if err != nil {
		t.Fatal(err)
	}
	email := []domain.Channel{domain.ChannelEmail}
	tests := []struct {
		name     string
		p        domain.Priority
		channels []domain.Channel
		want     domain.CampaignPace
	}{
		{"low email", domain.PriorityLow, email, domain.CampaignPace{RecipientsPerSecond: 25, FanOutPerSecond: 2000, Tail: 4 * time.Second,
			Channels: []domain.ChannelPace{{Channel: domain.ChannelEmail, SendsPerSecond: 25}}}},
		{"normal email", domain.PriorityNormal, email, domain.CampaignPace{RecipientsPerSecond: 250.0 / 6, FanOutPerSecond: 2000, Tail: 4 * time.Second,
			Channels: []domain.ChannelPace{{Channel: domain.ChannelEmail, SendsPerSecond: 250.0 / 6}}}},
		{"low email, sms, push", domain.PriorityLow, []domain.Channel{domain.ChannelEmail, domain.ChannelSMS, domain.ChannelPush},
			domain.CampaignPace{RecipientsPerSecond: 10, FanOutPerSecond: 2000, Tail: 4 * time.Second,
				Channels: []domain.ChannelPace{{Channel: domain.ChannelEmail, SendsPerSecond: 25}, {Channel: domain.ChannelSMS, SendsPerSecond: 10}, {Channel: domain.ChannelPush}}}},
	}
	for _, tt := range tests {
		if got := s.Pace(tt.p, tt.channels); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
	if got := s.Pace(domain.PriorityHigh, email); got.Tail != 3*time.Second {
		t.Errorf("high email: tail %s, want 3 s (2 s recount, 1 s deferral)", got.Tail)
	}
	fanOutOnly := PaceSettings{FanOutRate: 100, ReconcileDelay: time.Second}
	if got := fanOutOnly.Pace(domain.PriorityLow, []domain.Channel{domain.ChannelPush}); got.RecipientsPerSecond != 100 || got.Tail != time.Second {
		t.Errorf("unlimited push, fan-out 100/s: %+v, want 100/s and the recount's 1 s tail only (no quota deferral)", got)
	}
	local, err := PaceSettingsFromEnv(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if got := local.Pace(domain.PriorityLow, email); got.Known() || got.Tail != 30*time.Second {
		t.Errorf("nothing set: %+v, want no known pace and the default 30 s tail", got)
	}
	for _, env := range []map[string]string{{"EMAIL_SEND_RATE": "-1"}, {"CAMPAIGN_FANOUT_RATE": "x"}, {"CAMPAIGN_RECONCILE_DELAY": "10ms"}, {"BULK_QUOTA_SHARE": "0"}} {
		if _, err := PaceSettingsFromEnv(envMap(env).get); err == nil {
			t.Errorf("%v accepted", env)
		}
	}
}

// TestCampaignPaceOfMakeTestEta: the estimate make test-eta holds to its
// real drain, from the stack's own settings (EmailSendRate 20, bulk share
// 60 %, reconcile delay 2 s): 20 × 5/6 × 60 % = 10 recipients a second,
// 2,000 of them in 200 s, plus 2 s of recount and 2 s of quota deferral.
func TestCampaignPaceOfMakeTestEta(t *testing.T) {
	s, err := PaceSettingsFromEnv(envMap{"EMAIL_SEND_RATE": "20", "BULK_QUOTA_SHARE": "60", "CAMPAIGN_FANOUT_RATE": "2000", "CAMPAIGN_RECONCILE_DELAY": "2s"}.get)
	if err != nil {
		t.Fatal(err)
	}
	p := s.Pace(domain.PriorityLow, []domain.Channel{domain.ChannelEmail})
	if p.RecipientsPerSecond != 10 || p.Tail != 4*time.Second {
		t.Fatalf("pace %+v, want 10/s with a 4 s tail", p)
	}
	if got := p.Duration(2000); got != 204*time.Second {
		t.Errorf("2,000 recipients: %s, want 3m24s", got)
	}
}

type envMap map[string]string

func (m envMap) get(k string) string { return m[k] }
