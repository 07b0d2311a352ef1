package capacity

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/cfnyaml"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/recovery"
	"github.com/heraldhq/herald/internal/scheduler"
)

// AWS's documented quotas the model checks against, each named after the
// quota and the page that states it (defaults of an account; the adjustable
// ones are what the README's deploy walkthrough asks to raise).
const (
	// "Read/write throughput" per partition: DynamoDB developer guide,
	// "Service, account, and table quotas in Amazon DynamoDB" (also the
	// partition key design guide): 1,000 WCU and 3,000 RCU per partition.
	PartitionWriteUnitsPerSecond = 1000
	PartitionReadUnitsPerSecond  = 3000
	// "Per table" on-demand throughput (adjustable): same page, "Throughput
	// default quotas": 40,000 read and 40,000 write request units per second
	// per table (and per global secondary index).
	TableWriteUnitsPerSecondQuota = 40000
	TableReadUnitsPerSecondQuota  = 40000
	// Warm throughput of a new on-demand table (and of a new GSI): DynamoDB
	// developer guide, "Understanding DynamoDB warm throughput" and
	// "Pre-warming a table for on-demand capacity mode": 4,000 writes and
	// 12,000 reads per second; beyond that it serves up to twice its previous
	// peak, at most doubling every 30 minutes, unless pre-warmed.
	NewTableWarmWriteUnitsPerSecond = 4000
	NewTableWarmReadUnitsPerSecond  = 12000
	// "Throttle quota per account, per Region across HTTP APIs, REST APIs,
	// WebSocket APIs, and WebSocket callback APIs": 10,000 requests per
	// second, burst 5,000 (adjustable). API Gateway developer guide, "Amazon
	// API Gateway quotas".
	HTTPAPIRequestsPerSecond = 10000
	HTTPAPIBurst             = 5000
	// Lambda keeps at least 100 of the account's concurrency unreserved:
	// Lambda developer guide, "Configuring reserved concurrency" (and
	// "Lambda quotas": concurrent executions 1,000 by default).
	LambdaUnreservedConcurrencyMinimum = 100
	// SQS "Message retention" maximum: 14 days (SQS developer guide,
	// "Amazon SQS message quotas").
	SQSMaxRetentionSeconds = 1209600
	// "PutEvents throttle limit in transactions per second": requests (of
	// up to 10 entries) per second per account and Region, by Region, the
	// smallest default 400 (af-south-1, eu-south-1 and others; 10,000 in
	// us-east-1, us-west-2, eu-west-1). EventBridge user guide, "Amazon
	// EventBridge quotas", "PutEvents quotas by Region". The template does
	// not know its Region, so the model holds the smallest.
	PutEventsRequestsPerSecondMin = 400
	// A DynamoDB stream has a shard per table partition, and a partition
	// serves at most PartitionWriteUnitsPerSecond and
	// PartitionReadUnitsPerSecond: a table warm for W writes and R reads
	// has at least max(W/1,000, R/3,000) partitions, so shards. Lambda runs
	// one batch per shard at a time (× the mapping's ParallelizationFactor,
	// 1 by default): Lambda developer guide, "Using AWS Lambda with Amazon
	// DynamoDB", "Polling and batching streams".
	defaultParallelizationFactor = 1
)

// Headroom the model asks of a throttle over the demand it carries: an API
// route's rate limit is at least twice the seed's requests per second.
const apiHeadroom = 2.0

// drainTolerance: campaignDrainHours within 10 % of the quota-bound minimum.
const drainTolerance = 1.10

// retentionOverDrain: a work queue keeps messages at least this many times
// the longest planned backlog (a campaign's drain).
const retentionOverDrain = 2.0

