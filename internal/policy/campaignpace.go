package policy

import (
	"fmt"
	"strconv"
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

// PaceSettings are the deployment's settings a campaign's finish estimate
// is computed from: each channel's send quota, the fan-out's write budget
// and the lots' reconcile delay (the template's EmailSendRate, SmsSendRate,
// PushSendRate, BulkQuotaShare, CampaignFanOutRate, CampaignReconcileDelay).
type PaceSettings struct {
	Quotas         map[domain.Channel]SendQuota
	FanOutRate     float64
	ReconcileDelay time.Duration
}

// Pace is the rate a campaign of priority p on channels assumes: the
// slowest of each channel's effective rate for p (low: the bulk share) and
// the fan-out rate; a channel with no quota and an unpaced fan-out bound
// nothing. Its tail is the last lot's recount after the last send (one
// reconcile delay) and, when a send quota paces a channel, the quota
// deferral the last sends wait out: a campaign's last messages are each
// retried only every MaxQuotaDelay at most, so the last one lands up to
// that long after the quota had room for it.
func (s PaceSettings) Pace(p domain.Priority, channels []domain.Channel) domain.CampaignPace {
	pace := domain.CampaignPace{FanOutPerSecond: s.FanOutRate, Tail: s.ReconcileDelay}
	slowest, quotaPaced := s.FanOutRate, false
	for _, ch := range channels {
		q := s.Quotas[ch]
		cp := domain.ChannelPace{Channel: ch}
		if !q.Unlimited() {
			quotaPaced = true
			cp.SendsPerSecond = q.EffectiveRate(p)
			if slowest <= 0 || cp.SendsPerSecond < slowest {
				slowest = cp.SendsPerSecond
			}
		}
		pace.Channels = append(pace.Channels, cp)
	}
	pace.RecipientsPerSecond = max(slowest, 0)
	if quotaPaced {
		pace.Tail += MaxQuotaDelay(p)
	}
	return pace
}

// Environment variables of the pace settings (the API function's).
const (
	EmailSendRateEnv       = "EMAIL_SEND_RATE"
	SMSSendRateEnv         = "SMS_SEND_RATE"
	PushSendRateEnv        = "PUSH_SEND_RATE"
	CampaignFanOutRateEnv  = "CAMPAIGN_FANOUT_RATE"
	CampaignReconcileEnv   = "CAMPAIGN_RECONCILE_DELAY"
	defaultReconcileForETA = 30 * time.Second // campaign.DefaultReconcileDelay
)

// PaceSettingsFromEnv reads the pace settings: EMAIL_SEND_RATE,
// SMS_SEND_RATE, PUSH_SEND_RATE (0 or unset: unlimited), BULK_QUOTA_SHARE,
// CAMPAIGN_FANOUT_RATE (0 or unset: unpaced) and CAMPAIGN_RECONCILE_DELAY
// (unset: 30 s).
func PaceSettingsFromEnv(getenv func(string) string) (PaceSettings, error) {
	s := PaceSettings{Quotas: map[domain.Channel]SendQuota{}, ReconcileDelay: defaultReconcileForETA}
	for ch, name := range map[domain.Channel]string{domain.ChannelEmail: EmailSendRateEnv, domain.ChannelSMS: SMSSendRateEnv, domain.ChannelPush: PushSendRateEnv} {
		q, err := SendQuotaFromEnv(func(k string) string {
			if k == "SEND_RATE" {
				return getenv(name)
			}
			return getenv(k)
		})
		if err != nil {
			return s, fmt.Errorf("%s: %w", name, err)
		}
		s.Quotas[ch] = q
	}
	if v := getenv(CampaignFanOutRateEnv); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r < 0 {
			return s, fmt.Errorf("%s %q: want a non-negative number of notifications per second", CampaignFanOutRateEnv, v)
		}
		s.FanOutRate = r
	}
	if v := getenv(CampaignReconcileEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			return s, fmt.Errorf("%s %q: want a Go duration of at least 1s", CampaignReconcileEnv, v)
		}
		s.ReconcileDelay = d
	}
	return s, nil
}
