// Package capacity prices and sizes Herald at full scale: the AWS list prices
// it uses, the cost of one notification from its usage (measured by the cost
// benchmark or derived by the model), and the capacity model behind
// `herald capacity`.
package capacity

import "sort"

// Prices are AWS list prices, us-east-1, on-demand, in USD.
type Prices struct {
	// Date the list was read.
	Date string `json:"date"`
	// DynamoDB on-demand, standard table class, per write / read request unit.
	WriteRequestUnit float64 `json:"writeRequestUnit"`
	ReadRequestUnit  float64 `json:"readRequestUnit"`
	// SQS standard queue, per request (each 64 KB chunk of a payload is one).
	SQSRequest float64 `json:"sqsRequest"`
	// Lambda arm64: per request and per GB-second.
	LambdaRequest  float64 `json:"lambdaRequest"`
	LambdaGBSecond float64 `json:"lambdaGBSecond"`
	// API Gateway HTTP API, per request (first 300 million a month; each 512 KB is one).
	HTTPAPIRequest float64 `json:"httpApiRequest"`
	// CloudWatch Logs ingestion (standard class), per GB.
	LogsIngestedGB float64 `json:"logsIngestedGB"`
	// X-Ray, per trace recorded (functions with Tracing Active: the
	// template's Tracing parameter, PassThrough by default).
	XRayTraceRecorded float64 `json:"xrayTraceRecorded"`
	// DynamoDB storage, standard table class, per GB-month (table and
	// index entries alike, each with 100 bytes of overhead).
	StorageGBMonth float64 `json:"storageGBMonth"`
	// Provider fees, shown beside Herald's own cost.
	SESEmail float64 `json:"sesEmail"`
	SNSSMSUS float64 `json:"snsSmsUS"`
	// EventBridge custom events (PutEvents), per 64 KB chunk of an entry.
	EventBridgeEvent float64 `json:"eventBridgeEvent"`
	// API Gateway WebSocket APIs: per message, either way (first billion a
	// month; metered in 32 KB increments), and per connection minute.
	WebSocketMessage          float64 `json:"webSocketMessage"`
	WebSocketConnectionMinute float64 `json:"webSocketConnectionMinute"`
}

// ListPrices are the prices every figure in docs/capacity.md uses.
var ListPrices = Prices{
	Date:              "list prices as published by AWS for us-east-1 since Nov 2024 (DynamoDB on-demand reduction); not re-checked online on 2026-12-03",
	WriteRequestUnit:  0.625 / 1e6,
	ReadRequestUnit:   0.125 / 1e6,
	SQSRequest:        0.40 / 1e6,
	LambdaRequest:     0.20 / 1e6,
	LambdaGBSecond:    0.0000133334,
	HTTPAPIRequest:    1.00 / 1e6,
	LogsIngestedGB:    0.50,
	XRayTraceRecorded: 5.00 / 1e6,
	StorageGBMonth:    0.25,
	SESEmail:          0.10 / 1000,
	SNSSMSUS:          0.00581,
	EventBridgeEvent:  1.00 / 1e6,
	// WebSocket APIs: $1.00 per million messages, $0.25 per million
	// connection minutes.
	WebSocketMessage:          1.00 / 1e6,
	WebSocketConnectionMinute: 0.25 / 1e6,
}

// PlatformLogBytesPerInvocation is what Lambda itself writes per invocation
// in JSON log format (platform.start and platform.report records) unless the
// template's SystemLogLevel is WARN: not written by Herald's code, so not
// measured locally; the size of a sample of those records.
const PlatformLogBytesPerInvocation = 600

// PlatformLogBytes is what Lambda writes per invocation under the template's
// Globals LoggingConfig.SystemLogLevel.
func PlatformLogBytes(systemLogLevel string) float64 {
	switch systemLogLevel {
	case "WARN", "ERROR", "FATAL":
		return 0 // only failures
	}
	return PlatformLogBytesPerInvocation
}

// XRaySampledShare is the share of a traced function's invocations X-Ray
// records at scale: Lambda's active tracing samples the first request each
// second and 5 % of the rest, and a function's sampling cannot be changed.
// The first-request reservoir (~86,400 traces a day per function, about
// $0.06 per million notifications at 50 M a day for the seven functions) is
// a cost per second, not per notification, and is left out.
const XRaySampledShare = 0.05

