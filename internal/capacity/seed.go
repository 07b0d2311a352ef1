package capacity

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/events"
	"github.com/heraldhq/herald/internal/live"
	"github.com/heraldhq/herald/internal/policy"
)

// The seed profile's load arithmetic (issue 35): every figure that has to
// close is a named check (Check.Name one of these), its figures beside it,
// so `herald capacity --json` says which one failed and by how much.
const (
	// The limiter's effective rates are the ones the model uses.
	CheckSendQuota = "sendQuota"
	// The day's own traffic, per channel and in its busiest hour, within
	// the effective send rate, and its high share within the reserve.
	CheckSteadyState = "steadyState"
	// The campaign drains within the low-priority stuck window and the
	// work queues' retention.
	CheckCampaignDrain = "campaignDrain"
	// The online profile's pings, connects and writes within the WebSocket
	// stage throttle, the account's API Gateway throttle and the table's
	// write budget.
	CheckLiveConnections = "liveConnections"
	// The high relay's concurrency covers the stream's shards.
	CheckRelayHigh = "relayHighShards"
	// A campaign cannot take high priority.
	CheckCampaignPriority = "campaignPriority"
	// The 20,000/s peak with the quota and warm throughput it needs
	// (PeakRun).
	CheckPeak = "peak20k"
	// The SMS spend alarm between the profile's monthly spend and the
	// account's spend limit.
	CheckSMSSpend = "smsSpend"
	// PutEvents requests within the smallest regional quota.
	CheckPutEvents = "putEvents"
	// The event bus's name is the stack's own.
	CheckEventBusName = "eventBusName"
	// LiveQueue keeps a paced broadcast's continuation until it is handled.
	CheckLiveQueueRetention = "liveQueueRetention"
	// Each priority's path, step by step from the template's settings, fits
	// its latency objective at the seed's busy hour (latency.go).
	CheckLatencyObjective = "latencyObjective"
)

// SeedCheckNames are the named checks Run makes (CheckPeak is PeakRun's).
var SeedCheckNames = []string{CheckSendQuota, CheckSteadyState, CheckCampaignDrain, CheckLiveConnections, CheckRelayHigh,
	CheckCampaignPriority, CheckSMSSpend, CheckPutEvents, CheckEventBusName, CheckLiveQueueRetention, CheckLatencyObjective}

// Seed holds the figures of the named checks.
type Seed struct {
	// SendRates per channel: the parameter and the limiter's effective
	// rates (policy.SendQuota.EffectiveRate).
	SendRates map[string]Rate `json:"sendRates"`
	// Steady is the day's own traffic (high and normal) per channel.
	Steady map[string]Steady `json:"steadyDemand"`
	// Live is the online profile's periodic load.
	Live LiveLoad `json:"liveLoad"`
	// RelayHigh is the stream's shards against the high relay's
	// concurrency.
	RelayHigh RelayShards `json:"relayHigh"`
	// SMS is the profile's monthly SMS spend against the alarm and limit.
	SMS SMSSpend `json:"smsSpend"`
	// Events is the delivery events' PutEvents load.
	Events PutEventsLoad `json:"putEvents"`
	// Latency is each priority's latency budget against its objective.
	Latency map[string]LatencyBudget `json:"latencyObjective"`
}

// Rate is what the send quota lets one channel send: the parameter
// (Nominal) and, on average, low priority (Low) and the whole quota, high
// and normal (Whole): 5/6 of the parameter and of its bulk share, the price
// of holding the quota over any 5 s at the provider.
type Rate struct {
	Nominal float64 `json:"nominal"`
	Low     float64 `json:"low"`
	Whole   float64 `json:"whole"`
}

// Reserve is what low priority can never take, on average.
func (r Rate) Reserve() float64 { return r.Whole - r.Low }

var seedChannels = []domain.Channel{domain.ChannelEmail, domain.ChannelSMS, domain.ChannelPush}

