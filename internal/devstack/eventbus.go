package devstack

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/heraldhq/herald/internal/devstack/eventpattern"
	"github.com/heraldhq/herald/internal/domain"
)

// EventsChannel is the fault channel of PutEvents (POST /_dev/faults
// {"channel":"events"}).
const EventsChannel domain.Channel = "events"

// PutEvents' documented limits (EventBridge API reference and quotas): 1 to
// 10 entries, and the entries' sizes (Time 14 bytes, Source, DetailType,
// Detail and each Resources entry in UTF-8 bytes) at most 256 KB in all.
const (
	putEventsMaxEntries = 10
	putEventsMaxBytes   = 256 * 1024
	busEventsKept       = 1000
)

// EventBus plays the template's AWS::Events::EventBus: it answers
// EventBridge's PutEvents (JSON 1.1 protocol, at /_dev/eventbridge, the
// functions' AWS_ENDPOINT_URL_EVENTBRIDGE) with EventBridge's limits and
// errors, matches every event against the template's AWS::Events::Rule
// resources of the bus (EventBridge's event-pattern semantics,
// internal/devstack/eventpattern) and sends it, as EventBridge would, to the
// rules' SQS targets. GET /_dev/events lists what it received.
//
// Faults (POST /_dev/faults {"channel":"events"}): transient makes every
// entry of a PutEvents call fail with ErrorCode ThrottlingException,
// permanent with InternalFailure (as EventBridge reports an entry it
// could not process), both with FailedEntryCount set: the caller must retry
// the failed entries; each call consumes one fault.
type EventBus struct {
	Name, ARN string
	rules     []busRule
	sqs       *sqs.Client
	faults    *Faults
	now       func() time.Time
	log       *slog.Logger

	mu     sync.Mutex
	events []BusEvent
	// failedInvocations counts, by rule, the events a target did not get
	// (EventBridge's FailedInvocations metric).
	failedInvocations map[string]int
}

// busRule is one enabled rule of the bus with its SQS targets.
type busRule struct {
	name    string
	pattern *eventpattern.Pattern
	targets []ruleTarget
}

// BusEvent is one event the bus received (GET /_dev/events).
type BusEvent struct {
	At           time.Time       `json:"at"`
	ID           string          `json:"id"`
	Source       string          `json:"source"`
	DetailType   string          `json:"detail-type"`
	Detail       json.RawMessage `json:"detail"`
	MatchedRules []string        `json:"matchedRules"`
	// FailedInvocations names the "<rule>/<target>" deliveries that failed
	// (a queue policy that does not allow the rule, a send error).
	FailedInvocations []string `json:"failedInvocations,omitempty"`
}

// newEventBus builds the bus of the template (nil when it declares none)
// and its rules; a rule whose pattern EventBridge would refuse, or whose
// target is not a queue of the stack, stops the start.
func (s *Stack) newEventBus() (*EventBus, error) {
	buses := s.Template.GetAllEventsEventBusResources()
	if len(buses) == 0 {
		return nil, nil
	}
	if len(buses) > 1 {
		return nil, fmt.Errorf("the local runner plays one event bus; the template declares %d", len(buses))
	}
	var b *EventBus
	for id := range buses {
		name, err := s.Resources.Resolve("${ref:" + id + "}")
		if err != nil {
			return nil, err
		}
		arn, _ := s.Resources.Resolve("${getatt:" + id + ".Arn}")
		b = &EventBus{Name: name, ARN: arn, sqs: s.sqs, faults: s.Faults, now: s.Clock.Now, log: s.log.With("component", "eventbus")}
	}
	for _, id := range slices.Sorted(func(yield func(string) bool) {
		for id := range s.Template.GetAllEventsRuleResources() {
			if !yield(id) {
				return
			}
		}
	}) {
		r := s.Template.GetAllEventsRuleResources()[id]
		if r.ScheduleExpression != nil {
			continue // a function's schedule (FunctionSpec.Schedule), played by the runner's tick
		}
		bus := ""
		if r.EventBusName != nil {
			var err error
			if bus, err = s.Resources.Resolve(aws.ToString(r.EventBusName)); err != nil {
				return nil, fmt.Errorf("rule %s: %w", id, err)
			}
		}
		if bus != b.Name && bus != b.ARN {
			s.log.Warn("rule not on the stack's event bus: not played locally", "rule", id, "bus", bus)
			continue
		}
		if r.State != nil && *r.State != "ENABLED" {
			continue
		}
		if r.EventPattern == nil {
			return nil, fmt.Errorf("rule %s: the local runner plays event-pattern rules only", id)
		}
		raw, ok := r.EventPattern.(string)
		if !ok {
			b, err := json.Marshal(r.EventPattern)
			if err != nil {
				return nil, fmt.Errorf("rule %s pattern: %w", id, err)
			}
			raw = string(b)
		}
		p, err := eventpattern.Compile(raw)
		if err != nil {
			return nil, fmt.Errorf("rule %s: InvalidEventPatternException: %w", id, err)
		}
		rule := busRule{name: id, pattern: p}
		arnOfRule, err := s.Resources.Resolve("${getatt:" + id + ".Arn}")
		if err != nil {
			return nil, fmt.Errorf("rule %s: %w", id, err)
		}
		for _, t := range r.Targets {
			arn, err := s.Resources.Resolve(t.Arn)
			if err != nil {
				return nil, fmt.Errorf("rule %s target %s: %w", id, t.Id, err)
			}
			q, ok := s.queueByARN(arn)
			if !ok {
				s.log.Warn("rule target is not a queue of the stack: not delivered locally", "rule", id, "target", t.Id, "arn", arn)
				continue
			}
			// As on AWS, EventBridge may send to the queue only if the
			// queue's policy allows it from this rule.
			allowed, why, err := queuePolicyAllows(s.Template, s.Resources, q, arnOfRule)
			if err != nil {
				return nil, fmt.Errorf("rule %s target %s: %w", id, t.Id, err)
			}
			if !allowed {
				s.log.Warn("rule target's queue policy does not allow EventBridge: its events will fail as on AWS", "rule", id, "target", t.Id, "queue", q.LogicalID, "why", why)
			}
			rule.targets = append(rule.targets, ruleTarget{id: t.Id, url: q.URL, allowed: allowed, why: why})
		}
		b.rules = append(b.rules, rule)
	}
	return b, nil
}

