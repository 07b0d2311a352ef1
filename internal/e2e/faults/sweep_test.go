package faults

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/recovery"
)

// path is one way a notification travels; start sends it (and brings it due)
// and returns its id. swept are the functions whose calls the sweep fails
// on this path: intake's are not (a failed intake call is the caller's
// 5xx, nothing accepted), nor those another path's sweep fails already.
type path struct {
	name     string
	priority domain.Priority
	swept    []string
	start    func(t *testing.T, user, addr string) string
}

// immediate: intake → relay → email worker.
var immediate = path{name: "immediate", priority: domain.PriorityNormal, swept: []string{"RelayFunction", "EmailFunction"},
	start: func(t *testing.T, user, addr string) string {
		return stacktest.Notify(t, reservation(user, addr))
	}}

// campaign: a campaign of one recipient: plan and lot (campaign function) →
// its notification through the relay and the worker → the lot's reconcile.
var campaign = path{name: "campaign", priority: domain.PriorityLow, swept: []string{"CampaignFunction"},
	start: func(t *testing.T, user, addr string) string {
		if r := stacktest.Do(t, http.MethodPut, "/v1/users/"+user, map[string]string{"email": addr}); r.StatusCode >= 300 {
			t.Fatalf("put user: %d %s", r.StatusCode, r.Body)
		}
		r := stacktest.Do(t, http.MethodPost, "/v1/campaigns", map[string]any{"type": "reservation.approved", "channels": []string{"email"},
			"data": map[string]any{"reservationUrl": "https://example.com/r/1"}, "audience": map[string]any{"userIds": []string{user}}})
		var c struct{ ID string }
		r.JSON(t, &c)
		if r.StatusCode != http.StatusCreated || c.ID == "" {
			t.Fatalf("create campaign: %d %s", r.StatusCode, r.Body)
		}
		stacktest.Stack(t).StoreFaults.Mark(c.ID)
		if r := stacktest.Do(t, http.MethodPost, "/v1/campaigns/"+c.ID+"/start", nil); r.StatusCode != http.StatusAccepted {
			t.Fatalf("start campaign: %d %s", r.StatusCode, r.Body)
		}
		return domain.CampaignNotificationID(c.ID, user)
	}}

// scheduled: intake → relay (deferred) → scheduler tick → release → email worker.
var scheduled = path{name: "scheduled", priority: domain.PriorityNormal, swept: []string{"SchedulerFunction"},
	start: func(t *testing.T, user, addr string) string {
		st := stacktest.Stack(t)
		body := reservation(user, addr)
		body["sendAt"] = st.Clock.Now().Add(5 * time.Minute).UTC().Format(time.RFC3339)
		id := stacktest.Notify(t, body)
		st.StoreFaults.Mark(id)
		// Deferred, or (a relay call failed) retried until it is: the relay
		// runs at once, the tick comes when the clock has passed sendAt.
		waitFor(t, id, 5*time.Second, func(d *domain.Delivery) bool {
			return d != nil && (d.Status == domain.StatusDeferred || d.Status.Terminal()) || idle(t)
		})
		st.Clock.Advance(6 * time.Minute)
		tick(t)
		return id
	}}

func reservation(user, addr string) map[string]any {
	return map[string]any{"type": "reservation.approved", "channels": []string{"email"},
		"recipient": map[string]any{"userId": user, "email": addr},
		"data":      map[string]any{"reservationUrl": "https://example.com/r/" + user}}
}

// tick runs one scheduler tick as its schedule would; an injected fault may
// fail it, as a failed invocation would (the next tick goes on).
func tick(t *testing.T) {
	t.Helper()
	if _, err := stacktest.Stack(t).Scheduler.Tick(context.Background()); err != nil {
		t.Logf("tick: %v", err)
	}
}