// effectiveRates are the limiter's effective rates for l's send rates.
func effectiveRates(l Limits) map[domain.Channel]Rate {
	out := map[domain.Channel]Rate{}
	for _, c := range seedChannels {
		q := policy.SendQuota{Rate: int(l.SendRate[c]), BulkShare: int(l.BulkSharePercent)}
		out[c] = Rate{Nominal: l.SendRate[c], Low: q.EffectiveRate(domain.PriorityLow), Whole: q.EffectiveRate(domain.PriorityNormal)}
	}
	return out
}

func channelShares(p Profile) map[domain.Channel]float64 {
	return map[domain.Channel]float64{domain.ChannelSMS: p.SMSShare, domain.ChannelPush: p.PushShare, domain.ChannelEmail: 1 - p.SMSShare - p.PushShare}
}

// Steady is the day's own traffic on one channel, notifications a second:
// its average, its busiest hour, and the high share of that hour.
type Steady struct {
	Average  float64 `json:"average"`
	BusyHour float64 `json:"busyHour"`
	HighBusy float64 `json:"highBusyHour"`
}

// steadyDemand is the day's own traffic per channel: the day's
// notifications less the campaign's (the day's low priority), SMS high,
// SteadyHighShare of email and push high, the rest normal.
func steadyDemand(p Profile) map[domain.Channel]Steady {
	perSecond := math.Max(0, p.PerDay-float64(p.CampaignUsers)) / 86400
	out := map[domain.Channel]Steady{}
	for c, share := range channelShares(p) {
		high := p.SteadyHighShare
		if c == domain.ChannelSMS {
			high = 1
		}
		avg := perSecond * share
		out[c] = Steady{Average: round2(avg), BusyHour: round2(avg * p.BusyHourFactor), HighBusy: round2(avg * p.BusyHourFactor * high)}
	}
	return out
}

// never stands for a drain that does not end (no rate left): JSON has no
// infinity.
const never = 1e9

// campaignDrain is the campaign's drain per channel at rates: its
// recipients over what the low pollers, the send quota (low's effective
// rate, or what the whole effective rate leaves once the day's own traffic
// is sent, whichever is less) and the fan-out let through. A channel
// without a send rate is paced by the pollers alone.
func campaignDrain(p Profile, l Limits, rates map[domain.Channel]Rate) map[string]Drain {
	steady := steadyDemand(p)
	shares := channelShares(p)
	pollers := l.MaxConcurrency[domain.PriorityLow] * l.Batch[domain.PriorityLow] / workerSecondsPerBatch
	out := map[string]Drain{}
	for _, c := range seedChannels {
		n := float64(p.CampaignUsers) * shares[c]
		r := rates[c]
		quota := math.Max(0, math.Min(r.Low, r.Whole-steady[c].Average))
		if r.Nominal <= 0 {
			quota = pollers
		}
		rate := math.Min(math.Min(quota, pollers), l.CampaignFanOutRate*shares[c])
		hours := func(rate float64) float64 {
			if rate <= 0 {
				return never
			}
			return round2(n / rate / 3600)
		}
		out[string(c)] = Drain{Recipients: n, PerSecond: round2(rate), QuotaPerSecond: round2(quota), LowRate: round2(r.Low), WholeRate: round2(r.Whole),
			SteadyPerSecond: steady[c].Average, Hours: hours(rate), MinimumHours: hours(quota)}
	}
	return out
}

// cond is one condition of a named check: value ≤ limit.
type cond struct {
	what         string
	value, limit float64
}