// FailedInvocations is how many events a rule's targets did not get
// (EventBridge's FailedInvocations metric of the rule).
func (b *EventBus) FailedInvocations(rule string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failedInvocations[rule]
}

// Events are the events received, oldest first (the last 1,000).
func (b *EventBus) Events() []BusEvent {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.events)
}

type putEventsEntry struct {
	Source       *string
	DetailType   *string
	Detail       *string
	EventBusName *string
	Resources    []string
	Time         *float64
	TraceHeader  *string
}

type putEventsResultEntry struct {
	EventId      string `json:",omitempty"`
	ErrorCode    string `json:",omitempty"`
	ErrorMessage string `json:",omitempty"`
}

func awsJSONError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("x-amzn-RequestId", newRequestID())
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"__type": code, "message": msg})
}

// ServeHTTP answers AWSEvents.PutEvents.
func (b *EventBus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		awsJSONError(w, http.StatusMethodNotAllowed, "UnknownOperationException", "POST only")
		return
	}
	if target := r.Header.Get("X-Amz-Target"); target != "AWSEvents.PutEvents" {
		awsJSONError(w, http.StatusBadRequest, "UnknownOperationException", "the local event bus answers PutEvents only, not "+target)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 2*putEventsMaxBytes))
	if err != nil {
		awsJSONError(w, http.StatusRequestEntityTooLarge, "ValidationException", "Request is too large")
		return
	}
	var in struct{ Entries []putEventsEntry }
	if err := json.Unmarshal(body, &in); err != nil {
		awsJSONError(w, http.StatusBadRequest, "SerializationException", err.Error())
		return
	}
	if n := len(in.Entries); n < 1 || n > putEventsMaxEntries {
		awsJSONError(w, http.StatusBadRequest, "ValidationException",
			fmt.Sprintf("1 validation error detected: Value at 'entries' failed to satisfy constraint: Member must have length less than or equal to %d and greater than or equal to 1 (got %d)", putEventsMaxEntries, n))
		return
	}
	size := 0
	for _, e := range in.Entries {
		size += entrySize(e)
		bus := aws.ToString(e.EventBusName)
		if bus != "" && bus != b.Name && bus != b.ARN {
			awsJSONError(w, http.StatusBadRequest, "ResourceNotFoundException", "Event bus "+bus+" does not exist.")
			return
		}
		if bus == "" {
			awsJSONError(w, http.StatusBadRequest, "ResourceNotFoundException", "Event bus default is not played by the local runner: name the stack's bus ("+b.Name+").")
			return
		}
	}
	if size > putEventsMaxBytes {
		awsJSONError(w, http.StatusBadRequest, "ValidationException", "Total size of the entries in the request is over the limit.")
		return
	}
	out := struct {
		FailedEntryCount int
		Entries          []putEventsResultEntry
	}{Entries: make([]putEventsResultEntry, len(in.Entries))}
	mode, faulted := b.faults.take(EventsChannel)
	for i, e := range in.Entries {
		res := &out.Entries[i]
		switch {
		case faulted && mode == FaultTransient:
			res.ErrorCode, res.ErrorMessage = "ThrottlingException", "Rate exceeded (injected fault)"
		case faulted:
			res.ErrorCode, res.ErrorMessage = "InternalFailure", "Internal failure (injected fault)"
		case aws.ToString(e.Source) == "":
			res.ErrorCode, res.ErrorMessage = "InvalidArgument", "Parameter Source is not valid. Reason: Source is a required argument."
		case aws.ToString(e.DetailType) == "":
			res.ErrorCode, res.ErrorMessage = "InvalidArgument", "Parameter DetailType is not valid. Reason: DetailType is a required argument."
		case !json.Valid([]byte(aws.ToString(e.Detail))) || !strings.HasPrefix(strings.TrimSpace(aws.ToString(e.Detail)), "{"):
			res.ErrorCode, res.ErrorMessage = "MalformedDetail", "Detail is malformed."
		default:
			res.EventId = b.accept(r.Context(), e)
			continue
		}
		out.FailedEntryCount++
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("x-amzn-RequestId", newRequestID())
	json.NewEncoder(w).Encode(out)
}