// waitFor polls the delivery until ok or timeout; it returns the last read
// (nil: none yet).
func waitFor(t *testing.T, id string, timeout time.Duration, ok func(*domain.Delivery) bool) *domain.Delivery {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		d, err := stacktest.Store(t).GetDelivery(context.Background(), id, domain.ChannelEmail)
		if err != nil && !errors.Is(err, domain.ErrNotFound) {
			t.Fatal(err)
		}
		if err != nil {
			d = nil
		}
		if ok(d) {
			return d
		}
		if time.Now().After(deadline) {
			return d
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// outcome is how one run ended.
type outcome struct {
	status domain.Status
	reason domain.Reason
	emails int
	// watched is how many times the clock had to be moved past the watch.
	watched int
	parked  string // the DLQ holding the notification's message
}

func (o outcome) String() string {
	s := fmt.Sprintf("%s/%q, %d emails", o.status, o.reason, o.emails)
	if o.watched > 0 {
		s += fmt.Sprintf(", after %d watch checks", o.watched)
	}
	if o.parked != "" {
		s += ", parked in " + o.parked
	}
	return s
}

// dlqs are the queues a delivery of the swept paths may be parked in.
var dlqs = []string{"EmailDLQ", "RelayDLQ", "ReleaseDLQ", "CampaignDLQ"}

// quiet is how long the run's functions make no store call before the
// sweep takes the run for waiting on time (a backoff, a visibility
// timeout, a watch).
const quiet = time.Second

// idle reports whether the run's functions have been quiet that long with
// no invocation under way (a lease is as long as its invocation: moving the
// clock during one would let a second claim through) and no message
// waiting, visible, in a work queue: on a loaded machine a mapping's poller
// can take longer than quiet to receive one, and moving time then would
// count a watch check the run did not need.
func idle(t *testing.T) bool {
	st := stacktest.Stack(t)
	if st.StoreFaults.Quiet() <= quiet || st.Running() > 0 {
		return false
	}
	depths, err := st.QueueDepths(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return !slices.ContainsFunc(depths, func(q devstack.QueueCounts) bool { return !q.DLQ && q.Visible > 0 })
}

// settle waits for the delivery to end. When it has not and the run's
// functions have made no store call for a while (quiet), time passes: the
// messages left in flight for a retry become visible (their backoff or
// visibility timeout over), the clock moves past the in-flight watch's next
// check, and the scheduler ticks — up to four times. It then counts the
// emails (sweep counts them again at its end, for a late duplicate).
func settle(t *testing.T, p path, id, addr string) outcome {
	t.Helper()
	st := stacktest.Stack(t)
	var o outcome
	var d *domain.Delivery
	for give := time.Now().Add(time.Minute); ; {
		if time.Now().After(give) {
			t.Fatalf("%s: still under way after a minute", id)
		}
		d = waitFor(t, id, 20*time.Second, func(d *domain.Delivery) bool {
			return d != nil && d.Status.Terminal() || idle(t)
		})
		if d == nil && !idle(t) {
			continue // not planned yet, and still under way
		}
		if d != nil && d.Status.Terminal() || o.watched == 4 {
			break
		}
		if o.parked = parkedIn(t, id); o.parked != "" {
			break
		}
		st.Retried.ElapseVisibility(context.Background())
		st.Clock.Advance(recovery.NextCheck(time.Time{}, p.priority, o.watched).Sub(time.Time{}) + 2*time.Minute)
		o.watched++
		tick(t)
	}
	if d != nil {
		o.status, o.reason = d.Status, d.Reason
	}
	o.emails = len(stacktest.EmailsTo(t, addr))
	return o
}

// parkedIn names the DLQ holding a message about the notification, if any.
func parkedIn(t *testing.T, id string) string {
	for _, q := range dlqs {
		for _, b := range stacktest.PeekQueue(t, q) {
			if strings.Contains(b, id) {
				return q
			}
		}
	}
	return ""
}

// run sends one notification along p with call (nil: none) failing in mode.
func run(t *testing.T, p path, call *devstack.StoreCall, mode devstack.StoreFaultMode) (outcome, []devstack.RecordedCall) {
	t.Helper()
	st := stacktest.Stack(t)
	user := stacktest.UniqueID("fault")
	addr := user + "@example.com"
	st.StoreFaults.Begin(user)
	if call != nil {
		st.StoreFaults.Arm(*call, mode)
	}
	id := p.start(t, user, addr)
	st.StoreFaults.Mark(id)
	o := settle(t, p, id, addr)
	sent[addr] = o.emails
	if call != nil && len(st.StoreFaults.Served()) == 0 {
		t.Logf("%s: %s (%s) not reached", p.name, call, mode)
	}
	return o, st.StoreFaults.Calls()
}

// good is the one acceptable end: sent exactly once, or parked with nothing
// sent (a redrive sends it).
func good(o outcome) bool {
	return o.status == domain.StatusSent && o.emails == 1 || o.parked != "" && o.emails == 0
}

// reads are the operations whose answer lost is the same fault as refused.
var reads = []string{"DynamoDB.GetItem", "DynamoDB.BatchGetItem", "DynamoDB.Query", "DynamoDB.Scan", "DynamoDB.TransactGetItems", "SQS.ReceiveMessage", "SQS.GetQueueAttributes"}

// toFail picks the calls of a recorded run to fail, of the path's swept
// functions: every write whose request or answer names the run (its user,
// notification or campaign); of the reads, which change nothing, the first
// of each function and operation that names the run; and of the calls that
// name nothing of the run's — a tick's probes of 64–96 due partitions — the
// first of each function and operation, which stands for the rest.
func toFail(p path, calls []devstack.RecordedCall) []devstack.StoreCall {
	var out []devstack.StoreCall
	seen := map[string]bool{}
	for _, c := range calls {
		if !slices.Contains(p.swept, c.Function) {
			continue
		}
		class := fmt.Sprint(c.Function, c.Operation, c.Keyed)
		if seen[class] && (!c.Keyed || slices.Contains(reads, c.Operation)) {
			continue
		}
		seen[class] = true
		out = append(out, c.StoreCall)
	}
	return out
}

// sent are the addresses of every run of the package and the emails each
// got: checked again at the end of the package's sweeps, for a duplicate
// sent after its run ended.
var sent = map[string]int{}

// sweep records p's calls in a run without faults, then fails each call
// toFail picks once, refused and (a write) with its answer lost, each on a
// new notification.
func sweep(t *testing.T, p path) {
	st := stacktest.Stack(t)
	start := time.Now()
	o, calls := run(t, p, nil, "")
	if o.status != domain.StatusSent || o.emails != 1 || o.watched > 0 {
		t.Fatalf("%s without faults: %s, want sent once without a watch check", p.name, o)
	}
	fail := toFail(p, calls)
	t.Logf("%s: %d of its %d store calls to fail: %v", p.name, len(fail), len(calls), fail)
	runs := 0
	for _, c := range fail {
		for _, mode := range []devstack.StoreFaultMode{devstack.StoreFaultRefused, devstack.StoreFaultAnswerLost} {
			if mode == devstack.StoreFaultAnswerLost && slices.Contains(reads, c.Operation) {
				continue
			}
			o, _ := run(t, p, &c, mode)
			runs++
			if !good(o) {
				t.Errorf("%s, %s fails (%s): %s; want sent exactly once, or parked in a DLQ", p.name, c, mode, o)
			} else if o.watched > 0 {
				t.Logf("%s, %s fails (%s): %s", p.name, c, mode, o)
			}
		}
	}
	t.Logf("%s: %d runs in %s (clock moved %s)", p.name, runs, time.Since(start).Round(time.Millisecond), st.Clock.Offset().Round(time.Minute))
	for addr, n := range sent {
		if got := len(stacktest.EmailsTo(t, addr)); got != n {
			t.Errorf("%s got %d emails by the end of the sweep, %d when its run ended", addr, got, n)
		}
	}
}

// TestStoreFaultSweepImmediate: each relay and worker call of an immediate
// email fails once.
func TestStoreFaultSweepImmediate(t *testing.T) { sweep(t, immediate) }

// TestStoreFaultSweepCampaign: each call of the campaign function (plan, lot,
// reconcile) for a campaign of one fails once (its notification's relay and
// worker calls are the immediate sweep's).
func TestStoreFaultSweepCampaign(t *testing.T) { sweep(t, campaign) }

// TestStoreFaultSweepScheduled: each call of the scheduler's tick and
// release for a scheduled email fails once (its relay and worker calls are
// the immediate sweep's).
func TestStoreFaultSweepScheduled(t *testing.T) { sweep(t, scheduled) }