// seedCheck records named check name: it passes when every condition
// holds; its Value and Limit are the condition nearest to (or furthest
// past) its limit, which Detail names. A failure adds the condition and
// hint to LimitsExceeded.
func (res *Result) seedCheck(name string, figures map[string]float64, hint string, conds ...cond) {
	binding, worst, ok := conds[0], math.Inf(-1), true
	for _, c := range conds {
		ratio := c.value / c.limit
		switch {
		case c.limit == 0 && c.value <= 0:
			ratio = 0
		case c.limit <= 0:
			ratio = math.Inf(1)
		}
		if ratio > worst {
			binding, worst = c, ratio
		}
		ok = ok && c.value <= c.limit
	}
	for k, v := range figures {
		figures[k] = round2(v)
	}
	res.Checks = append(res.Checks, Check{Name: name, Value: round2(binding.value), Limit: round2(binding.limit), Max: true, OK: ok,
		Figures: figures, Detail: binding.what})
	if !ok {
		res.LimitsExceeded = append(res.LimitsExceeded, fmt.Sprintf("%s: %s: %.2f > %.2f (%s)", name, binding.what, binding.value, binding.limit, hint))
	}
}

// checkSeed makes the named checks of the seed profile (Run calls it once
// the seconds are simulated; busiest is the scenario with the most table
// writes, whose load the live connections add to). campaignPriority is the
// rule the API applies to a campaign's priority.
func (res *Result) checkSeed(p Profile, l Limits, busiest Peak, campaignPriority func(domain.Priority) error) {
	rates := effectiveRates(l)
	res.Seed = Seed{SendRates: map[string]Rate{}, Steady: map[string]Steady{}}
	for c, r := range rates {
		res.Seed.SendRates[string(c)] = Rate{Nominal: r.Nominal, Low: round2(r.Low), Whole: round2(r.Whole)}
	}
	res.checkSendQuota(rates)
	res.checkSteadyState(p, rates)
	res.checkCampaignDrain(l)
	res.checkLiveConnections(p, l, busiest)
	res.checkRelayHigh(p, l)
	var high float64
	if campaignPriority(domain.PriorityHigh) == nil {
		high = 1
	}
	res.seedCheck(CheckCampaignPriority, map[string]float64{"highAccepted": high}, "refuse a high-priority campaign (domain.CampaignPriority)",
		cond{"campaigns accepted at high priority", high, 0})
	res.checkSMSSpend(p, l)
	res.checkPutEvents(p, rates)
	busName := 0.0
	if !l.EventBusPerStack {
		busName = 1
	}
	res.seedCheck(CheckEventBusName, map[string]float64{"namesWithoutTheStack": busName},
		fmt.Sprintf("the event bus %q does not name its stack: a second stack in the account and Region would collide (include ${AWS::StackName})", l.EventBusName),
		cond{"event bus names without the stack's name", busName, 0})
	res.checkLiveQueueRetention(l)
	res.checkLatencyObjective(l)
}

// checkSendQuota: the drain the model computes uses the limiter's
// effective rates, not the parameters (the limiter holds any 5 s at the
// provider under the rate, so it sends 5/6 of it on average).
func (res *Result) checkSendQuota(rates map[domain.Channel]Rate) {
	figures := map[string]float64{}
	var conds []cond
	for _, c := range seedChannels {
		r, d := rates[c], res.CampaignDrain[string(c)]
		figures[string(c)+".nominal"], figures[string(c)+".effectiveLow"], figures[string(c)+".effectiveWhole"] = r.Nominal, r.Low, r.Whole
		figures[string(c)+".modelledLow"], figures[string(c)+".modelledWhole"] = d.LowRate, d.WholeRate
		conds = append(conds, cond{string(c) + ": low rate the model uses vs the limiter's effective low rate", d.LowRate, round2(r.Low)},
			cond{string(c) + ": whole rate the model uses vs the limiter's effective rate", d.WholeRate, round2(r.Whole)})
	}
	res.seedCheck(CheckSendQuota, figures, "the model must use policy.SendQuota.EffectiveRate, not the parameter", conds...)
}