// Usage is what one notification uses on average.
type Usage struct {
	// WriteUnits and ReadUnits by "table" or index name.
	WriteUnits map[string]float64 `json:"writeUnits"`
	ReadUnits  map[string]float64 `json:"readUnits"`
	// SQSRequests counts sends, receives and deletes (64 KB units).
	SQSRequests float64 `json:"sqsRequests"`
	// Invocations and GBSeconds by function logical id.
	Invocations map[string]float64 `json:"invocations"`
	// TracedInvocations are the invocations of functions with active
	// X-Ray tracing (XRaySampledShare of them are recorded).
	TracedInvocations float64            `json:"tracedInvocations"`
	GBSeconds         map[string]float64 `json:"gbSeconds"`
	APIRequests       float64            `json:"apiRequests"`
	// LogBytes Herald writes (JSON lines and EMF); PlatformLogBytes what
	// Lambda writes around the invocations.
	LogBytes         float64 `json:"logBytes"`
	PlatformLogBytes float64 `json:"platformLogBytes"`
	// EventEntries are the PutEvents entries published (delivery and
	// campaign events), in billed 64 KB chunks.
	EventEntries float64 `json:"eventEntries,omitempty"`
	// Emails and SMS sent (the provider's fee).
	Emails float64 `json:"emails"`
	SMS    float64 `json:"sms"`
	// StoredGBMonths is what the notification's items and index entries
	// occupy over the retention period (priced beside the total: the
	// issue's goals count requests, and storage scales with the retention
	// a deployment chooses).
	StoredGBMonths float64 `json:"storedGBMonths,omitempty"`
}

// Cost is the price of a million notifications, by part.
type Cost struct {
	DynamoDB map[string]float64 `json:"dynamodb"` // "write table", "read gsi1", …
	SQS      float64            `json:"sqs"`
	Lambda   float64            `json:"lambda"` // requests and duration
	API      float64            `json:"api"`
	Logs     float64            `json:"logs"`
	XRay     float64            `json:"xray"`
	// Events: PutEvents entries (the relay's work for them is in Lambda).
	Events float64 `json:"events,omitempty"`
	Total  float64 `json:"total"`
	// ProviderFee (SES, SNS SMS) is not in Total.
	ProviderFee float64 `json:"providerFee"`
	// Storage over the retention period, not in Total either.
	Storage float64 `json:"storage,omitempty"`
}

// PerMillion prices a million notifications using u each.
func (p Prices) PerMillion(u Usage) Cost {
	const m = 1e6
	c := Cost{DynamoDB: map[string]float64{}}
	for _, k := range sortedKeys(u.WriteUnits) {
		c.DynamoDB["write "+k] = u.WriteUnits[k] * p.WriteRequestUnit * m
		c.Total += c.DynamoDB["write "+k]
	}
	for _, k := range sortedKeys(u.ReadUnits) {
		c.DynamoDB["read "+k] = u.ReadUnits[k] * p.ReadRequestUnit * m
		c.Total += c.DynamoDB["read "+k]
	}
	c.SQS = u.SQSRequests * p.SQSRequest * m
	for _, n := range u.Invocations {
		c.Lambda += n * p.LambdaRequest * m
	}
	for _, gbs := range u.GBSeconds {
		c.Lambda += gbs * p.LambdaGBSecond * m
	}
	c.API = u.APIRequests * p.HTTPAPIRequest * m
	c.Logs = (u.LogBytes + u.PlatformLogBytes) / 1e9 * p.LogsIngestedGB * m
	c.XRay = u.TracedInvocations * XRaySampledShare * p.XRayTraceRecorded * m
	c.Events = u.EventEntries * p.EventBridgeEvent * m
	c.Total += c.SQS + c.Lambda + c.API + c.Logs + c.XRay + c.Events
	c.ProviderFee = (u.Emails*p.SESEmail + u.SMS*p.SNSSMSUS) * m
	c.Storage = u.StoredGBMonths * p.StorageGBMonth * m
	return c
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
