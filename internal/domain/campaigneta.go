package domain

import (
	"math"
	"time"
)

// CampaignPace is the rate a campaign's finish estimate assumes: each
// recipient left costs one send on every channel, at the slowest of the
// channels' provider rates for the campaign's priority (low: the bulk share
// of each effective quota) and the fan-out's write budget; the Tail adds the
// last quota deferral and the last lot's recount.
type CampaignPace struct {
	// RecipientsPerSecond is the slowest bound below; 0 means no bound is
	// known (every channel unlimited and the fan-out unpaced): no estimate.
	RecipientsPerSecond float64
	// FanOutPerSecond is the fan-out's write budget (0: unpaced).
	FanOutPerSecond float64
	// Channels are each channel's sends per second for the campaign's
	// priority (0: no provider quota).
	Channels []ChannelPace
	// Tail is what the drain takes beyond its rate: the last lot's recount
	// after the last send (one reconcile delay) and, when a send quota paces
	// a channel, the longest quota deferral the last sends wait out.
	Tail time.Duration
}

// ChannelPace is one channel's send rate for a campaign.
type ChannelPace struct {
	Channel        Channel
	SendsPerSecond float64
}

// Known reports whether the pace bounds the campaign's duration.
func (p CampaignPace) Known() bool { return p.RecipientsPerSecond > 0 }

// Duration is how long n recipients take at the pace, the tail included;
// 0 when the pace is not known.
func (p CampaignPace) Duration(n int) time.Duration {
	if !p.Known() {
		return 0
	}
	secs := float64(max(n, 0)) / p.RecipientsPerSecond
	return time.Duration(math.Ceil(secs*1000))*time.Millisecond + p.Tail
}

// Remaining is how many recipients have no outcome yet: the recipients
// known so far less those counted sent, skipped, failed or dropped.
func (c *Campaign) Remaining() int {
	return max(0, c.Recipients-c.Counts.Sent-c.Counts.Skipped-c.Counts.Failed-c.Counts.Dropped)
}

// EstimatedCompletion is when the campaign should be done, estimated at
// now; ok false when its pace is not known. A draft is estimated as if
// started now (or at its sendAt when later) with all its recipients; a
// started one from its last count (its start before any; its sendAt when
// later) with the recipients it had left then, so the estimate moves only
// as the counts do — but never before now: a campaign behind its pace is
// estimated to finish any moment. A finished one is its finish.
func (c *Campaign) EstimatedCompletion(now time.Time) (time.Time, bool) {
	switch {
	case !c.FinishedAt.IsZero():
		return c.FinishedAt, true
	case !c.Pace.Known():
		return time.Time{}, false
	}
	from := Latest(now, c.SendAt)
	if !c.StartedAt.IsZero() {
		from = Latest(c.StartedAt, c.CountedAt, c.SendAt)
	}
	return Latest(now, from.Add(c.Pace.Duration(c.Remaining()))), true
}

// StartEstimate is the estimate the campaign was given when it started:
// all its recipients from its start (or sendAt when later). For a segment
// campaign the recipients are those scanned so far.
func (c *Campaign) StartEstimate() (time.Time, bool) {
	if !c.Pace.Known() || c.StartedAt.IsZero() {
		return time.Time{}, false
	}
	return Latest(c.StartedAt, c.SendAt).Add(c.Pace.Duration(c.Recipients)), true
}

// ProgressTenths is how many tenths of the recipients have an outcome
// (0–10): the campaign's progress events are published as it crosses each.
func (c *Campaign) ProgressTenths() int {
	if c.Recipients <= 0 {
		return 0
	}
	return (c.Recipients - c.Remaining()) * 10 / c.Recipients
}