// Limits are what the model checks that the deployment decides: every value
// is read from template.yaml (its parameter defaults and resources), except
// the send rates, which are required parameters the profile supplies (the
// provider's quota).
type Limits struct {
	Template string `json:"template"`
	// Provider send rate per channel (EmailSendRate, SmsSendRate,
	// PushSendRate: required parameters, the profile's provider quota) and
	// the bulk share (BulkQuotaShare).
	SendRate         map[domain.Channel]float64 `json:"sendRatePerSecond"`
	BulkSharePercent float64                    `json:"bulkSharePercent"`
	// SecondarySendRate is a failover provider's own send rate per channel
	// (EmailSecondarySendRate; 0 or absent: the template sets none).
	SecondarySendRate map[domain.Channel]float64 `json:"secondarySendRatePerSecond"`
	// Per priority: the channel mappings' BatchSize and MaximumConcurrency.
	Batch          map[domain.Priority]float64 `json:"batchSize"`
	MaxConcurrency map[domain.Priority]float64 `json:"maximumConcurrency"`
	// HTTP API: DefaultRouteSettings and each RouteSettings override.
	RouteRateLimit  float64                  `json:"routeRateLimit"`
	RouteBurstLimit float64                  `json:"routeBurstLimit"`
	Routes          map[string]RouteThrottle `json:"routeSettings"`
	// Campaign fan-out: CampaignFanOutRate, the mapping's concurrency, the
	// function's timeout.
	CampaignFanOutRate     float64 `json:"campaignFanOutRate"`
	CampaignMaxConcurrency float64 `json:"campaignMaximumConcurrency"`
	CampaignTimeoutSeconds float64 `json:"campaignTimeoutSeconds"`
	// SchedulerReleaseRate: deliveries/s the scheduler releases at a due
	// time, all due partitions together (0: each at its own bound).
	SchedulerReleaseRate float64 `json:"schedulerReleaseRate"`
	// LiveBroadcastRate: users/s an announcement's live broadcast posts to.
	LiveBroadcastRate float64 `json:"liveBroadcastRate"`
	// Warm throughput of the table ("table") and each index; absent: a new
	// table's.
	WarmWrite map[string]float64 `json:"warmWriteUnitsPerSecond"`
	WarmRead  map[string]float64 `json:"warmReadUnitsPerSecond"`
	// Work queues' MessageRetentionPeriod (seconds).
	QueueRetention map[string]float64 `json:"queueRetentionSeconds"`
	// ReservedConcurrentExecutions per function, and the sum of each
	// function's mappings' MaximumConcurrency.
	Reserved           map[string]float64 `json:"reservedConcurrency"`
	MappingConcurrency map[string]float64 `json:"mappingConcurrency"`
	// Stream mappings' MaximumRecordAgeInSeconds (-1: never discarded).
	StreamRecordAge map[string]float64 `json:"streamMaximumRecordAgeInSeconds"`
	// Traced: the functions whose effective X-Ray mode is Active (the
	// Tracing parameter; X-Ray bills their sampled traces).
	Traced map[string]bool `json:"tracedFunctions"`
	// TableWriteQuota and TableReadQuota are the per-table (and per-index)
	// on-demand throughput quotas the account has (0: AWS's defaults,
	// TableWriteUnitsPerSecondQuota and TableReadUnitsPerSecondQuota); the
	// peak20k scenario raises them.
	TableWriteQuota float64 `json:"tableWriteQuota,omitempty"`
	TableReadQuota  float64 `json:"tableReadQuota,omitempty"`
	// StreamParallelization is each stream mapping's ParallelizationFactor
	// (absent: 1), by mapping id, and StreamFunction the function it runs.
	StreamParallelization map[string]float64 `json:"streamParallelization"`
	// Batching windows (MaximumBatchingWindowInSeconds; absent: 0) of
	// each stream mapping's function and of the email mappings per
	// priority: a record or message waits at most that long for its batch.
	StreamBatchingWindow map[string]float64          `json:"streamBatchingWindowSeconds"`
	QueueBatchingWindow  map[domain.Priority]float64 `json:"queueBatchingWindowSeconds"`
	// LatencyObjective per priority: the p99 objective in milliseconds
	// (HighLatencyObjective, NormalLatencyObjective; low has none).
	LatencyObjective map[domain.Priority]float64 `json:"latencyObjectiveMs"`
	StreamFunction   map[string]string           `json:"streamFunction"`
	// The live inbox's WebSocket stage throttle (LiveStage
	// DefaultRouteSettings: every route), and LiveQueue's retention,
	// visibility timeout and receives before its DLQ.
	LiveRouteRateLimit  float64 `json:"liveRouteRateLimit"`
	LiveRouteBurstLimit float64 `json:"liveRouteBurstLimit"`
	LiveQueueRetention  float64 `json:"liveQueueRetentionSeconds"`
	LiveQueueVisibility float64 `json:"liveQueueVisibilitySeconds"`
	LiveQueueReceives   float64 `json:"liveQueueMaxReceiveCount"`
	// SMSSpendAlarmUSD is SmsMonthlySpendAlarmUSD.
	SMSSpendAlarmUSD float64 `json:"smsSpendAlarmUSD"`
	// EventBusName is the event bus's name as the template resolves it
	// (AWS::StackName as devstack.LoadTemplate resolves it), and
	// EventBusPerStack whether the template builds it from AWS::StackName.
	EventBusName     string `json:"eventBusName"`
	EventBusPerStack bool   `json:"eventBusPerStack"`
	// StuckAfterLowSeconds is recovery.StuckAfter(low): how long a low
	// delivery may wait in flight before its work message is presumed lost.
	StuckAfterLowSeconds float64 `json:"stuckAfterLowSeconds"`
}

