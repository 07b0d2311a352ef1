package devstack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// StoreFaultMode is how an injected store fault fails its call.
type StoreFaultMode string

const (
	// StoreFaultRefused fails the call before it is sent: nothing changes.
	StoreFaultRefused StoreFaultMode = "refused"
	// StoreFaultAnswerLost sends the call and fails it after the service
	// answered: the write happened, the caller is told it did not (a
	// timeout after the request reached the service).
	StoreFaultAnswerLost StoreFaultMode = "answer-lost"
)

// StoreCall is one DynamoDB or SQS call a function made: the n-th call of
// Operation ("DynamoDB.UpdateItem", "SQS.SendMessageBatch") by Function (a
// logical id) since StoreFaults.Begin.
type StoreCall struct {
	Function  string
	Operation string
	N         int
}

func (c StoreCall) String() string { return fmt.Sprintf("%s %s #%d", c.Function, c.Operation, c.N) }

// RecordedCall is a call of a run and whether its request or its answer
// named one of the run's keys (a probe that found nothing of the run's
// does not).
type RecordedCall struct {
	StoreCall
	Keyed bool
}

// StoreFaults makes a chosen DynamoDB or SQS call of a function fail once,
// for the fault sweep (internal/e2e/faults): an SDK middleware on every
// function's aws.Config, as Faults is for the providers, so the adapters and
// the emulators run unchanged. It sits in the Initialize step, outside the
// SDK's retry loop: a fault is an operation call that failed after the
// client's own retries. A run (Begin) records the calls in order and counts
// them per function and operation; Arm picks the n-th one to fail. Calls
// naming an earlier run's key (a late duplicate of its messages) are left
// out, so a run counts its own path only.
type StoreFaults struct {
	mu      sync.Mutex
	active  bool // a run has begun: nothing is recorded before (make dev)
	calls   []RecordedCall
	counts  map[[2]string]int
	armed   *armedStoreFault
	served  []StoreCall
	earlier []string
	current []string
	last    time.Time // the run's latest call
}

type armedStoreFault struct {
	call StoreCall
	mode StoreFaultMode
}

// storeServices are the services whose calls StoreFaults counts and fails.
var storeServices = []string{"DynamoDB", "SQS"}

// NewStoreFaults returns an injector with nothing armed.
func NewStoreFaults() *StoreFaults { return &StoreFaults{counts: map[[2]string]int{}} }

// Begin starts a run: the calls are recorded and counted afresh, nothing is
// armed, and the previous run's keys (notification, user or campaign ids)
// join those whose calls are left out from now on.
func (f *StoreFaults) Begin(keys ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.active = true
	f.earlier = append(f.earlier, f.current...)
	f.current = slices.Clone(keys)
	f.calls, f.served, f.armed, f.last = nil, nil, nil, time.Now()
	f.counts = map[[2]string]int{}
}

// Mark adds keys to the run's (an id known once the run has started).
func (f *StoreFaults) Mark(keys ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.current = append(f.current, keys...)
}

// Arm makes call (its function, operation and ordinal in this run) fail in mode.
func (f *StoreFaults) Arm(call StoreCall, mode StoreFaultMode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.armed = &armedStoreFault{call: call, mode: mode}
}

// Calls are the run's calls so far, in the order they were made.
func (f *StoreFaults) Calls() []RecordedCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// Quiet is how long (real time) since the run's latest call, or its start.
func (f *StoreFaults) Quiet() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return time.Since(f.last)
}

// Served are the calls the run failed (at most the one armed).
func (f *StoreFaults) Served() []StoreCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.served)
}

// count records a call of function and returns its index in the run's
// calls (-1: before a run, or an earlier run's call, not counted) and the
// mode it fails in ("" : it does not).
func (f *StoreFaults) count(function, op string, params any) (int, StoreFaultMode) {
	f.mu.Lock()
	active, earlier, current := f.active, f.earlier, f.current
	f.mu.Unlock()
	if !active {
		return -1, ""
	}
	raw, _ := json.Marshal(params)
	for _, k := range earlier {
		if strings.Contains(string(raw), k) {
			return -1, ""
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	key := [2]string{function, op}
	f.counts[key]++
	call := StoreCall{Function: function, Operation: op, N: f.counts[key]}
	f.calls = append(f.calls, RecordedCall{StoreCall: call, Keyed: mentions(raw, current)})
	f.last = time.Now()
	if f.armed != nil && f.armed.call == call {
		f.served = append(f.served, call)
		return len(f.calls) - 1, f.armed.mode
	}
	return len(f.calls) - 1, ""
}

// answered notes that the i-th call's answer named a key of the run.
func (f *StoreFaults) answered(i int, result any) {
	raw, _ := json.Marshal(result)
	f.mu.Lock()
	defer f.mu.Unlock()
	if i < len(f.calls) && mentions(raw, f.current) {
		f.calls[i].Keyed = true
	}
}

func mentions(raw []byte, keys []string) bool {
	for _, k := range keys {
		if strings.Contains(string(raw), k) {
			return true
		}
	}
	return false
}

// Middleware returns the injector for the clients of function (a logical id).
func (f *StoreFaults) Middleware(function string) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("HeraldStoreFaultInjection",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				service := awsmiddleware.GetServiceID(ctx)
				if !slices.Contains(storeServices, service) {
					return next.HandleInitialize(ctx, in)
				}
				i, mode := f.count(function, service+"."+awsmiddleware.GetOperationName(ctx), in.Parameters)
				if mode == StoreFaultRefused {
					return middleware.InitializeOutput{}, middleware.Metadata{}, storeFaultError(service)
				}
				out, md, err := next.HandleInitialize(ctx, in)
				if i >= 0 && err == nil {
					f.answered(i, out.Result)
				}
				if mode == StoreFaultAnswerLost && err == nil {
					return middleware.InitializeOutput{}, middleware.Metadata{}, storeFaultError(service)
				}
				return out, md, err
			}), middleware.Before)
	}
}

// storeFaultError is what the SDK returns once its retries of a service's
// internal error are spent: a 500 with the service's error code.
func storeFaultError(service string) error {
	code := "InternalServerError" // DynamoDB's
	if service == "SQS" {
		code = "InternalError"
	}
	return &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: http.StatusInternalServerError}},
			Err:      &smithy.GenericAPIError{Code: code, Message: "injected store fault", Fault: smithy.FaultServer},
		},
		RequestID: newRequestID(),
	}
}
