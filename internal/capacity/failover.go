package capacity

import (
	"fmt"
	"math"
	"time"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/failover"
)

// Named checks of provider failover (issue 38).
const (
	// CheckFailoverHealthy: while the primary answers, what the breaker's
	// cached reads add to a notification stays under FailoverHealthyLimitUSD.
	CheckFailoverHealthy = "failoverHealthyCost"
	// CheckFailoverBreakerPartition: in an outage, every send to a failing
	// primary is one conditional write on the breakers' one partition until
	// each instance's cache sees the breaker open.
	CheckFailoverBreakerPartition = "failoverBreakerPartition"
	// CheckFailoverSecondaryQuota: the secondary carries the channel's
	// busy hour at its own effective rate.
	CheckFailoverSecondaryQuota = "failoverSecondaryQuota"
)

// FailoverHealthyLimitUSD is what failover may add per million
// notifications of a kind while the primary is healthy (issue 38).
const FailoverHealthyLimitUSD = 0.05

// failoverChannels have a second provider: email (SES in a second region),
// SMS (SNS and End User Messaging SMS). Push has one path per platform.
var failoverChannels = []domain.Channel{domain.ChannelEmail, domain.ChannelSMS}

var channelFunction = map[domain.Channel]string{domain.ChannelEmail: "EmailFunction", domain.ChannelSMS: "SmsFunction", domain.ChannelPush: "PushFunction"}

// FailoverCost is provider failover's DynamoDB work at the profile's
// traffic, with failover.DefaultRules and both channels' failover on.
type FailoverCost struct {
	// BreakerItemBytes is a breaker item at its largest (every attribute).
	BreakerItemBytes int     `json:"breakerItemBytes"`
	RefreshSeconds   float64 `json:"refreshSeconds"`
	// Healthy: each worker instance re-reads its primary's breaker at most
	// once per Refresh (eventually consistent GetItem); nothing is written
	// while the primary answers, and no send goes to the secondary.
	Healthy map[string]FailoverHealthy `json:"healthy"`
	// HealthyPerMillionUSD is what the reads add per million notifications
	// of each kind (a share of its failover channels' reads at the
	// profile's average traffic); push-only kinds add nothing.
	HealthyPerMillionUSD map[string]float64 `json:"healthyPerMillionUSD"`
	// Outage is the primary down on one channel.
	Outage map[string]FailoverOutage `json:"outage"`
}

// FailoverHealthy is one channel's breaker reads with a healthy primary.
type FailoverHealthy struct {
	// Instances: the channel function's mappings' MaximumConcurrency, each
	// a worker instance with its own cache.
	Instances          float64 `json:"instances"`
	ReadsPerSecond     float64 `json:"readsPerSecond"`
	ReadUnitsPerSecond float64 `json:"readUnitsPerSecond"`
	// DeliveriesPerSecond is the channel's share of the average traffic;
	// PerMillionUSD the reads per million of its deliveries.
	DeliveriesPerSecond float64 `json:"deliveriesPerSecond"`
	PerMillionUSD       float64 `json:"perMillionUSD"`
	// BreakEvenPerSecond is the channel's traffic under which the reads
	// would add more than FailoverHealthyLimitUSD per million.
	BreakEvenPerSecond float64 `json:"breakEvenPerSecond"`
}

// FailoverOutage is one channel's failover while its primary is down.
type FailoverOutage struct {
	// FailureWritesPerSecond: until every instance's cache sees the breaker
	// open (Refresh after it opens), each send to the primary fails and
	// records it, one conditional UpdateItem (billed when refused), at most
	// the channel's effective send rate (a send takes its quota token
	// first). FailureWriteUnits is that transition's total.
	FailureWritesPerSecond float64 `json:"failureWritesPerSecond"`
	FailureWriteUnits      float64 `json:"failureWriteUnits"`
	// ProbeWritesPerSecond: once open, a probe every OpenFor (taken, then
	// its outcome: two conditional writes).
	ProbeWritesPerSecond float64 `json:"probeWritesPerSecond"`
	// ReadUnitsPerSecond: each instance re-reads both breakers (the
	// secondary's is read while the primary's is not closed).
	ReadUnitsPerSecond float64 `json:"readUnitsPerSecond"`
	// PerMillionUSD: the reads and probes per million of the channel's
	// deliveries at its average traffic during the outage (the send quota's
	// token moves to the secondary's counter: one write either way).
	PerMillionUSD float64 `json:"perMillionUSD"`
	// Secondary is the secondary's effective rates (its own quota: the same
	// HIGH reserve and bulk share); BusyHour the channel's busy-hour demand
	// it must carry.
	Secondary Rate    `json:"secondaryRate"`
	BusyHour  float64 `json:"busyHour"`
}