// RouteThrottle is one route's throttle.
type RouteThrottle struct {
	RateLimit  float64 `json:"rateLimit"`
	BurstLimit float64 `json:"burstLimit"`
}

// LoadLimits reads the limits from the template at path with its parameter
// defaults; the required send rates are the profile's provider quota.
func LoadLimits(path string, p Profile) (Limits, error) {
	rate := strconv.FormatFloat(p.ProviderRatePerSecond, 'f', -1, 64)
	tm, err := devstack.LoadTemplate(path, map[string]string{"EmailSendRate": rate, "SmsSendRate": rate, "PushSendRate": rate})
	if err != nil {
		return Limits{}, err
	}
	l, err := limitsOf(tm, path)
	if err != nil {
		return l, err
	}
	l.EventBusPerStack, err = busNamedByStack(path)
	return l, err
}

// busNamedByStack reports whether the template's event bus takes its name
// from AWS::StackName (read before intrinsics are resolved: the resolved
// name cannot tell a stack's name from a default that matches it).
func busNamedByStack(path string) (bool, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	plain, err := cfnyaml.ToJSON(raw)
	if err != nil {
		return false, fmt.Errorf("capacity limits: %w", err)
	}
	var doc struct {
		Resources map[string]struct {
			Type       string
			Properties struct{ Name json.RawMessage }
		}
	}
	if err := json.Unmarshal(plain, &doc); err != nil {
		return false, fmt.Errorf("capacity limits: %w", err)
	}
	for _, r := range doc.Resources {
		if r.Type == "AWS::Events::EventBus" {
			return strings.Contains(string(r.Properties.Name), "${AWS::StackName}") || strings.Contains(string(r.Properties.Name), `"AWS::StackName"`), nil
		}
	}
	return false, nil
}