// checkSteadyState: per channel, the day's own traffic in its busiest hour
// within the effective send rate, and its high part within the reserve low
// priority cannot take.
func (res *Result) checkSteadyState(p Profile, rates map[domain.Channel]Rate) {
	figures := map[string]float64{"busyHourFactor": p.BusyHourFactor}
	var conds []cond
	for c, s := range steadyDemand(p) {
		res.Seed.Steady[string(c)] = s
		r := rates[c]
		if r.Nominal <= 0 { // no quota: nothing to fit in
			continue
		}
		figures[string(c)+".average"], figures[string(c)+".busyHour"], figures[string(c)+".highBusyHour"] = s.Average, s.BusyHour, s.HighBusy
		figures[string(c)+".effectiveRate"], figures[string(c)+".effectiveReserve"] = r.Whole, r.Reserve()
		conds = append(conds, cond{string(c) + ": busy-hour demand vs effective send rate", s.BusyHour, round2(r.Whole)},
			cond{string(c) + ": busy-hour high demand vs the reserve low cannot take", s.HighBusy, round2(r.Reserve())})
	}
	if len(conds) == 0 {
		conds = append(conds, cond{"no send rate", 0, 1})
	}
	slices.SortFunc(conds, func(a, b cond) int { return strings.Compare(a.what, b.what) })
	res.seedCheck(CheckSteadyState, figures, "raise the channel's send rate (the provider's quota)", conds...)
}

// checkCampaignDrain: the campaign drains (effective rates, the day's own
// traffic sent first) within the low-priority stuck window, so the in-flight
// watch does not send its waiting messages again, and within half the work
// queues' retention.
func (res *Result) checkCampaignDrain(l Limits) {
	minRetention := math.Inf(1)
	for _, r := range l.QueueRetention {
		minRetention = math.Min(minRetention, r)
	}
	figures := map[string]float64{"drainHours": res.CampaignDrainHours, "stuckAfterLowHours": l.StuckAfterLowSeconds / 3600,
		"minQueueRetentionHours": minRetention / 3600}
	for c, d := range res.CampaignDrain {
		figures[c+".hours"], figures[c+".perSecond"] = d.Hours, d.PerSecond
	}
	res.seedCheck(CheckCampaignDrain, figures, "a low delivery waiting longer than StuckAfter(low) is sent again by the in-flight watch; raise it or the send rate",
		cond{"drain hours vs StuckAfter(low)", res.CampaignDrainHours, l.StuckAfterLowSeconds / 3600},
		cond{"drain hours × 2 vs the work queues' retention", res.CampaignDrainHours * retentionOverDrain, minRetention / 3600})
}

// LiveLoad is the online profile's periodic load: its connections' pings,
// connects and disconnects (at API Gateway's connect quota, the worst
// churn), against the WebSocket stage throttle, the account's throttle
// (shared by HTTP, WebSocket and callback requests) and the table's write
// budget (its warm throughput less the busiest second's writes).
type LiveLoad struct {
	Connections          float64 `json:"connections"`
	PingsPerSecond       float64 `json:"pingsPerSecond"`
	ConnectsPerSecond    float64 `json:"connectsPerSecond"`
	TableWritesPerSecond float64 `json:"tableWritesPerSecond"`
	TableWriteBudget     float64 `json:"tableWriteBudget"`
	// AccountRequestsPerSecond: the busiest second's HTTP requests, an
	// announcement's broadcast (its posts and the kit's refetches) and a
	// campaign's posts, and the pings and connects.
	AccountRequestsPerSecond float64 `json:"accountRequestsPerSecond"`
}

