package devstack

import (
	"context"
	"maps"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/aws/smithy-go/middleware"

	"github.com/heraldhq/herald/internal/devstack/iam"
)

// Calls counts AWS API requests by "Service.Operation", through a middleware
// on every client the runner builds. Benchmarks and tests read it to measure
// requests per notification.
type Calls struct {
	mu     sync.Mutex
	counts map[string]int
	// byFunction splits the counts by the function whose invocation made
	// the request (from the Lambda context the runner gives each invocation).
	byFunction map[string]map[string]int
}

// NewCalls returns an empty counter.
func NewCalls() *Calls {
	return &Calls{counts: map[string]int{}, byFunction: map[string]map[string]int{}}
}

// Middleware registers the counter on an SDK client's stack.
func (c *Calls) Middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("HeraldCallCounter",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			service, operation := iam.ServiceOperation(ctx)
			key := service + "." + operation
			fn := functionOf(ctx)
			c.mu.Lock()
			c.counts[key]++
			if fn != "" {
				if c.byFunction[fn] == nil {
					c.byFunction[fn] = map[string]int{}
				}
				c.byFunction[fn][key]++
			}
			c.mu.Unlock()
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}

// Snapshot returns a copy of the counts.
func (c *Calls) Snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.counts)
}

// FunctionSnapshot returns a copy of the counts of requests made by one
// function's invocations (logical id, e.g. "ApiFunction").
func (c *Calls) FunctionSnapshot(function string) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.byFunction[function]))
	for k, v := range c.byFunction[function] {
		out[k] = v
	}
	return out
}

// functionOf names the function whose invocation ctx belongs to, from the
// ARN in its Lambda context ("…:function:ApiFunction").
func functionOf(ctx context.Context) string {
	lc, ok := lambdacontext.FromContext(ctx)
	if !ok {
		return ""
	}
	arn := lc.InvokedFunctionArn
	return arn[strings.LastIndexByte(arn, ':')+1:]
}

// Reset zeroes the counts.
func (c *Calls) Reset() {
	c.mu.Lock()
	c.counts = map[string]int{}
	c.byFunction = map[string]map[string]int{}
	c.mu.Unlock()
}
