// Package lifecycle tests the local stack's own life: a restart with a data
// directory (HERALD_DEV_DATA) that carries on delivering what was queued, and
// an emulator that dies under a running stack. Each test starts and stops its
// own stacks, so they do not run in parallel.
package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
)

func start(t *testing.T, cfg devstack.Config) *devstack.Stack {
	t.Helper()
	if testing.Short() || os.Getenv("HERALD_SKIP_INTEGRATION") != "" {
		t.Skip("integration test: starts local stacks")
	}
	root, err := stacktest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Root, cfg.APIAddr = root, "127.0.0.1:0"
	if cfg.Logs == nil && os.Getenv("HERALD_TEST_LOGS") != "" {
		cfg.Logs = os.Stderr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := devstack.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start local stack: %v", err)
	}
	t.Cleanup(st.Stop)
	return st
}

// eventually polls cond until it holds or timeout passes; state, if given,
// describes what was seen last.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool, state ...func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			last := ""
			for _, s := range state {
				last += " (last seen: " + s() + ")"
			}
			t.Fatalf("timed out after %s waiting for %s%s", timeout, what, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sentTo counts the SES emulator's mail by recipient.
func sentTo(t *testing.T, st *devstack.Stack) map[string]int {
	t.Helper()
	var store struct {
		Emails []struct {
			Destination struct{ To []string } `json:"destination"`
		} `json:"emails"`
	}
	r := stacktest.DoOn(t, st, http.MethodGet, "/_dev/emails", nil)
	if err := json.Unmarshal(r.Body, &store); err != nil {
		t.Fatalf("emails: %v %s", err, r.Body)
	}
	out := map[string]int{}
	for _, e := range store.Emails {
		for _, to := range e.Destination.To {
			out[to]++
		}
	}
	return out
}

func emailStatuses(t *testing.T, st *devstack.Stack, ids []string) map[domain.Status]int {
	t.Helper()
	store := stacktest.NewStores(dynamo.New(dynamodb.NewFromConfig(st.AWS), st.Resources.Table))
	out := map[domain.Status]int{}
	for _, id := range ids {
		d, err := store.GetDelivery(context.Background(), id, domain.ChannelEmail)
		if err != nil {
			out["missing"]++
			continue
		}
		out[d.Status]++
		if d.Attempts > 0 && (d.Status == domain.StatusRetrying || d.Status == domain.StatusSending) {
			out["failed at least once"]++
		}
	}
	return out
}

func queuesIdle(t *testing.T, st *devstack.Stack) bool {
	t.Helper()
	depths, err := st.QueueDepths(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range depths {
		if q.Visible+q.InFlight+q.Delayed > 0 {
			return false
		}
	}
	return true
}

// A restart with the same data directory carries on: 40 notifications
// accepted while every email send fails are all sent, each exactly once,
// after the stack is stopped and started again with faults off; the table
// and queues are reused, and an Idempotency-Key sent before the restart
// still replays.
func TestRestartWithDataDirDeliversEachQueuedMessageOnce(t *testing.T) {
	// 40: more relay batches than the one a restart may read again, and
	// retries waiting at the stop; a larger population proves nothing more.
	const n = 40
	dir := t.TempDir()
	cfg := devstack.Config{
		DataDir: dir, ScheduleInterval: time.Second,
		// A backoff short enough to be waiting for a retry at the stop, and
		// receives to spare so that none reaches the DLQ while faults are on.
		Overrides: map[string]string{"BackoffBase": "3s", "BackoffCap": "3s", "MaxReceiveCount": "50"},
	}
	run := fmt.Sprint(time.Now().UnixNano())
	addr := func(i int) string { return fmt.Sprintf("r%s-%d@example.com", run, i) }

	st1 := start(t, cfg)
	if err := st1.Faults.Set(domain.ChannelEmail, devstack.FaultTransient, 0); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, n)
	for i := range n {
		user := fmt.Sprintf("r%s-%d", run, i)
		r := stacktest.DoOn(t, st1, http.MethodPost, "/v1/notifications", map[string]any{
			"type": "reservation.approved", "channels": []string{"email"},
			"recipient": map[string]any{"userId": user, "email": addr(i)},
			"data":      map[string]any{"reservationUrl": "https://example.com/r/" + user},
		}, "Idempotency-Key: restart-"+run+"-"+fmt.Sprint(i))
		if r.StatusCode != http.StatusAccepted {
			t.Fatalf("POST #%d = %d %s", i, r.StatusCode, r.Body)
		}
		var acc struct{ ID string }
		if err := json.Unmarshal(r.Body, &acc); err != nil {
			t.Fatal(err)
		}
		ids[i] = acc.ID
	}
	// Every email delivery has failed at least once and waits for a retry
	// (or is being retried).
	var statuses map[domain.Status]int
	eventually(t, 90*time.Second, "every email delivery failed once", func() bool {
		statuses = emailStatuses(t, st1, ids)
		return statuses["failed at least once"] == n
	}, func() string { return fmt.Sprint(statuses) })
	if got := len(sentTo(t, st1)); got != 0 {
		t.Fatalf("%d recipients got mail while faults were on", got)
	}
	st1.Stop()
	stoppedAt := time.Now()
	// A clean stop hands back what it had received, so messages are saved
	// invisible only for their backoff. A receive whose answer was lost on
	// the wire (rare, under load) leaves its batch in flight for the queue's
	// visibility timeout (180 s) — SQS semantics, kept across the restart —
	// which the wait below allows for; it is logged, not an error.
	var saved struct {
		Queues []struct {
			Name     string
			Messages []struct {
				Body                    string
				DelayUntil              int64 `json:"delayUntil"`
				ApproximateReceiveCount int   `json:"approximateReceiveCount"`
			}
		}
	}
	if raw, err := os.ReadFile(filepath.Join(dir, "queues.json")); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(raw, &saved); err != nil {
		t.Fatal(err)
	}
	for _, q := range saved.Queues {
		for _, m := range q.Messages {
			if wait := time.UnixMilli(m.DelayUntil).Sub(stoppedAt); wait > 10*time.Second {
				t.Logf("%s: message saved invisible for another %s (receives %d): %s", q.Name, wait.Round(time.Second), m.ApproximateReceiveCount, m.Body)
			}
		}
	}
	for _, f := range []string{"queues.json", "secrets.json", "stream-checkpoints-RelayStreamMapping.json", "stream-checkpoints-RelayHighStreamMapping.json", "dynamodb"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("data directory lacks %s: %v", f, err)
		}
	}

	began := time.Now()
	st2 := start(t, cfg) // a new stack's faults are off
	calls := st2.Calls.Snapshot()
	for _, op := range []string{"DynamoDB.CreateTable", "SQS.CreateQueue"} {
		if calls[op] != 0 {
			t.Errorf("restart called %s %d times; want the existing resources reused", op, calls[op])
		}
	}
	// A replay of a key accepted before the restart answers the same id.
	r := stacktest.DoOn(t, st2, http.MethodPost, "/v1/notifications", map[string]any{
		"type": "reservation.approved", "channels": []string{"email"},
		"recipient": map[string]any{"userId": fmt.Sprintf("r%s-0", run), "email": addr(0)},
		"data":      map[string]any{"reservationUrl": fmt.Sprintf("https://example.com/r/r%s-0", run)},
	}, "Idempotency-Key: restart-"+run+"-0")
	if r.StatusCode != http.StatusAccepted || r.Header.Get("Idempotent-Replayed") != "true" || !strings.Contains(string(r.Body), ids[0]) {
		t.Fatalf("replay after restart = %d replayed=%q %s; want 202, true, id %s", r.StatusCode, r.Header.Get("Idempotent-Replayed"), r.Body, ids[0])
	}

	eventually(t, 4*time.Minute, "every email delivery sent", func() bool {
		statuses = emailStatuses(t, st2, ids)
		return statuses[domain.StatusSent] == n
	}, func() string { return fmt.Sprint(statuses) })
	eventually(t, 30*time.Second, "queues empty", func() bool { return queuesIdle(t, st2) })
	t.Logf("all %d sent %s after the restart began", n, time.Since(began).Round(100*time.Millisecond))
	// The relay's stream position was kept: it reads again at most the batch
	// it was handling when the stack stopped (one batch read), not the ~12
	// batches that carried the 40 notifications.
	if relay := st2.Calls.FunctionSnapshot("RelayFunction"); relay["DynamoDB.BatchGetItem"] > 1 {
		t.Errorf("the relay replayed the stream after the restart (%v); want it to resume after its checkpoint", relay)
	}
	// Anything sent twice would be in the SES emulator by now: the queues are
	// empty and nothing is in flight.
	sent := sentTo(t, st2)
	for i := range n {
		if sent[addr(i)] != 1 {
			t.Errorf("%s got %d emails, want 1", addr(i), sent[addr(i)])
		}
	}
	if len(sent) != n {
		t.Errorf("mail went to %d recipients, want %d", len(sent), n)
	}
}

