// Package controlplane checks a template against the rules AWS's control
// plane enforces on Herald's resource types when CloudFormation creates or
// updates them (Lambda CreateEventSourceMapping / CreateFunction /
// PutFunctionConcurrency, SQS CreateQueue / SetQueueAttributes, DynamoDB
// CreateTable / UpdateTable, API Gateway HTTP API CORS, CloudWatch
// PutMetricAlarm), and the DynamoDB Streams reader limit. The local runner (herald dev), the template tests
// and `make aws-check` (scripts/controlplane) call the same Check, so a
// template AWS would refuse is refused locally with AWS's message.
//
// The rules and the API reference pages they come from are listed in
// docs/decisions.md ("The local run refuses what the control plane refuses").
package controlplane

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// DefaultAccountConcurrency is Lambda's default concurrent executions quota
// per account and region. The reserved concurrency rule assumes it unless the
// caller passes the account's own figure (Options.AccountConcurrency).
const DefaultAccountConcurrency = 1000

// MinUnreservedConcurrency is what PutFunctionConcurrency leaves unreserved
// (all of it on an account whose quota is lower: a new account's 10 or 50).
const MinUnreservedConcurrency = 100

// NewAccountConcurrency is the concurrent executions quota a new account
// may start with (Lambda quotas: "new accounts may have a reduced
// concurrency quota"): the template's defaults must deploy there.
const NewAccountConcurrency = 10

// Options are the account's figures the rules depend on.
type Options struct {
	// AccountConcurrency is the account's concurrent executions quota
	// (0: DefaultAccountConcurrency).
	AccountConcurrency int
}

// Violation is one broken rule: Rule names it (stable, for tests and
// docs), Message is the error AWS answers with.
type Violation struct {
	Rule     string
	Resource string
	Message  string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s [%s]: %s", v.Resource, v.Rule, v.Message)
}

// Error is every violation of a template.
type Error struct{ Violations []Violation }

func (e *Error) Error() string {
	lines := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		lines[i] = v.String()
	}
	return "template refused by AWS's control plane rules (docs/decisions.md):\n  " + strings.Join(lines, "\n  ")
}

// Has reports whether rule is among the violations.
func (e *Error) Has(rule string) bool {
	for _, v := range e.Violations {
		if v.Rule == rule {
			return true
		}
	}
	return false
}

// Rule names.
const (
	RuleMappingConflict       = "esm-one-per-source-and-function"
	RuleStreamReaders         = "stream-two-readers-per-shard"
	RuleSQSVisibility         = "esm-sqs-visibility-at-least-function-timeout"
	RuleSQSBatchWindow        = "esm-sqs-batch-over-10-needs-window"
	RuleStartingPosition      = "esm-stream-starting-position"
	RuleBatchSize             = "esm-batch-size-range"
	RuleBatchWindow           = "esm-batching-window-range"
	RuleRecordAge             = "esm-maximum-record-age-range"
	RuleRetryAttempts         = "esm-maximum-retry-attempts-range"
	RuleParallelization       = "esm-parallelization-factor-range"
	RuleFilterCount           = "esm-filter-count"
	RuleMaximumConcurrency    = "esm-sqs-maximum-concurrency-range"
	RuleStreamOnlyOnSQS       = "esm-stream-settings-on-sqs"
	RuleFunctionTimeout       = "lambda-timeout-range"
	RuleFunctionMemory        = "lambda-memory-range"
	RuleUnreservedConcurrency = "lambda-unreserved-concurrency"
	RuleQueueVisibility       = "sqs-visibility-timeout-range"
	RuleQueueRetention        = "sqs-retention-range"
	RuleQueueDelay            = "sqs-delay-range"
	RuleQueueWait             = "sqs-receive-wait-range"
	RuleQueueMessageSize      = "sqs-maximum-message-size-range"
	RuleMaxReceiveCount       = "sqs-max-receive-count-range"
	RuleDLQSameType           = "sqs-dlq-same-type"
	RuleGSICount              = "dynamodb-gsi-count"
	RuleGSIUpdate             = "dynamodb-one-gsi-change-per-update"
	RuleCorsWildcardCreds     = "httpapi-cors-wildcard-with-credentials"
	RuleCorsMaxAge            = "httpapi-cors-max-age-range"
	RuleCorsObject            = "httpapi-cors-object"
	// API Gateway WebSocket APIs (CreateApi, CreateRoute, CreateAuthorizer).
	RuleWebSocketSelection      = "websocket-route-selection-expression"
	RuleWebSocketAuthConnect    = "websocket-authorizer-only-on-connect"
	RuleWebSocketAuthorizerType = "websocket-authorizer-request-only"
	RuleWebSocketIdentity       = "websocket-identity-source"
	// EventBridge CreateEventBus.
	RuleEventBusName = "events-bus-name"
	// CloudWatch PutMetricAlarm.
	RuleAlarmText          = "cloudwatch-alarm-name-description-length"
	RuleAlarmActions       = "cloudwatch-alarm-actions-count"
	RuleAlarmPeriod        = "cloudwatch-alarm-period"
	RuleAlarmMetrics       = "cloudwatch-alarm-metrics"
	RuleAlarmReturnData    = "cloudwatch-alarm-one-series-returned"
	RuleAlarmMetricsSingle = "cloudwatch-alarm-metrics-exclusive"
)

