// Package ops tests the operator tooling end to end on a private local stack:
// `herald dlq` against real parked messages, and the functions' logs for
// personal data. Its stack runs the scheduler hourly (tests manufacture
// their own failures, and one advances the stack's clock) and retries after
// one second.
package ops

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/ops"
)

// logs captures every function's log output for the whole run.
var logs = &stacktest.LogBuffer{}

func TestMain(m *testing.M) {
	var w io.Writer = logs
	if os.Getenv("HERALD_TEST_LOGS") != "" {
		w = io.MultiWriter(logs, os.Stderr)
	}
	stacktest.Main(m, devstack.Config{
		ScheduleInterval: time.Hour,
		// EmailRateLimit 0 (unlimited, not the default 5 a minute): a relay
		// redrive must plan with the deployed relay's limits
		// (TestRelayRedriveUsesTheDeployedLimits).
		Overrides: map[string]string{"BackoffBase": "1s", "BackoffCap": "2s", "EmailRateLimit": "0"},
		Logs:      w,
	})
}

// herald runs `herald dlq args…` in-process, finding the stack the way the
// command does by default: through the state file `herald dev` writes.
func herald(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return stacktest.Herald(t, ops.DefaultConnect, args...)
}

// heraldCounted runs `herald dlq args…` as herald does, counting the AWS
// calls of the command's own clients in calls.
func heraldCounted(t *testing.T, calls *devstack.Calls, args ...string) (string, error) {
	t.Helper()
	return stacktest.Herald(t, func(ctx context.Context, w ops.Where) (*ops.Operator, string, error) {
		cfg, target, desc, err := ops.DefaultResolver().Resolve(ctx, w)
		if err != nil {
			return nil, "", err
		}
		cfg.APIOptions = append(cfg.APIOptions, calls.Middleware)
		op, err := ops.Connect(cfg, target, nil)
		return op, desc, err
	}, args...)
}

func heraldJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	out, err := herald(t, append(args, "--json")...)
	if err != nil {
		t.Fatalf("herald dlq %v: %v", args, err)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("herald dlq %v --json: %v\n%s", args, err, out)
	}
}

// delivery waits for the notification's delivery on c to satisfy cond.
func delivery(t *testing.T, id string, c domain.Channel, what string, cond func(domain.Delivery) bool) domain.Delivery {
	t.Helper()
	var got domain.Delivery
	stacktest.Eventually(t, 20*time.Second, what, func() bool {
		_, ds, err := stacktest.Store(t).GetNotificationWithDeliveries(context.Background(), id)
		if err != nil {
			return false
		}
		for _, d := range ds {
			if d.Channel == c && cond(d) {
				got = d
				return true
			}
		}
		return false
	})
	return got
}

func status(s domain.Status, r domain.Reason) func(domain.Delivery) bool {
	return func(d domain.Delivery) bool { return d.Status == s && d.Reason == r }
}