// When an emulator dies, the stack stops its functions and says which
// emulator it was, instead of polling a dead endpoint.
func TestEmulatorDeathStopsTheStack(t *testing.T) {
	for _, name := range []string{"sqs", "dynamodb"} {
		t.Run(name, func(t *testing.T) {
			logs := &stacktest.LogBuffer{}
			cfg := devstack.Config{Logs: logs}
			if name != "dynamodb" {
				// make test's shared DynamoDB Local, when there is one: a
				// JVM start fewer; only the DynamoDB case kills its own.
				cfg.DynamoDB = os.Getenv(devstack.SharedDynamoDBEnv)
			}
			st := start(t, cfg)
			pid := st.Emulators.PID(name)
			if pid == 0 {
				t.Fatalf("no %s emulator", name)
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			select {
			case <-st.Done():
			case <-time.After(15 * time.Second):
				t.Fatalf("the stack kept running 15 s after the %s emulator was killed", name)
			}
			var exit *devstack.EmulatorExitError
			if err := st.Err(); !errors.As(err, &exit) || exit.Name != name || exit.PID != pid ||
				!strings.Contains(err.Error(), "("+name+")") || !strings.Contains(err.Error(), "killed") {
				t.Fatalf("Err() = %v; want an EmulatorExitError naming %s, pid %d, killed", err, name, pid)
			}
			// The functions are stopped: nothing goes on logging failures.
			time.Sleep(500 * time.Millisecond)
			before := logs.Lines()
			time.Sleep(2 * time.Second)
			if after := logs.Lines(); after > before {
				t.Errorf("%d log lines in the 2 s after the stack stopped; want none", after-before)
			}
		})
	}
}