func (res *Result) checkLiveConnections(p Profile, l Limits, busiest Peak) {
	lp := res.Live.Profile
	conns := float64(p.Users) * lp.OnlineShare * lp.ConnectionsPerOnlineUser
	pings := conns / lp.PingSeconds
	connects := float64(WebSocketNewConnectionsPerSecond)
	writes := pings*lp.PingWrites + connects*(lp.ConnectWrites+lp.DisconnectWrites)
	budget := l.warm("table", true) - busiest.TableWriteUnitsPerSecond
	broadcast := l.LiveBroadcastRate * lp.ConnectionsPerOnlineUser // posts, and as many refetches
	campaignPosts := busiest.CampaignNotificationsPerSecond * lp.OnlineShare * lp.ConnectionsPerOnlineUser
	account := busiest.APIRequestsPerSecond + 2*broadcast + campaignPosts + pings + connects
	res.Seed.Live = LiveLoad{Connections: round2(conns), PingsPerSecond: round2(pings), ConnectsPerSecond: connects, TableWritesPerSecond: round2(writes),
		TableWriteBudget: round2(budget), AccountRequestsPerSecond: round2(account)}
	res.seedCheck(CheckLiveConnections, map[string]float64{"connections": conns, "pingSeconds": lp.PingSeconds, "pingsPerSecond": pings,
		"connectsPerSecond": connects, "tableWritesPerSecond": writes, "tableWriteBudget": budget, "stageRateLimit": l.LiveRouteRateLimit,
		"accountRequestsPerSecond": account, "accountThrottle": HTTPAPIRequestsPerSecond},
		"ping less often (live.PingInterval, within API Gateway's 10-minute idle timeout), write less per ping, or raise LiveThrottlingRateLimit",
		cond{"pings/s × headroom vs the WebSocket stage throttle", pings * apiHeadroom, l.LiveRouteRateLimit},
		cond{"connects/s × headroom vs the WebSocket stage throttle", connects * apiHeadroom, l.LiveRouteRateLimit},
		cond{"HTTP, WebSocket and callback requests/s vs the account's API Gateway throttle", account, HTTPAPIRequestsPerSecond},
		cond{"live table writes/s vs the table's warm write throughput left by the busiest second", writes, budget})
}

// RelayShards is the table stream's shards at the table's warm throughput
// against the high relay's concurrency: its reserved concurrency, or the
// account's unreserved pool when it reserves none.
type RelayShards struct {
	Shards      float64 `json:"shards"`
	Needed      float64 `json:"concurrencyNeeded"`
	Concurrency float64 `json:"concurrency"`
}

func (res *Result) checkRelayHigh(p Profile, l Limits) {
	shards := streamShards(l)
	need := 0.0
	for id, fn := range l.StreamFunction {
		if fn == "RelayHighFunction" {
			need = math.Max(need, shards*l.StreamParallelization[id])
		}
	}
	have, ok := l.Reserved["RelayHighFunction"]
	if !ok {
		have = float64(p.LambdaConcurrency)
		for _, r := range l.Reserved {
			have -= r
		}
	}
	res.Seed.RelayHigh = RelayShards{Shards: shards, Needed: need, Concurrency: have}
	res.seedCheck(CheckRelayHigh, map[string]float64{"shards": shards, "warmWrite": l.warm("table", true), "warmRead": l.warm("table", false),
		"concurrencyNeeded": need, "concurrency": have},
		"raise RelayHighReservedConcurrency to the stream's shards: a high record waits while its shard's batch finds no concurrency",
		cond{"shards × ParallelizationFactor vs the high relay's concurrency", need, have})
}

// streamShards is the table stream's shards at the table's warm
// throughput: a shard per partition, a partition per 1,000 writes or 3,000
// reads a second.
func streamShards(l Limits) float64 {
	return math.Max(math.Ceil(l.warm("table", true)/PartitionWriteUnitsPerSecond), math.Ceil(l.warm("table", false)/PartitionReadUnitsPerSecond))
}

// SMSSpend is the profile's monthly SMS spend (its SMS at the US price)
// against the spend alarm (SmsMonthlySpendAlarmUSD) and the account's
// spend limit, at which SNS stops sending.
type SMSSpend struct {
	PerMonth    float64 `json:"smsPerMonth"`
	USDPerMonth float64 `json:"usdPerMonth"`
	AlarmUSD    float64 `json:"alarmUSD"`
	LimitUSD    float64 `json:"limitUSD"`
}

// smsAlarmBeforeLimit: the alarm fires at most at this share of the spend
// limit, so someone can act before SNS stops sending.
const smsAlarmBeforeLimit = 0.9