// entrySize is an entry's size as EventBridge counts it.
func entrySize(e putEventsEntry) int {
	n := len(aws.ToString(e.Source)) + len(aws.ToString(e.DetailType)) + len(aws.ToString(e.Detail))
	if e.Time != nil {
		n += 14
	}
	for _, r := range e.Resources {
		n += len(r)
	}
	return n
}

// accept records an event, matches the rules and sends it to their targets.
func (b *EventBus) accept(ctx context.Context, e putEventsEntry) string {
	id := uuid()
	at := b.now().UTC()
	if e.Time != nil {
		at = time.Unix(0, int64(*e.Time*float64(time.Second))).UTC()
	}
	resources := e.Resources
	if resources == nil {
		resources = []string{}
	}
	envelope, _ := json.Marshal(map[string]any{
		"version": "0", "id": id, "detail-type": aws.ToString(e.DetailType), "source": aws.ToString(e.Source),
		"account": LocalAccountID, "time": at.Format(time.RFC3339), "region": LocalRegion, "resources": resources,
		"detail": json.RawMessage(aws.ToString(e.Detail)),
	})
	matched := []string{}
	var failed []string
	for _, r := range b.rules {
		ok, err := r.pattern.Match(envelope)
		if err != nil || !ok {
			continue
		}
		matched = append(matched, r.name)
		for _, t := range r.targets {
			if !t.allowed {
				// On AWS, SQS refuses EventBridge's send; the event is
				// lost for this target (FailedInvocations) unless the
				// target has a DLQ.
				b.log.Error("rule target delivery failed: the queue's policy does not allow EventBridge", "rule", r.name, "target", t.id, "why", t.why)
				failed = append(failed, r.name+"/"+t.id)
				continue
			}
			// EventBridge delivers to an SQS target asynchronously, retrying
			// for up to 24 hours; the local queue answers at once.
			if _, err := b.sqs.SendMessage(context.WithoutCancel(ctx), &sqs.SendMessageInput{QueueUrl: aws.String(t.url), MessageBody: aws.String(string(envelope))}); err != nil {
				b.log.Error("rule target delivery failed", "rule", r.name, "queue", t.url, "error", err)
				failed = append(failed, r.name+"/"+t.id)
			}
		}
	}
	sort.Strings(matched)
	b.mu.Lock()
	for _, f := range failed {
		if b.failedInvocations == nil {
			b.failedInvocations = map[string]int{}
		}
		rule, _, _ := strings.Cut(f, "/")
		b.failedInvocations[rule]++
	}
	b.events = append(b.events, BusEvent{At: at, ID: id, Source: aws.ToString(e.Source), DetailType: aws.ToString(e.DetailType),
		Detail: json.RawMessage(aws.ToString(e.Detail)), MatchedRules: matched, FailedInvocations: failed})
	if len(b.events) > busEventsKept {
		b.events = slices.Clone(b.events[len(b.events)-busEventsKept:])
	}
	b.mu.Unlock()
	return id
}

func uuid() string {
	var u [16]byte
	rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// eventsRoute serves GET /_dev/events.
func (s *Stack) eventsRoute(w http.ResponseWriter, r *http.Request) {
	evs := []BusEvent{}
	if s.Bus != nil {
		evs = s.Bus.Events()
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": evs})
}