func limitsOf(tm *devstack.Template, path string) (Limits, error) {
	l := Limits{Template: path, SendRate: map[domain.Channel]float64{}, SecondarySendRate: map[domain.Channel]float64{}, Batch: map[domain.Priority]float64{}, MaxConcurrency: map[domain.Priority]float64{},
		Routes: map[string]RouteThrottle{}, WarmWrite: map[string]float64{}, WarmRead: map[string]float64{}, QueueRetention: map[string]float64{},
		Reserved: map[string]float64{}, MappingConcurrency: map[string]float64{}, StreamRecordAge: map[string]float64{}, Traced: map[string]bool{},
		StreamParallelization: map[string]float64{}, StreamBatchingWindow: map[string]float64{}, QueueBatchingWindow: map[domain.Priority]float64{},
		LatencyObjective: map[domain.Priority]float64{}, StreamFunction: map[string]string{}, StuckAfterLowSeconds: recovery.StuckAfter(domain.PriorityLow).Seconds()}
	for _, fn := range tm.Functions() {
		if fn.Tracing == "Active" {
			l.Traced[fn.LogicalID] = true
		}
	}
	var errs []string
	num := func(v any, what string) float64 {
		switch x := v.(type) {
		case float64:
			return x
		case string:
			if f, err := strconv.ParseFloat(x, 64); err == nil {
				return f
			}
		}
		errs = append(errs, fmt.Sprintf("%s: %v is not a number", what, v))
		return 0
	}
	param := func(name string) float64 { return num(tm.Params[name], "parameter "+name) }
	l.SendRate[domain.ChannelEmail] = param("EmailSendRate")
	l.SendRate[domain.ChannelSMS] = param("SmsSendRate")
	l.SendRate[domain.ChannelPush] = param("PushSendRate")
	if _, ok := tm.Params["EmailSecondarySendRate"]; ok {
		l.SecondarySendRate[domain.ChannelEmail] = param("EmailSecondarySendRate")
	}
	l.BulkSharePercent = param("BulkQuotaShare")
	l.LatencyObjective[domain.PriorityHigh] = param("HighLatencyObjective")
	l.LatencyObjective[domain.PriorityNormal] = param("NormalLatencyObjective")

	resources, _ := tm.Document["Resources"].(map[string]any)
	props := func(id string) map[string]any {
		r, _ := resources[id].(map[string]any)
		p, _ := r["Properties"].(map[string]any)
		return p
	}
	typ := func(id string) string {
		r, _ := resources[id].(map[string]any)
		s, _ := r["Type"].(string)
		return s
	}
	ref := func(v any) string { // "${ref:X}" or "${getatt:X.Arn}" → X
		s, _ := v.(string)
		s = strings.TrimPrefix(strings.TrimPrefix(s, "${ref:"), "${getatt:")
		s, _, _ = strings.Cut(s, ".")
		return strings.TrimSuffix(s, "}")
	}
	globalTimeout := 3.0
	if g, ok := tm.GlobalFunction()["Timeout"]; ok {
		globalTimeout = num(g, "Globals.Function.Timeout")
	}
	for id := range resources {
		p := props(id)
		switch typ(id) {
		case "AWS::Serverless::HttpApi":
			if d, ok := p["DefaultRouteSettings"].(map[string]any); ok {
				l.RouteRateLimit = num(d["ThrottlingRateLimit"], id+" DefaultRouteSettings")
				l.RouteBurstLimit = num(d["ThrottlingBurstLimit"], id+" DefaultRouteSettings")
			}
			if rs, ok := p["RouteSettings"].(map[string]any); ok {
				for key, v := range rs {
					s, _ := v.(map[string]any)
					l.Routes[key] = RouteThrottle{RateLimit: num(s["ThrottlingRateLimit"], id+" "+key), BurstLimit: num(s["ThrottlingBurstLimit"], id+" "+key)}
				}
			}
		case "AWS::DynamoDB::Table":
			warm := func(where string, v any) {
				w, ok := v.(map[string]any)
				if !ok {
					return
				}
				if x, ok := w["WriteUnitsPerSecond"]; ok {
					l.WarmWrite[where] = num(x, where+" WarmThroughput")
				}
				if x, ok := w["ReadUnitsPerSecond"]; ok {
					l.WarmRead[where] = num(x, where+" WarmThroughput")
				}
			}
			warm("table", p["WarmThroughput"])
			gsis, _ := p["GlobalSecondaryIndexes"].([]any)
			for _, g := range gsis {
				g, _ := g.(map[string]any)
				name, _ := g["IndexName"].(string)
				warm(name, g["WarmThroughput"])
			}
		case "AWS::SQS::Queue":
			// The live inbox's queue keeps posts minutes on purpose: a post
			// older than that is worth nothing (the kit refetches the inbox
			// when it reconnects), so it is no backlog to keep; its own
			// check is a broadcast's paced delay (liveQueueRetention).
			if id == "LiveQueue" {
				l.LiveQueueRetention = num(p["MessageRetentionPeriod"], id+" MessageRetentionPeriod")
				l.LiveQueueVisibility = num(p["VisibilityTimeout"], id+" VisibilityTimeout")
				rp, _ := p["RedrivePolicy"].(map[string]any)
				l.LiveQueueReceives = num(rp["maxReceiveCount"], id+" maxReceiveCount")
				continue
			}
			if p["RedrivePolicy"] != nil {
				l.QueueRetention[id] = num(p["MessageRetentionPeriod"], id+" MessageRetentionPeriod")
			}
		case "AWS::ApiGatewayV2::Stage":
			if id == "LiveStage" {
				d, _ := p["DefaultRouteSettings"].(map[string]any)
				l.LiveRouteRateLimit = num(d["ThrottlingRateLimit"], id+" DefaultRouteSettings")
				l.LiveRouteBurstLimit = num(d["ThrottlingBurstLimit"], id+" DefaultRouteSettings")
			}
		case "AWS::Events::EventBus":
			l.EventBusName, _ = p["Name"].(string)
		case "AWS::Serverless::Function":
			if v, ok := p["ReservedConcurrentExecutions"]; ok {
				l.Reserved[id] = num(v, id+" ReservedConcurrentExecutions")
			}
			if id == "CampaignFunction" {
				l.CampaignTimeoutSeconds = globalTimeout
				if v, ok := p["Timeout"]; ok {
					l.CampaignTimeoutSeconds = num(v, id+" Timeout")
				}
			}
		case "AWS::Lambda::EventSourceMapping":
			fn := ref(p["FunctionName"])
			src := fmt.Sprint(p["EventSourceArn"])
			if strings.Contains(src, "StreamArn") {
				l.StreamRecordAge[id] = num(p["MaximumRecordAgeInSeconds"], id+" MaximumRecordAgeInSeconds")
				l.StreamFunction[id] = fn
				l.StreamParallelization[id] = defaultParallelizationFactor
				if v, ok := p["MaximumBatchingWindowInSeconds"]; ok {
					l.StreamBatchingWindow[fn] = math.Max(l.StreamBatchingWindow[fn], num(v, id+" MaximumBatchingWindowInSeconds"))
				}
				if v, ok := p["ParallelizationFactor"]; ok {
					l.StreamParallelization[id] = num(v, id+" ParallelizationFactor")
				}
				continue
			}
			sc, _ := p["ScalingConfig"].(map[string]any)
			conc := num(sc["MaximumConcurrency"], id+" MaximumConcurrency")
			l.MappingConcurrency[fn] += conc
			if fn == "CampaignFunction" {
				l.CampaignMaxConcurrency = conc
				continue
			}
			queue := ref(p["EventSourceArn"])
			for _, pr := range []domain.Priority{domain.PriorityHigh, domain.PriorityNormal, domain.PriorityLow} {
				name := strings.ToUpper(string(pr)[:1]) + string(pr)[1:]
				if strings.HasSuffix(queue, name+"Queue") && fn == "EmailFunction" {
					l.Batch[pr] = num(p["BatchSize"], id+" BatchSize")
					l.MaxConcurrency[pr] = conc
					if v, ok := p["MaximumBatchingWindowInSeconds"]; ok {
						l.QueueBatchingWindow[pr] = num(v, id+" MaximumBatchingWindowInSeconds")
					}
				}
			}
		}
	}
	l.CampaignFanOutRate = param("CampaignFanOutRate")
	l.SchedulerReleaseRate = param("SchedulerReleaseRate")
	l.LiveBroadcastRate = param("LiveBroadcastRate")
	l.SMSSpendAlarmUSD = param("SmsMonthlySpendAlarmUSD")
	if len(l.Batch) != 3 || l.RouteRateLimit == 0 || l.CampaignMaxConcurrency == 0 || l.CampaignTimeoutSeconds == 0 ||
		l.LiveRouteRateLimit == 0 || l.LiveQueueRetention == 0 || l.EventBusName == "" {
		errs = append(errs, fmt.Sprintf("template %s: channel mappings %v, route throttle %v, campaign mapping %v / timeout %v, live stage throttle %v, LiveQueue retention %v, event bus %q not all found",
			path, l.Batch, l.RouteRateLimit, l.CampaignMaxConcurrency, l.CampaignTimeoutSeconds, l.LiveRouteRateLimit, l.LiveQueueRetention, l.EventBusName))
	}
	if len(errs) > 0 {
		return l, fmt.Errorf("capacity limits: %s", strings.Join(errs, "; "))
	}
	return l, nil
}