func (res *Result) checkSMSSpend(p Profile, l Limits) {
	perMonth := p.PerDay * p.SMSShare * 365 / 12
	spend := perMonth * ListPrices.SNSSMSUS
	res.Seed.SMS = SMSSpend{PerMonth: round2(perMonth), USDPerMonth: round2(spend), AlarmUSD: l.SMSSpendAlarmUSD, LimitUSD: p.SMSMonthlySpendLimitUSD}
	res.seedCheck(CheckSMSSpend, map[string]float64{"smsPerMonth": perMonth, "usdPerMonth": spend, "alarmUSD": l.SMSSpendAlarmUSD,
		"limitUSD": p.SMSMonthlySpendLimitUSD},
		"set SmsMonthlySpendAlarmUSD above the month's spend and the account's SMS spend limit above the alarm",
		cond{"the profile's monthly SMS spend vs SmsMonthlySpendAlarmUSD (an alarm every month is no alarm)", spend, l.SMSSpendAlarmUSD},
		cond{"SmsMonthlySpendAlarmUSD vs 90 % of the account's SMS spend limit", l.SMSSpendAlarmUSD, smsAlarmBeforeLimit * p.SMSMonthlySpendLimitUSD})
}

// PutEventsLoad is the delivery events' PutEvents requests at the busiest:
// every channel sending at its whole effective rate, DeliveryEvents all
// (email's sent and delivered, the others' sent), 10 entries a request and
// at most one partial request per relay batch.
type PutEventsLoad struct {
	EventsPerSecond   float64 `json:"eventsPerSecond"`
	RequestsPerSecond float64 `json:"requestsPerSecond"`
	Quota             float64 `json:"quota"`
}

func (res *Result) checkPutEvents(p Profile, rates map[domain.Channel]Rate) {
	steady := steadyDemand(p)
	shares := channelShares(p)
	eventsPerSecond := 0.0
	for _, c := range seedChannels {
		sent := rates[c].Whole
		if rates[c].Nominal <= 0 { // unpaced: the day's busiest hour and the peak
			sent = steady[c].BusyHour + p.PeakPerSecond*shares[c]
		}
		eventsPerSecond += sent * eventsPerDelivery(c, events.ModeAll, true)
	}
	requests := eventsPerSecond/events.MaxEntriesPerPut + eventsPerSecond/eventRecordsPerBatch
	res.Seed.Events = PutEventsLoad{EventsPerSecond: round2(eventsPerSecond), RequestsPerSecond: round2(requests), Quota: PutEventsRequestsPerSecondMin}
	res.seedCheck(CheckPutEvents, map[string]float64{"eventsPerSecond": eventsPerSecond, "requestsPerSecond": requests, "quota": PutEventsRequestsPerSecondMin},
		"request a higher PutEvents quota for the Region, or keep DeliveryEvents at failures",
		cond{"PutEvents requests/s (DeliveryEvents all, every channel at its send rate) vs the smallest Region's quota", requests, PutEventsRequestsPerSecondMin})
}

// checkLiveQueueRetention: LiveQueue keeps a broadcast's continuation page
// (delayed to pace the broadcast: a page of every shard at
// LiveBroadcastRate) through its delay and every receive it may take.
func (res *Result) checkLiveQueueRetention(l Limits) {
	delay := 0.0
	if l.LiveBroadcastRate > 0 {
		delay = float64(live.BroadcastPage*live.OnlineShards) / l.LiveBroadcastRate
	}
	need := delay + l.LiveQueueReceives*l.LiveQueueVisibility
	res.seedCheck(CheckLiveQueueRetention, map[string]float64{"continuationDelaySeconds": delay, "receives": l.LiveQueueReceives,
		"visibilitySeconds": l.LiveQueueVisibility, "retentionSeconds": l.LiveQueueRetention},
		"raise LiveBroadcastRate or LiveQueue's MessageRetentionPeriod: a continuation that expires ends its shard's broadcast",
		cond{"a continuation's delay + its receives × visibility timeout vs LiveQueue's retention (s)", need, l.LiveQueueRetention})
}

