package devstack

import (
	"context"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// Usage measures what AWS bills per function beyond request counts (Calls):
// invocations and their duration, bytes written to the function's log
// stream (JSON logs and EMF), and, when Config.MeasureCapacity is set, the
// DynamoDB capacity each call consumed on the table and on each index. It
// exists for the cost benchmark (make bench); nothing in the functions
// depends on it.
type Usage struct {
	mu          sync.Mutex
	invocations map[string]*Invocations
	logBytes    map[string]*atomic.Int64
	capacity    map[string]float64 // "<read|write> <table|index name>"
	// capacityByOp is the same by operation: "<read|write> <Operation> <name>".
	capacityByOp map[string]float64
	// waits are SendMessage → handler start per event source mapping.
	waits map[string][]time.Duration
}

// Invocations of one function.
type Invocations struct {
	Count    int
	Duration time.Duration
	// Longest is the longest invocation; TimedOut counts those that ran to
	// the function's timeout (Lambda would have stopped them there, with
	// whatever they had not recorded lost).
	Longest  time.Duration
	TimedOut int
}

// NewUsage returns empty counters.
func NewUsage() *Usage {
	return &Usage{invocations: map[string]*Invocations{}, logBytes: map[string]*atomic.Int64{}, capacity: map[string]float64{}, capacityByOp: map[string]float64{}, waits: map[string][]time.Duration{}}
}

// recordWaits files how long each message of a batch waited in its queue,
// from its SentTimestamp to the handler's start.
func (u *Usage) recordWaits(mapping string, waits []time.Duration) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.waits[mapping] = append(u.waits[mapping], waits...)
}

// QueueWaits returns the queue waits recorded for an event source mapping
// (logical id, e.g. "EmailHighMapping") since the last ResetQueueWaits.
func (u *Usage) QueueWaits(mapping string) []time.Duration {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.waits[mapping])
}

// ResetQueueWaits forgets the recorded queue waits.
func (u *Usage) ResetQueueWaits() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.waits = map[string][]time.Duration{}
}

func (u *Usage) invoked(function string, d, timeout time.Duration) {
	u.mu.Lock()
	defer u.mu.Unlock()
	inv := u.invocations[function]
	if inv == nil {
		inv = &Invocations{}
		u.invocations[function] = inv
	}
	inv.Count++
	inv.Duration += d
	inv.Longest = max(inv.Longest, d)
	if d >= timeout {
		inv.TimedOut++
	}
}

// logWriter counts the bytes a function writes to its log stream.
func (u *Usage) logWriter(function string, w io.Writer) io.Writer {
	u.mu.Lock()
	n := u.logBytes[function]
	if n == nil {
		n = &atomic.Int64{}
		u.logBytes[function] = n
	}
	u.mu.Unlock()
	return countingWriter{w: w, n: n}
}

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	return c.w.Write(p)
}

// UsageSnapshot is a copy of the counters.
type UsageSnapshot struct {
	Invocations map[string]Invocations `json:"invocations"`
	LogBytes    map[string]int64       `json:"logBytes"`
	// Capacity is consumed DynamoDB capacity units by "read <name>" and
	// "write <name>", name being the table or an index.
	Capacity map[string]float64 `json:"capacity"`
	// CapacityByOperation is Capacity by "read <Operation> <name>" and
	// "write <Operation> <name>" (Operation as in the DynamoDB API: PutItem).
	CapacityByOperation map[string]float64 `json:"capacityByOperation"`
}

// Snapshot copies the counters.
func (u *Usage) Snapshot() UsageSnapshot {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := UsageSnapshot{Invocations: map[string]Invocations{}, LogBytes: map[string]int64{}, Capacity: maps.Clone(u.capacity), CapacityByOperation: maps.Clone(u.capacityByOp)}
	for k, v := range u.invocations {
		s.Invocations[k] = *v
	}
	for k, v := range u.logBytes {
		s.LogBytes[k] = v.Load()
	}
	return s
}