// tableQuota is the per-table (and per-index) on-demand quota for writes
// or reads: the account's (TableWriteQuota, TableReadQuota), else AWS's
// default.
func (l Limits) tableQuota(write bool) float64 {
	switch {
	case write && l.TableWriteQuota > 0:
		return l.TableWriteQuota
	case write:
		return TableWriteUnitsPerSecondQuota
	case l.TableReadQuota > 0:
		return l.TableReadQuota
	}
	return TableReadUnitsPerSecondQuota
}

// warm is the warm throughput of where (the table or an index): its
// WarmThroughput, else a new table's.
func (l Limits) warm(where string, write bool) float64 {
	if write {
		if v, ok := l.WarmWrite[where]; ok {
			return v
		}
		return NewTableWarmWriteUnitsPerSecond
	}
	if v, ok := l.WarmRead[where]; ok {
		return v
	}
	return NewTableWarmReadUnitsPerSecond
}

// partitionReleaseRate is one due partition's release pace, as the
// scheduler derives it (schedulerfn, scheduler.New).
func (l Limits) partitionReleaseRate() int {
	r := float64(scheduler.MaxPartitionReleaseRate)
	if l.SchedulerReleaseRate > 0 {
		r = math.Min(l.SchedulerReleaseRate/dynamo.DueShards, r)
	}
	return int(r)
}

// routeBurst is route key's burst limit (its RouteSettings, else the default).
func (l Limits) routeBurst(key string) float64 {
	if r, ok := l.Routes[key]; ok {
		return r.BurstLimit
	}
	return l.RouteBurstLimit
}

// routeLimit is route key's rate limit (its RouteSettings, else the default).
func (l Limits) routeLimit(key string) float64 {
	if r, ok := l.Routes[key]; ok {
		return r.RateLimit
	}
	return l.RouteRateLimit
}