var (
	refRe    = regexp.MustCompile(`^\$\{ref:([A-Za-z0-9]+)\}$`)
	getAttRe = regexp.MustCompile(`^\$\{getatt:([A-Za-z0-9]+)\.([A-Za-z0-9.]+)\}$`)
)

type resource struct {
	Type           string         `json:"Type"`
	DeletionPolicy string         `json:"DeletionPolicy"`
	Properties     map[string]any `json:"Properties"`
}

type doc struct {
	Globals   map[string]map[string]any `json:"Globals"`
	Resources map[string]resource       `json:"Resources"`
}

// Check applies every rule to a template resolved as the local runner
// resolves it (parameters to their values, Ref and GetAtt of resources to
// "${ref:Name}" and "${getatt:Name.Attr}"), as JSON.
func Check(resolved []byte, opts Options) error {
	var d doc
	if err := json.Unmarshal(resolved, &d); err != nil {
		return fmt.Errorf("control plane check: %w", err)
	}
	if opts.AccountConcurrency == 0 {
		opts.AccountConcurrency = DefaultAccountConcurrency
	}
	c := &checker{d: d}
	c.functions(opts)
	c.queues()
	c.mappings()
	c.tables()
	c.createRollback()
	c.httpAPIs()
	c.webSocketAPIs()
	c.eventBuses()
	c.alarms()
	if len(c.v) == 0 {
		return nil
	}
	sort.SliceStable(c.v, func(i, j int) bool { return c.v[i].Resource < c.v[j].Resource })
	return &Error{Violations: c.v}
}

type checker struct {
	d doc
	v []Violation
}

func (c *checker) add(id, rule, format string, args ...any) {
	c.v = append(c.v, Violation{Rule: rule, Resource: id, Message: fmt.Sprintf(format, args...)})
}

// num reads a number property (a literal, or a Ref to a Number parameter,
// which the resolution leaves as a number or a numeric string).
func num(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case string:
		f, err := strconv.ParseFloat(n, 64)
		return f, err == nil
	}
	return 0, false
}

func boolean(v any) bool {
	switch b := v.(type) {
	case bool:
		return b
	case string:
		return strings.EqualFold(b, "true")
	}
	return false
}

