// Package metrics records Herald's operational metrics and writes them as
// CloudWatch Embedded Metric Format (EMF): JSON lines on the function's
// stdout, which Lambda ships to CloudWatch Logs, which extracts the metrics.
// No PutMetricData call, no agent, no latency on the hot path.
//
// Handlers count with Add and time with Observe during an invocation and call
// Flush once at its end: every distinct set of dimension values becomes one
// EMF document carrying all the metrics recorded under it.
//
// Nothing personal can enter a metric: names are a closed list, channel and
// priority must be the domain's values, and reasons and codes must look like
// the stable snake_case codes the code base defines. Anything else is
// recorded under the dimension value "invalid" (and the metric still counts).
package metrics

import (
	"context"
	"regexp"
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

// Name is a metric name; only the constants below are recorded.
type Name string

// The metrics Herald emits.
const (
	// Accepted: notifications stored by intake (dims: Priority).
	Accepted Name = "Accepted"
	// Replayed: idempotent replays answered from the stored notification (dims: Priority).
	Replayed Name = "Replayed"
	// Rejected: intake requests refused (dims: Code, the problem code).
	Rejected Name = "Rejected"
	// Enqueued: work messages sent by the relay or the scheduler (dims: Channel, Priority).
	Enqueued Name = "Enqueued"
	// Deferred: deliveries deferred by quiet hours, digest or sendAt (dims: Channel, Priority, Reason).
	Deferred Name = "Deferred"
	// Skipped: deliveries not attempted (dims: Channel, Priority, Reason).
	Skipped Name = "Skipped"
	// Sent: provider accepted the message (dims: Channel, Priority; rollup Channel).
	Sent Name = "Sent"
	// Retried: transient failure, retried after backoff (dims: Channel, Priority).
	Retried Name = "Retried"
	// Failed: permanent failure or retries exhausted (dims: Channel, Priority, Reason; rollup Channel).
	Failed Name = "Failed"
	// Dropped: no longer applies at send time (dims: Channel, Priority, Reason).
	Dropped Name = "Dropped"
	// DeliveryLatency: milliseconds from acceptance to sent (dims: Channel,
	// Priority; rollup Priority).
	DeliveryLatency Name = "DeliveryLatency"
	// DeliveredLatency: milliseconds from acceptance (or sendAt) to the
	// provider's report of delivery to the recipient's server, where the
	// provider reports it (SES Delivery events; dims: Channel, Priority;
	// rollup Priority).
	DeliveredLatency Name = "DeliveredLatency"
	// Delivered, Bounced, Complained: email feedback from SES recorded on a
	// sent delivery (dims: Channel, Priority; rollup Channel). Bounces and
	// complaints over sends are the rates SES pauses an account for.
	Delivered  Name = "Delivered"
	Bounced    Name = "Bounced"
	Complained Name = "Complained"
	// QuotaDeferred: a send put back on its queue because the channel's send
	// quota had no room for its priority; no provider call, no attempt
	// (dims: Channel, Priority).
	QuotaDeferred Name = "QuotaDeferred"
	// Throttled: the provider itself throttled a send (SES
	// TooManyRequestsException, SNS Throttled, Web Push 429), retried with
	// backoff; also counted in Retried (dims: Channel, Priority).
	Throttled Name = "Throttled"
	// CampaignLots: campaign lots recorded, each ≤ 1,000 recipients (dims:
	// Priority, the campaign's).
	CampaignLots Name = "CampaignLots"
	// CampaignNotified, CampaignSkipped, CampaignDropped: a lot's recipients
	// whose notification it created, who were skipped (no profile, listed in
	// another lot) or dropped (the campaign was cancelled) (dims: Priority).
	CampaignNotified Name = "CampaignNotified"
	CampaignSkipped  Name = "CampaignSkipped"
	CampaignDropped  Name = "CampaignDropped"
	// CampaignReconciles: lot recounts that moved recipients to their
	// outcome (dims: Priority).
	CampaignReconciles Name = "CampaignReconciles"
	// CampaignScanPages: pages of profiles a segment-"all" campaign's scan
	// stored as lots (dims: Priority).
	CampaignScanPages Name = "CampaignScanPages"
	// ProviderRefused: the provider refused to send for a reason of the
	// account, not of the recipient (SES sending paused or the account
	// suspended, a push platform's credentials or the VAPID keys refused,
	// SNS not authorized): counted per attempt, which is retried and parked
	// in the DLQ, never failed: rejected (dims: Channel, Priority; rollup
	// Channel, the alarm's).
	ProviderRefused Name = "ProviderRefused"
	// Stuck: a delivery the scheduler's in-flight watch found planned,
	// queued, sending or retrying past its lease and backoff plus a grace
	// (its work message lost), counted at each check that finds it (dims:
	// Channel, Priority; rollup Channel).
	Stuck Name = "Stuck"
	// DueBehindWatermark: due-index partitions the scheduler's sweep found
	// holding due entries in a bucket behind its watermark, which no tick
	// probes (something planned a due time in the past); released when
	// found (no dims).
	DueBehindWatermark Name = "DueBehindWatermark"
	// ProviderSent and ProviderFailed: provider calls answered with a send
	// or with an error, per provider (dims: Channel, Provider): how traffic
	// moves between a channel's primary and its failover (issue 38).
	ProviderSent   Name = "ProviderSent"
	ProviderFailed Name = "ProviderFailed"
	// BreakerOpened: a provider's circuit breaker opened (counted by the
	// worker whose failure opened it; dims: Channel, Provider; rollup
	// Channel, the alarm's).
	BreakerOpened Name = "BreakerOpened"
)

// Unit is a CloudWatch unit.
type Unit string

// Units used by Herald's metrics.
const (
	Count        Unit = "Count"
	Milliseconds Unit = "Milliseconds"
)

// Dimension names, as they appear in CloudWatch.
const (
	DimChannel  = "Channel"
	DimPriority = "Priority"
	DimReason   = "Reason"
	DimCode     = "Code"
	DimProvider = "Provider"
)

// spec describes how a metric is published.
type spec struct {
	unit Unit
	// rollups are extra dimension sets (subsets of the recorded dimensions)
	// published with the same values, for alarms that aggregate over the
	// other dimensions (CloudWatch does not aggregate across dimensions).
	rollups [][]string
}

var specs = map[Name]spec{
	Accepted:           {unit: Count},
	Replayed:           {unit: Count},
	Rejected:           {unit: Count},
	Enqueued:           {unit: Count},
	Deferred:           {unit: Count},
	Skipped:            {unit: Count},
	Sent:               {unit: Count, rollups: [][]string{{DimChannel}}},
	Retried:            {unit: Count},
	Failed:             {unit: Count, rollups: [][]string{{DimChannel}}},
	Dropped:            {unit: Count},
	DeliveryLatency:    {unit: Milliseconds, rollups: [][]string{{DimPriority}}},
	DeliveredLatency:   {unit: Milliseconds, rollups: [][]string{{DimPriority}}},
	Delivered:          {unit: Count, rollups: [][]string{{DimChannel}}},
	Bounced:            {unit: Count, rollups: [][]string{{DimChannel}}},
	Complained:         {unit: Count, rollups: [][]string{{DimChannel}}},
	QuotaDeferred:      {unit: Count, rollups: [][]string{{DimChannel}}},
	Throttled:          {unit: Count, rollups: [][]string{{DimChannel}}},
	CampaignLots:       {unit: Count},
	CampaignNotified:   {unit: Count},
	CampaignSkipped:    {unit: Count},
	CampaignDropped:    {unit: Count},
	CampaignReconciles: {unit: Count},
	CampaignScanPages:  {unit: Count},
	Stuck:              {unit: Count, rollups: [][]string{{DimChannel}}},
	DueBehindWatermark: {unit: Count},
	ProviderRefused:    {unit: Count, rollups: [][]string{{DimChannel}}},
	ProviderSent:       {unit: Count},
	ProviderFailed:     {unit: Count},
	BreakerOpened:      {unit: Count, rollups: [][]string{{DimChannel}}},
}

// Names lists every metric name, for dashboards and tests.
func Names() []Name {
	return []Name{Accepted, Replayed, Rejected, Enqueued, Deferred, Skipped, Sent, Retried, Failed, Dropped, DeliveryLatency,
		DeliveredLatency, Delivered, Bounced, Complained, QuotaDeferred, Throttled,
		CampaignLots, CampaignNotified, CampaignSkipped, CampaignDropped, CampaignReconciles, CampaignScanPages, Stuck, DueBehindWatermark,
		ProviderRefused, ProviderSent, ProviderFailed, BreakerOpened}
}

// UnitOf returns a metric's unit ("" for unknown names).
func UnitOf(n Name) Unit { return specs[n].unit }

// Dims are a metric's dimension values. Empty fields are not dimensions.
type Dims struct {
	Channel  domain.Channel
	Priority domain.Priority
	Reason   domain.Reason
	// Code is a stable problem code (intake rejections), never free text.
	Code string
	// Provider is a provider name (ses:<region>, sns, sms-voice).
	Provider string
}

// Invalid replaces a dimension value outside its closed set.
const Invalid = "invalid"

var (
	codeShape     = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	providerShape = regexp.MustCompile(`^(ses:[a-z]{2}(-[a-z]+)+-[0-9]{1,2}|sns|sms-voice)$`)
)

// sanitized maps every value into its closed set, so a caller's mistake can
// never publish an address, a number or text as a dimension.
func (d Dims) sanitized() Dims {
	if d.Channel != "" {
		if _, err := domain.ParseChannel(string(d.Channel)); err != nil {
			d.Channel = Invalid
		}
	}
	if d.Priority != "" {
		if _, err := domain.ParsePriority(string(d.Priority)); err != nil {
			d.Priority = Invalid
		}
	}
	if d.Reason != "" && !codeShape.MatchString(string(d.Reason)) {
		d.Reason = Invalid
	}
	if d.Code != "" && !codeShape.MatchString(d.Code) {
		d.Code = Invalid
	}
	if d.Provider != "" && !providerShape.MatchString(d.Provider) {
		d.Provider = Invalid
	}
	return d
}

// keys lists the dimension names set in d, in a fixed order, with values.
func (d Dims) keys() ([]string, map[string]string) {
	names := []string{} // an empty set marshals as [], not null
	vals := map[string]string{}
	add := func(k, v string) {
		if v != "" {
			names = append(names, k)
			vals[k] = v
		}
	}
	add(DimChannel, string(d.Channel))
	add(DimPriority, string(d.Priority))
	add(DimReason, string(d.Reason))
	add(DimCode, d.Code)
	add(DimProvider, d.Provider)
	return names, vals
}

// Recorder is what handlers record metrics with. Implementations are safe
// for concurrent use and never fail the caller.
type Recorder interface {
	// Add counts n events of a counter metric.
	Add(ctx context.Context, name Name, d Dims, n int)
	// Observe records one value of a distribution metric (DeliveryLatency, ms).
	Observe(ctx context.Context, name Name, d Dims, v float64)
	// Flush publishes what was recorded since the last flush; call it once at
	// the end of every invocation.
	Flush(ctx context.Context)
}

// Nop records nothing; it is the default where no recorder is configured.
type Nop struct{}

var _ Recorder = Nop{}

// Add implements Recorder.
func (Nop) Add(context.Context, Name, Dims, int) {}

// Observe implements Recorder.
func (Nop) Observe(context.Context, Name, Dims, float64) {}

// Flush implements Recorder.
func (Nop) Flush(context.Context) {}

// Latency is the DeliveryLatency value between two instants, in milliseconds.
func Latency(from, to time.Time) float64 {
	return float64(to.Sub(from)) / float64(time.Millisecond)
}