// PeakScenario is the seed's 20,000/s campaign fanned out unpaced: the
// per-table quota and warm throughput (table and each index) that carry
// it, the stream's shards at that throughput (RelayHighReservedConcurrency),
// what its minutes cost in DynamoDB requests, and what the model says with
// those parameters (LimitsExceeded: none).
type PeakScenario struct {
	FanOutRate float64 `json:"fanOutRate"`
	// The busiest second's units per second (the peak's, by table and index).
	WriteUnitsPerSecond map[string]float64 `json:"writeUnitsPerSecond"`
	ReadUnitsPerSecond  map[string]float64 `json:"readUnitsPerSecond"`
	// TableWriteQuota and TableReadQuota to request (per table and per
	// index), WarmWrite and WarmRead to pre-warm each to.
	TableWriteQuota float64            `json:"tableWriteQuota"`
	TableReadQuota  float64            `json:"tableReadQuota"`
	WarmWrite       map[string]float64 `json:"warmWriteUnitsPerSecond"`
	WarmRead        map[string]float64 `json:"warmReadUnitsPerSecond"`
	// RelayHighShards is the stream's shards at that warm throughput: the
	// high relay's reserved concurrency to set.
	RelayHighShards float64 `json:"relayHighShards"`
	// LambdaConcurrency is the peak second's (sum).
	LambdaConcurrency float64 `json:"lambdaConcurrency"`
	// PeakUSD is the DynamoDB requests of the peak's minutes (the same
	// units per notification as paced: the pre-warming is AWS's one-time
	// charge, not priced here).
	Minutes        float64  `json:"minutes"`
	PeakUSD        float64  `json:"peakDynamoDBUSD"`
	LimitsExceeded []string `json:"limitsExceeded"`
}

// peakRound rounds a required throughput up to a thousand.
func peakRound(v float64) float64 { return math.Ceil(v/1000) * 1000 }