func (c *checker) ids(typ string) []string {
	var out []string
	for id, r := range c.d.Resources {
		if r.Type == typ {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// functionTimeout is a function's effective timeout in seconds (SAM's
// Globals, else Lambda's default of 3).
func (c *checker) functionTimeout(id string) float64 {
	if t, ok := num(c.d.Resources[id].Properties["Timeout"]); ok {
		return t
	}
	if t, ok := num(c.d.Globals["Function"]["Timeout"]); ok {
		return t
	}
	return 3
}

// RuleReservedRange: a negative ReservedConcurrentExecutions.
const RuleReservedRange = "lambda-reserved-concurrency-range"

func (c *checker) functions(opts Options) {
	reserved := 0.0
	for _, id := range append(c.ids("AWS::Serverless::Function"), c.ids("AWS::Lambda::Function")...) {
		p := c.d.Resources[id].Properties
		// CreateFunction: Timeout 1–900 seconds, MemorySize 128–10240 MB.
		if t := c.functionTimeout(id); t < 1 || t > 900 {
			c.add(id, RuleFunctionTimeout, "ValidationException: 1 validation error detected: Value '%g' at 'timeout' failed to satisfy constraint: Member must have value less than or equal to 900 and greater than or equal to 1", t)
		}
		mem, ok := num(p["MemorySize"])
		if !ok {
			mem, ok = num(c.d.Globals["Function"]["MemorySize"])
		}
		if ok && (mem < 128 || mem > 10240) {
			c.add(id, RuleFunctionMemory, "ValidationException: 1 validation error detected: Value '%g' at 'memorySize' failed to satisfy constraint: Member must have value less than or equal to 10240 and greater than or equal to 128", mem)
		}
		if r, ok := num(p["ReservedConcurrentExecutions"]); ok {
			reserved += r
			// PutFunctionConcurrency: ReservedConcurrentExecutions ≥ 0 (the
			// parameters' -1, "none", must become no property at all).
			if r < 0 {
				c.add(id, RuleReservedRange, "ValidationException: 1 validation error detected: Value '%g' at 'reservedConcurrentExecutions' failed to satisfy constraint: Member must have value greater than or equal to 0", r)
			}
		}
	}
	// PutFunctionConcurrency keeps at least 100 executions unreserved, or
	// the whole quota when it is lower: nothing can be reserved there.
	minimum := min(MinUnreservedConcurrency, opts.AccountConcurrency)
	if limit := float64(opts.AccountConcurrency); reserved > 0 && reserved > limit-float64(minimum) {
		c.add("(functions)", RuleUnreservedConcurrency,
			"InvalidParameterValueException: Specified ReservedConcurrentExecutions for function decreases account's UnreservedConcurrentExecution below its minimum value of [%d]. (reserved in the template: %g of an assumed account quota of %d)",
			minimum, reserved, opts.AccountConcurrency)
	}
}

func (c *checker) isFifo(id string) bool {
	return boolean(c.d.Resources[id].Properties["FifoQueue"])
}

func (c *checker) queues() {
	ranges := []struct {
		prop, rule string
		lo, hi     float64
	}{
		{"VisibilityTimeout", RuleQueueVisibility, 0, 43200},
		{"MessageRetentionPeriod", RuleQueueRetention, 60, 1209600},
		{"DelaySeconds", RuleQueueDelay, 0, 900},
		{"ReceiveMessageWaitTimeSeconds", RuleQueueWait, 0, 20},
		{"MaximumMessageSize", RuleQueueMessageSize, 1024, 1048576},
	}
	for _, id := range c.ids("AWS::SQS::Queue") {
		p := c.d.Resources[id].Properties
		for _, r := range ranges {
			if v, ok := num(p[r.prop]); ok && (v < r.lo || v > r.hi) {
				c.add(id, r.rule, "InvalidAttributeValue: Invalid value for the parameter %s. (%g is outside %g–%g)", r.prop, v, r.lo, r.hi)
			}
		}
		rp, _ := p["RedrivePolicy"].(map[string]any)
		if rp == nil {
			continue
		}
		if n, ok := num(rp["maxReceiveCount"]); !ok || n < 1 || n > 1000 {
			c.add(id, RuleMaxReceiveCount, "InvalidParameterValue: Value %v for parameter RedrivePolicy is invalid. Reason: Invalid value for maxReceiveCount: %v, valid values are from 1 to 1000 both inclusive.", rp["maxReceiveCount"], rp["maxReceiveCount"])
		}
		if m := getAttRe.FindStringSubmatch(fmt.Sprint(rp["deadLetterTargetArn"])); m != nil {
			if _, ok := c.d.Resources[m[1]]; ok && c.isFifo(m[1]) != c.isFifo(id) {
				c.add(id, RuleDLQSameType, "InvalidParameterValue: Value %v for parameter RedrivePolicy is invalid. Reason: Dead-letter target must be the same type of queue as the source queue (%s).", rp, m[1])
			}
		}
	}
}

type mapping struct {
	id, function, source string
	sourceID, sourceAttr string
	props                map[string]any
}

func (c *checker) mappings() {
	var ms []mapping
	for _, id := range c.ids("AWS::Lambda::EventSourceMapping") {
		p := c.d.Resources[id].Properties
		m := mapping{id: id, function: fmt.Sprint(p["FunctionName"]), source: fmt.Sprint(p["EventSourceArn"]), props: p}
		if g := getAttRe.FindStringSubmatch(m.source); g != nil {
			m.sourceID, m.sourceAttr = g[1], g[2]
		}
		ms = append(ms, m)
	}
	seen := map[[2]string]string{}
	readers := map[string][]string{}
	for _, m := range ms {
		fn := m.function
		if r := refRe.FindStringSubmatch(fn); r != nil {
			fn = r[1]
		}
		key := [2]string{m.source, fn}
		if first, dup := seen[key]; dup {
			c.add(m.id, RuleMappingConflict, "ResourceConflictException: The event source arn (%s) and function (%s) provided mapping already exists. Please update or delete the existing mapping (%s).", m.source, fn, first)
		} else {
			seen[key] = m.id
		}
		src := c.d.Resources[m.sourceID]
		stream := m.sourceAttr == "StreamArn" || strings.Contains(m.source, ":dynamodb:") || strings.Contains(m.source, ":kinesis:")
		sqs := src.Type == "AWS::SQS::Queue" || strings.Contains(m.source, ":sqs:")
		if stream {
			readers[m.source] = append(readers[m.source], m.id)
			c.streamMapping(m)
		}
		if sqs {
			c.sqsMapping(m, fn)
		}
		if v, ok := num(m.props["MaximumBatchingWindowInSeconds"]); ok && (v < 0 || v > 300) {
			c.add(m.id, RuleBatchWindow, "ValidationException: 1 validation error detected: Value '%g' at 'maximumBatchingWindowInSeconds' failed to satisfy constraint: Member must have value less than or equal to 300 and greater than or equal to 0", v)
		}
		if fc, ok := m.props["FilterCriteria"].(map[string]any); ok {
			if fs, _ := fc["Filters"].([]any); len(fs) > 5 {
				c.add(m.id, RuleFilterCount, "InvalidParameterValueException: The number of filters (%d) exceeds the limit of 5 filters per event source mapping.", len(fs))
			}
		}
	}
	for src, ids := range readers {
		if len(ids) > 2 {
			c.add(strings.Join(ids, ", "), RuleStreamReaders, "LimitExceededException: More than 2 processes are reading from the same streams shard at the same time (%d mappings of %s). Exceeding this limit may result in request throttling.", len(ids), src)
		}
	}
}

func (c *checker) streamMapping(m mapping) {
	p := m.props
	if sp, _ := p["StartingPosition"].(string); sp == "" {
		c.add(m.id, RuleStartingPosition, "InvalidParameterValueException: StartingPosition is required for a DynamoDB Streams or Kinesis event source (TRIM_HORIZON, LATEST or AT_TIMESTAMP).")
	} else if sp != "TRIM_HORIZON" && sp != "LATEST" && sp != "AT_TIMESTAMP" {
		c.add(m.id, RuleStartingPosition, "ValidationException: Value '%s' at 'startingPosition' failed to satisfy constraint: Member must satisfy enum value set: [LATEST, AT_TIMESTAMP, TRIM_HORIZON]", sp)
	}
	if v, ok := num(p["BatchSize"]); ok && (v < 1 || v > 10000) {
		c.add(m.id, RuleBatchSize, "InvalidParameterValueException: BatchSize %g is out of bounds: a DynamoDB Streams event source takes 1 to 10000.", v)
	}
	if v, ok := num(p["MaximumRecordAgeInSeconds"]); ok && v != -1 && (v < 60 || v > 604800) {
		c.add(m.id, RuleRecordAge, "ValidationException: MaximumRecordAgeInSeconds %g: must be -1 (infinite) or between 60 and 604800.", v)
	}
	if v, ok := num(p["MaximumRetryAttempts"]); ok && (v < -1 || v > 10000) {
		c.add(m.id, RuleRetryAttempts, "ValidationException: Value '%g' at 'maximumRetryAttempts' failed to satisfy constraint: Member must have value less than or equal to 10000 and greater than or equal to -1", v)
	}
	if v, ok := num(p["ParallelizationFactor"]); ok && (v < 1 || v > 10) {
		c.add(m.id, RuleParallelization, "ValidationException: Value '%g' at 'parallelizationFactor' failed to satisfy constraint: Member must have value less than or equal to 10 and greater than or equal to 1", v)
	}
}

func (c *checker) sqsMapping(m mapping, fn string) {
	p := m.props
	batch, hasBatch := num(p["BatchSize"])
	fifo := m.sourceID != "" && c.isFifo(m.sourceID)
	switch {
	case hasBatch && fifo && (batch < 1 || batch > 10):
		c.add(m.id, RuleBatchSize, "InvalidParameterValueException: BatchSize %g is out of bounds: a FIFO queue event source takes 1 to 10.", batch)
	case hasBatch && (batch < 1 || batch > 10000):
		c.add(m.id, RuleBatchSize, "InvalidParameterValueException: BatchSize %g is out of bounds: an SQS event source takes 1 to 10000.", batch)
	}
	if w, ok := num(p["MaximumBatchingWindowInSeconds"]); hasBatch && batch > 10 && (!ok || w < 1) {
		c.add(m.id, RuleSQSBatchWindow, "InvalidParameterValueException: Maximum batch window in seconds must be greater than 0 if maximum batch size is greater than 10")
	}
	if q, ok := c.d.Resources[m.sourceID]; ok && q.Type == "AWS::SQS::Queue" {
		vis, ok := num(q.Properties["VisibilityTimeout"])
		if !ok {
			vis = 30 // SQS's default
		}
		if _, isFn := c.d.Resources[fn]; isFn {
			if t := c.functionTimeout(fn); vis < t {
				c.add(m.id, RuleSQSVisibility, "InvalidParameterValueException: Queue visibility timeout: %g seconds is less than Function timeout: %g seconds", vis, t)
			}
		}
	}
	if sc, ok := p["ScalingConfig"].(map[string]any); ok {
		if v, ok := num(sc["MaximumConcurrency"]); ok && (v < 2 || v > 1000) {
			c.add(m.id, RuleMaximumConcurrency, "ValidationException: Value '%g' at 'scalingConfig.maximumConcurrency' failed to satisfy constraint: Member must have value less than or equal to 1000 and greater than or equal to 2", v)
		}
	}
	for _, k := range []string{"StartingPosition", "BisectBatchOnFunctionError", "MaximumRecordAgeInSeconds", "MaximumRetryAttempts", "ParallelizationFactor", "DestinationConfig", "TumblingWindowInSeconds"} {
		if _, ok := p[k]; ok {
			c.add(m.id, RuleStreamOnlyOnSQS, "InvalidParameterValueException: Unsupported %s parameter for the SQS event source (a stream-only setting).", k)
		}
	}
}

func (c *checker) tables() {
	for _, id := range c.ids("AWS::DynamoDB::Table") {
		gsis, _ := c.d.Resources[id].Properties["GlobalSecondaryIndexes"].([]any)
		if len(gsis) > 20 {
			c.add(id, RuleGSICount, "LimitExceededException: Subscriber limit exceeded: a table has at most 20 global secondary indexes (%d).", len(gsis))
		}
	}
}

// httpAPIs applies API Gateway's CORS rules to an HTTP API's CORS
// configuration, wherever the template holds it: CorsConfiguration (SAM's
// and CloudFormation's property) or the OpenAPI extension
// x-amazon-apigateway-cors (DefinitionBody as written, Body as the SAM
// transform hands it to CloudFormation), which must be the object API
// Gateway's import reads.
func (c *checker) httpAPIs() {
	for _, id := range append(c.ids("AWS::Serverless::HttpApi"), c.ids("AWS::ApiGatewayV2::Api")...) {
		p := c.d.Resources[id].Properties
		var configs []map[string]any // keys as the extension spells them
		if cors, ok := p["CorsConfiguration"].(map[string]any); ok {
			lower := map[string]any{}
			for k, v := range cors {
				lower[strings.ToLower(k[:1])+k[1:]] = v
			}
			configs = append(configs, lower)
		}
		for _, prop := range []string{"DefinitionBody", "Body"} {
			body, _ := p[prop].(map[string]any)
			raw, ok := body["x-amazon-apigateway-cors"]
			if !ok {
				continue
			}
			if cors, ok := c.corsObject(id, prop, raw); ok {
				configs = append(configs, cors)
			}
		}
		for _, cors := range configs {
			if boolean(cors["allowCredentials"]) {
				origins, _ := cors["allowOrigins"].([]any)
				for _, o := range origins {
					if o == "*" {
						c.add(id, RuleCorsWildcardCreds, "BadRequestException: allow-credentials is not supported with a wildcard (*) in allow-origins.")
					}
				}
			}
			if v, ok := num(cors["maxAge"]); ok && (v < -1 || v > 86400) {
				c.add(id, RuleCorsMaxAge, "BadRequestException: MaxAge %g is out of range: -1 to 86400 seconds.", v)
			}
		}
	}
}

// corsObject checks an x-amazon-apigateway-cors value: an object whose
// allowOrigins, allowHeaders, allowMethods and exposeHeaders are arrays of
// strings (API Gateway Developer Guide, "x-amazon-apigateway-cors object").
func (c *checker) corsObject(id, prop string, raw any) (map[string]any, bool) {
	cors, ok := raw.(map[string]any)
	if !ok {
		c.add(id, RuleCorsObject, "BadRequestException: %s x-amazon-apigateway-cors is %s, not an object (allowOrigins, allowHeaders, allowMethods and exposeHeaders arrays of strings, maxAge an integer, allowCredentials a boolean): API Gateway takes no CORS configuration from it.", prop, describe(raw))
		return nil, false
	}
	for _, k := range []string{"allowOrigins", "allowHeaders", "allowMethods", "exposeHeaders"} {
		v, ok := cors[k]
		if !ok {
			continue
		}
		list, isList := v.([]any)
		for _, item := range list {
			if _, isString := item.(string); !isString {
				isList = false
			}
		}
		if !isList {
			c.add(id, RuleCorsObject, "BadRequestException: %s x-amazon-apigateway-cors %s is %s, not an array of strings.", prop, k, describe(v))
			return nil, false
		}
	}
	return cors, true
}

// describe names a JSON value's kind with the value.
func describe(v any) string {
	switch v.(type) {
	case []any:
		return fmt.Sprintf("an array (%v)", v)
	case string:
		return fmt.Sprintf("a string (%q)", v)
	}
	return fmt.Sprintf("%v", v)
}

// eventBusNameRe is what CreateEventBus accepts as a custom bus's Name
// (EventBridge API reference, CreateEventBus: 1–256 characters of
// [/\.\-_A-Za-z0-9]; "default" is the account's own bus).
var eventBusNameRe = regexp.MustCompile(`^[/\.\-_A-Za-z0-9]{1,256}$`)

// eventBuses: a custom event bus's name, as resolved (the local stack's
// name for AWS::StackName).
func (c *checker) eventBuses() {
	for _, id := range c.ids("AWS::Events::EventBus") {
		name, _ := c.d.Resources[id].Properties["Name"].(string)
		if !eventBusNameRe.MatchString(name) || name == "default" {
			c.add(id, RuleEventBusName, "ValidationException: Event bus name %q must be 1 to 256 characters of [/\\.\\-_A-Za-z0-9], and not default.", name)
		}
	}
}

// identitySourceRe is a WebSocket REQUEST authorizer's identity source:
// route.request.header.X, route.request.querystring.X, stageVariables.X or
// context.X.
var identitySourceRe = regexp.MustCompile(`^(route\.request\.(header|querystring)|stageVariables|context)\.[^.\s]+$`)

// webSocketAPIs: CreateApi requires a route selection expression for a
// WEBSOCKET API; CreateAuthorizer allows only REQUEST authorizers there,
// with identity sources of the route request, stage variables or context;
// CreateRoute accepts an authorizer on $connect only.
func (c *checker) webSocketAPIs() {
	ws := map[string]bool{}
	for _, id := range c.ids("AWS::ApiGatewayV2::Api") {
		p := c.d.Resources[id].Properties
		if p["ProtocolType"] != "WEBSOCKET" {
			continue
		}
		ws[id] = true
		if e, _ := p["RouteSelectionExpression"].(string); e == "" {
			c.add(id, RuleWebSocketSelection, "BadRequestException: RouteSelectionExpression is required for WEBSOCKET APIs.")
		}
	}
	apiOf := func(p map[string]any) string {
		if m := refRe.FindStringSubmatch(fmt.Sprint(p["ApiId"])); m != nil {
			return m[1]
		}
		return ""
	}
	for _, id := range c.ids("AWS::ApiGatewayV2::Authorizer") {
		p := c.d.Resources[id].Properties
		if !ws[apiOf(p)] {
			continue
		}
		if p["AuthorizerType"] != "REQUEST" {
			c.add(id, RuleWebSocketAuthorizerType, "BadRequestException: Only REQUEST authorizers are supported for WebSocket APIs (got %v).", p["AuthorizerType"])
		}
		sources, _ := p["IdentitySource"].([]any)
		for _, src := range sources {
			if s, _ := src.(string); !identitySourceRe.MatchString(s) {
				c.add(id, RuleWebSocketIdentity, "BadRequestException: Invalid identity source %v: want route.request.header.<name>, route.request.querystring.<name>, stageVariables.<name> or context.<name>.", src)
			}
		}
	}
	for _, id := range c.ids("AWS::ApiGatewayV2::Route") {
		p := c.d.Resources[id].Properties
		if !ws[apiOf(p)] {
			continue
		}
		auth, _ := p["AuthorizationType"].(string)
		if auth != "" && auth != "NONE" && p["RouteKey"] != "$connect" {
			c.add(id, RuleWebSocketAuthConnect, "BadRequestException: Currently, authorization is restricted to the $connect route only (route %v has %s).", p["RouteKey"], auth)
		}
	}
}

// metricQueryIDRe is a MetricDataQuery Id: letters, digits and '_', the
// first a lowercase letter.
var metricQueryIDRe = regexp.MustCompile(`^[a-z][A-Za-z0-9_]*$`)

// alarms: PutMetricAlarm's constraints (CloudWatch API Reference,
// PutMetricAlarm and MetricDataQuery): AlarmName 1–255 characters,
// AlarmDescription at most 1024, at most 5 actions per list, a period of 10,
// 20, 30 or a multiple of 60 seconds; with Metrics (a metric math alarm) at
// most 10 queries retrieving a metric and 10 expressions, unique Ids of
// letters, digits and '_' starting with a lowercase letter, exactly one query
// returning data (ReturnData is true when omitted), and none of the
// single-metric properties beside them.
func (c *checker) alarms() {
	for _, id := range c.ids("AWS::CloudWatch::Alarm") {
		p := c.d.Resources[id].Properties
		if name, _ := p["AlarmName"].(string); len(name) > 255 {
			c.add(id, RuleAlarmText, "ValidationError: 1 validation error detected: Value at 'alarmName' failed to satisfy constraint: Member must have length less than or equal to 255 (%d)", len(name))
		}
		if desc, _ := p["AlarmDescription"].(string); len(desc) > 1024 {
			c.add(id, RuleAlarmText, "ValidationError: 1 validation error detected: Value at 'alarmDescription' failed to satisfy constraint: Member must have length less than or equal to 1024 (%d)", len(desc))
		}
		for _, list := range []string{"AlarmActions", "OKActions", "InsufficientDataActions"} {
			if actions, _ := p[list].([]any); len(actions) > 5 {
				c.add(id, RuleAlarmActions, "ValidationError: 1 validation error detected: Value at '%s' failed to satisfy constraint: Member must have length less than or equal to 5 (%d)", list, len(actions))
			}
		}
		checkPeriod := func(v any) {
			if period, ok := num(v); ok && !(period == 10 || period == 20 || period == 30 || period >= 60 && int(period)%60 == 0) {
				c.add(id, RuleAlarmPeriod, "ValidationError: The parameter Period must be 10, 20, 30 or a multiple of 60 (%g).", period)
			}
		}
		checkPeriod(p["Period"])
		queries, _ := p["Metrics"].([]any)
		if len(queries) == 0 {
			continue
		}
		for _, single := range []string{"MetricName", "Namespace", "Dimensions", "Period", "Statistic", "ExtendedStatistic"} {
			if _, ok := p[single]; ok {
				c.add(id, RuleAlarmMetricsSingle, "ValidationError: %s should not be set if list of Metrics is set.", single)
			}
		}
		stats, exprs, returned := 0, 0, 0
		seen := map[string]bool{}
		for _, q := range queries {
			m, _ := q.(map[string]any)
			qid, _ := m["Id"].(string)
			if !metricQueryIDRe.MatchString(qid) || seen[qid] {
				c.add(id, RuleAlarmMetrics, "ValidationError: Invalid metrics list: the Id %q must be unique and start with a lowercase letter, then letters, digits or '_'.", qid)
			}
			seen[qid] = true
			if stat, ok := m["MetricStat"].(map[string]any); ok {
				stats++
				checkPeriod(stat["Period"])
			}
			if _, ok := m["Expression"]; ok {
				exprs++
			}
			if rd, ok := m["ReturnData"]; !ok || boolean(rd) {
				returned++
			}
		}
		if stats > 10 || exprs > 10 {
			c.add(id, RuleAlarmMetrics, "ValidationError: An alarm's metrics list holds at most 10 metrics and 10 expressions (%d and %d).", stats, exprs)
		}
		if returned != 1 {
			c.add(id, RuleAlarmReturnData, "ValidationError: Exactly one element of the metrics list should return data (%d do).", returned)
		}
	}
}