// Reset zeroes the counters.
func (u *Usage) Reset() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.invocations = map[string]*Invocations{}
	for _, n := range u.logBytes {
		n.Store(0)
	}
	u.capacity = map[string]float64{}
	u.capacityByOp = map[string]float64{}
}

// readOperations consume read capacity; every other DynamoDB operation
// consumes write capacity (on the table and the indexes the item lands in).
var readOperations = map[string]bool{"GetItem": true, "BatchGetItem": true, "Query": true, "Scan": true, "TransactGetItems": true}

// CapacityMiddleware asks every DynamoDB call for its consumed capacity per
// table and index (ReturnConsumedCapacity=INDEXES) and adds it up.
func (u *Usage) CapacityMiddleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("HeraldConsumedCapacity",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if awsmiddleware.GetServiceID(ctx) != "DynamoDB" {
				return next.HandleInitialize(ctx, in)
			}
			if f := reflect.ValueOf(in.Parameters).Elem().FieldByName("ReturnConsumedCapacity"); f.IsValid() && f.CanSet() {
				f.Set(reflect.ValueOf(types.ReturnConsumedCapacityIndexes))
			}
			out, md, err := next.HandleInitialize(ctx, in)
			if out.Result == nil {
				return out, md, err
			}
			op := awsmiddleware.GetOperationName(ctx)
			kind := "write "
			if readOperations[op] {
				kind = "read "
			}
			if put, ok := in.Parameters.(*dynamodb.PutItemInput); ok && isWatchItem(put.Item) {
				// The in-flight watch is written once per relay batch or
				// release page, so its units per notification follow how
				// records happen to batch: counted apart.
				op += "(watch)"
			}
			if get, ok := in.Parameters.(*dynamodb.GetItemInput); ok && isBreakerKey(get.Key) {
				// A worker re-reads a provider's breaker at most every few
				// seconds, whatever it sends: counted apart.
				op += "(breaker)"
			}
			add := func(name string, v float64) {
				u.capacity[kind+name] += v
				u.capacityByOp[kind+op+" "+name] += v
			}
			var consumed []types.ConsumedCapacity
			switch f := reflect.ValueOf(out.Result).Elem().FieldByName("ConsumedCapacity"); {
			case !f.IsValid():
			case f.Kind() == reflect.Pointer && !f.IsNil():
				consumed = append(consumed, *f.Interface().(*types.ConsumedCapacity))
			case f.Kind() == reflect.Slice:
				consumed = f.Interface().([]types.ConsumedCapacity)
			}
			u.mu.Lock()
			for _, c := range consumed {
				if c.Table != nil {
					add("table", units(c.Table))
				} else if len(c.GlobalSecondaryIndexes) == 0 && c.CapacityUnits != nil {
					add("table", *c.CapacityUnits)
				}
				for name, idx := range c.GlobalSecondaryIndexes {
					add(name, units(&idx))
				}
			}
			u.mu.Unlock()
			return out, md, err
		}), middleware.After)
}

// isWatchItem reports whether item is an in-flight watch (pk "W#…").
func isWatchItem(item map[string]types.AttributeValue) bool {
	pk, ok := item["pk"].(*types.AttributeValueMemberS)
	return ok && strings.HasPrefix(pk.Value, "W#")
}

// isBreakerKey: a provider breaker's item (dynamo.Breakers: pk BREAKERS).
func isBreakerKey(key map[string]types.AttributeValue) bool {
	pk, ok := key["pk"].(*types.AttributeValueMemberS)
	return ok && pk.Value == "BREAKERS"
}

func units(c *types.Capacity) float64 {
	switch {
	case c.CapacityUnits != nil:
		return *c.CapacityUnits
	case c.WriteCapacityUnits != nil:
		return *c.WriteCapacityUnits
	case c.ReadCapacityUnits != nil:
		return *c.ReadCapacityUnits
	}
	return 0
}