// PeakRun runs the model with the profile's peak fanned out unpaced
// (CampaignFanOutRate = PeakPerSecond): once with no table quota or warm
// limit, to measure what each second asks of the table and each index
// (plus the live connections' writes on the table), then with the quota
// and warm throughput set to that (rounded up to a thousand; never below
// the template's) and the high relay's reserved concurrency to the stream's
// shards there. The check passes when the second run exceeds nothing.
func PeakRun(p Profile, l Limits) (PeakScenario, Check, error) {
	base := cloneLimits(l)
	base.CampaignFanOutRate = p.PeakPerSecond
	open := cloneLimits(base)
	open.TableWriteQuota, open.TableReadQuota = 1e12, 1e12
	measured, err := Run(p, open)
	if err != nil {
		return PeakScenario{}, Check{}, err
	}
	sc := PeakScenario{FanOutRate: p.PeakPerSecond, WriteUnitsPerSecond: map[string]float64{}, ReadUnitsPerSecond: map[string]float64{},
		WarmWrite: map[string]float64{}, WarmRead: map[string]float64{}, Minutes: float64(p.PeakMinutes)}
	liveWrites := measured.Seed.Live.TableWritesPerSecond
	for _, pk := range measured.Peaks {
		w := map[string]float64{"table": pk.TableWriteUnitsPerSecond + liveWrites}
		r := map[string]float64{"table": pk.TableReadUnitsPerSecond}
		maps.Copy(w, pk.IndexWriteUnitsPerSecond)
		maps.Copy(r, pk.IndexReadUnitsPerSecond)
		for where, u := range w {
			sc.WriteUnitsPerSecond[where] = math.Max(sc.WriteUnitsPerSecond[where], u)
		}
		for where, u := range r {
			sc.ReadUnitsPerSecond[where] = math.Max(sc.ReadUnitsPerSecond[where], u)
		}
		if pk.CampaignNotificationsPerSecond > 0 {
			for _, n := range pk.LambdaConcurrency {
				sc.LambdaConcurrency += n
			}
		}
	}
	// A topic send fanned out at the peak's rate writes the table more
	// than the campaign (no recipient deferred; its pages' chunks).
	for _, ts := range measured.Topics {
		sc.WriteUnitsPerSecond["table"] = math.Max(sc.WriteUnitsPerSecond["table"], ts.TableWriteUnitsPerSecond+liveWrites)
		sc.ReadUnitsPerSecond["table"] = math.Max(sc.ReadUnitsPerSecond["table"], ts.ReadUnitsPerSecond) // its indexes' few reads included
	}
	tuned := cloneLimits(base)
	sc.TableWriteQuota, sc.TableReadQuota = TableWriteUnitsPerSecondQuota, TableReadUnitsPerSecondQuota
	for where, u := range sc.WriteUnitsPerSecond {
		sc.WarmWrite[where] = math.Max(peakRound(u), l.warm(where, true))
		sc.TableWriteQuota = math.Max(sc.TableWriteQuota, sc.WarmWrite[where])
		sc.PeakUSD += u * sc.Minutes * 60 * ListPrices.WriteRequestUnit
	}
	for where, u := range sc.ReadUnitsPerSecond {
		sc.WarmRead[where] = math.Max(peakRound(u), l.warm(where, false))
		sc.TableReadQuota = math.Max(sc.TableReadQuota, sc.WarmRead[where])
		sc.PeakUSD += u * sc.Minutes * 60 * ListPrices.ReadRequestUnit
	}
	sc.PeakUSD = round2(sc.PeakUSD)
	maps.Copy(tuned.WarmWrite, sc.WarmWrite)
	maps.Copy(tuned.WarmRead, sc.WarmRead)
	tuned.TableWriteQuota, tuned.TableReadQuota = sc.TableWriteQuota, sc.TableReadQuota
	sc.RelayHighShards = streamShards(tuned)
	if _, ok := tuned.Reserved["RelayHighFunction"]; ok {
		tuned.Reserved["RelayHighFunction"] = math.Max(tuned.Reserved["RelayHighFunction"], sc.RelayHighShards)
	}
	res, err := Run(p, tuned)
	if err != nil {
		return sc, Check{}, err
	}
	sc.LimitsExceeded = res.LimitsExceeded
	check := Result{}
	figures := map[string]float64{"fanOutRate": sc.FanOutRate, "tableWriteQuota": sc.TableWriteQuota, "tableReadQuota": sc.TableReadQuota,
		"relayHighShards": sc.RelayHighShards, "lambdaConcurrency": sc.LambdaConcurrency, "peakDynamoDBUSD": sc.PeakUSD}
	for where, v := range sc.WarmWrite {
		figures["warmWrite."+where] = v
	}
	check.seedCheck(CheckPeak, figures, "see peak20k.limitsExceeded",
		cond{"limits the model exceeds at the peak with these quotas and warm throughput", float64(len(res.LimitsExceeded)), 0})
	return sc, check.Checks[0], nil
}

// cloneLimits copies l with its own maps, so a scenario can change them.
func cloneLimits(l Limits) Limits {
	c := l
	c.SendRate, c.Batch, c.MaxConcurrency = maps.Clone(l.SendRate), maps.Clone(l.Batch), maps.Clone(l.MaxConcurrency)
	c.Routes, c.WarmWrite, c.WarmRead = maps.Clone(l.Routes), maps.Clone(l.WarmWrite), maps.Clone(l.WarmRead)
	c.QueueRetention, c.Reserved, c.MappingConcurrency = maps.Clone(l.QueueRetention), maps.Clone(l.Reserved), maps.Clone(l.MappingConcurrency)
	c.StreamRecordAge, c.Traced = maps.Clone(l.StreamRecordAge), maps.Clone(l.Traced)
	c.StreamParallelization, c.StreamFunction = maps.Clone(l.StreamParallelization), maps.Clone(l.StreamFunction)
	return c
}