// FailoverCosts prices failover for profile p under l, with the rules r.
func FailoverCosts(p Profile, l Limits, r failover.Rules, prices Prices) (FailoverCost, error) {
	at := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	full := failover.Breaker{Provider: failover.SES("ap-southeast-2"), Failures: r.Threshold, WindowStart: at, OpenUntil: at.Add(r.OpenFor),
		OpenedAt: at, ProbeUntil: at.Add(r.ProbeLease), Forced: failover.ForceClosed}
	bk, err := dynamo.BreakerItemKeys(full)
	if err != nil {
		return FailoverCost{}, err
	}
	read, write := dynamo.ReadUnits(bk.Size, false), dynamo.WriteUnits(bk.Size)
	refresh := r.Refresh.Seconds()
	out := FailoverCost{BreakerItemBytes: bk.Size, RefreshSeconds: refresh, Healthy: map[string]FailoverHealthy{},
		HealthyPerMillionUSD: map[string]float64{}, Outage: map[string]FailoverOutage{}}
	shares, steady, rates := channelShares(p), steadyDemand(p), effectiveRates(l)
	perDelivery := map[domain.Channel]float64{} // healthy $ per delivery
	for _, c := range failoverChannels {
		inst := l.MappingConcurrency[channelFunction[c]]
		if inst == 0 {
			return out, fmt.Errorf("failover: no mappings for %s in the template", channelFunction[c])
		}
		reads := inst / refresh
		units := reads * read
		deliveries := p.AveragePerSecond * shares[c]
		usdPerSecond := units * prices.ReadRequestUnit
		perDelivery[c] = usdPerSecond / deliveries
		out.Healthy[string(c)] = FailoverHealthy{Instances: inst, ReadsPerSecond: round2(reads), ReadUnitsPerSecond: round2(units),
			DeliveriesPerSecond: round2(deliveries), PerMillionUSD: round4(perDelivery[c] * 1e6),
			BreakEvenPerSecond: round2(usdPerSecond * 1e6 / FailoverHealthyLimitUSD)}
		// The secondary's quota: the same rate as the primary's unless the
		// template names its own (EmailSecondarySendRate; 0: the profile's).
		sec := l.SecondarySendRate[c]
		if sec == 0 {
			sec = p.ProviderRatePerSecond
		}
		secRates := effectiveRates(Limits{SendRate: map[domain.Channel]float64{c: sec}, BulkSharePercent: l.BulkSharePercent})[c]
		outageUnits := 2 * units
		probes := 2 * write / r.OpenFor.Seconds()
		out.Outage[string(c)] = FailoverOutage{FailureWritesPerSecond: round2(rates[c].Whole * write), FailureWriteUnits: round2(rates[c].Whole * write * refresh),
			ProbeWritesPerSecond: round2(probes), ReadUnitsPerSecond: round2(outageUnits),
			PerMillionUSD: round4((outageUnits*prices.ReadRequestUnit + probes*prices.WriteRequestUnit) / deliveries * 1e6),
			Secondary:     Rate{Nominal: secRates.Nominal, Low: round2(secRates.Low), Whole: round2(secRates.Whole)}, BusyHour: steady[c].BusyHour}
	}
	for _, k := range Kinds() {
		added := 0.0
		for _, c := range k.Channels {
			added += perDelivery[c] // zero for a channel without failover
		}
		out.HealthyPerMillionUSD[k.Name] = round4(added * 1e6)
	}
	return out, nil
}

// checkFailover makes failover's named checks.
func (res *Result) checkFailover(f FailoverCost) {
	worstKind, worst := "", 0.0
	for k, v := range f.HealthyPerMillionUSD {
		if v > worst || worstKind == "" {
			worstKind, worst = k, v
		}
	}
	figures := map[string]float64{}
	for k, v := range f.HealthyPerMillionUSD {
		figures[k] = v
	}
	res.seedCheckPrecise(CheckFailoverHealthy, figures, "fewer worker instances, or a longer failover.Rules.Refresh",
		cond{fmt.Sprintf("$ per million added by the breaker's reads with a healthy primary (%s, the dearest kind) vs %.2f", worstKind, FailoverHealthyLimitUSD), worst, FailoverHealthyLimitUSD})
	// Every failover channel's primary down at once: their failures share
	// the breakers' partition.
	writes := 0.0
	partition := map[string]float64{}
	for c, o := range f.Outage {
		writes += o.FailureWritesPerSecond
		partition[c] = o.FailureWritesPerSecond
	}
	res.seedCheck(CheckFailoverBreakerPartition, partition, "shard the breakers' partition, or stop recording failures once the count passed the threshold",
		cond{"breaker failure writes/s, every failover channel's primary down at once, vs a partition's write units", writes, PartitionWriteUnitsPerSecond})
	conds := []cond{}
	secFigures := map[string]float64{}
	for _, c := range failoverChannels {
		o := f.Outage[string(c)]
		secFigures[string(c)+"BusyHour"], secFigures[string(c)+"SecondaryWhole"] = o.BusyHour, o.Secondary.Whole
		conds = append(conds, cond{string(c) + ": busy-hour demand vs the secondary's effective send rate", o.BusyHour, o.Secondary.Whole})
	}
	res.seedCheck(CheckFailoverSecondaryQuota, secFigures, "raise the secondary's send quota (EmailSecondarySendRate) to carry the channel's busy hour", conds...)
}

// seedCheckPrecise is seedCheck keeping four decimals of the binding pair
// (a check of cents per million).
func (res *Result) seedCheckPrecise(name string, figures map[string]float64, hint string, c cond) {
	ok := c.value <= c.limit
	res.Checks = append(res.Checks, Check{Name: name, Value: round4(c.value), Limit: round4(c.limit), Max: true, OK: ok, Figures: figures, Detail: c.what})
	if !ok {
		res.LimitsExceeded = append(res.LimitsExceeded, fmt.Sprintf("%s: %s: %.4f > %.4f (%s)", name, c.what, c.value, c.limit, hint))
	}
}

func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }
