package deadlines

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/pushsink"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/push"
	"github.com/heraldhq/herald/internal/worker"
)

// slack is how far before or after its cut the provider answers. A call
// starts a little after its invocation (the load and the claim: well under
// a second on the stack), so an email or SMS answered slack before the cut
// is still answered before it.
const slack = 2 * time.Second

// channelCase is one provider of a channel: its fault switch, its worker
// function, and a recipient it reaches.
type channelCase struct {
	fault    domain.Channel // POST /_dev/faults channel
	channel  domain.Channel // the delivery's
	function string         // the worker's logical id
	// perTarget: the cut is the push provider's per-target timeout when it
	// comes before the worker's send deadline.
	perTarget bool
	// recipient makes a recipient and returns a notification for it and a
	// count of what its provider delivered to it.
	recipient func(t *testing.T) (notification map[string]any, delivered func() int)
}

var cases = []channelCase{
	{domain.ChannelEmail, domain.ChannelEmail, "EmailFunction", false, func(t *testing.T) (map[string]any, func() int) {
		user := stacktest.UniqueID("dl-email")
		addr := user + "@example.com"
		return reservation(user, map[string]any{"email": addr}),
			func() int { return len(stacktest.EmailsTo(t, addr)) }
	}},
	{domain.ChannelSMS, domain.ChannelSMS, "SmsFunction", false, func(t *testing.T) (map[string]any, func() int) {
		user, phone := stacktest.UniqueID("dl-sms"), fmt.Sprintf("+1555%07d", time.Now().UnixNano()%10_000_000)
		n := map[string]any{"type": "otp.code", "recipient": map[string]any{"userId": user, "phone": phone}, "data": map[string]any{"code": "246810"}}
		return n, func() int {
			count := 0
			for _, m := range stacktest.Stack(t).SMS.Messages() {
				if m.To == phone {
					count++
				}
			}
			return count
		}
	}},
	{domain.ChannelPush, domain.ChannelPush, "PushFunction", true, func(t *testing.T) (map[string]any, func() int) {
		user := stacktest.UniqueID("dl-web")
		st := stacktest.Stack(t)
		sinkID, sub, err := st.Push.NewSubscription("")
		if err != nil {
			t.Fatal(err)
		}
		reg := stacktest.Do(t, http.MethodPost, "/v1/users/"+user+"/push-subscriptions",
			map[string]any{"endpoint": sub.Endpoint, "expirationTime": nil, "keys": map[string]string{"p256dh": sub.P256dh, "auth": sub.Auth}})
		if reg.StatusCode != http.StatusCreated {
			t.Fatalf("register push subscription = %d %s", reg.StatusCode, reg.Body)
		}
		return pushTo(user), func() int { return st.Push.ReceivedCount(sinkID) }
	}},
	{devstack.FaultMobile, domain.ChannelPush, "PushFunction", true, func(t *testing.T) (map[string]any, func() int) {
		user := stacktest.UniqueID("dl-mobile")
		token := fmt.Sprintf("%064x", time.Now().UnixNano())
		ref, err := stacktest.Client(t, "svc").RegisterDevice(context.Background(), user, client.Device{Platform: client.PlatformAPNs, Token: token, App: "e2e"})
		if err != nil {
			t.Fatal(err)
		}
		return pushTo(user), func() int {
			count := 0
			for _, m := range stacktest.Stack(t).SMS.MobileMessages() {
				if m.DeviceID == ref.DeviceID {
					count++
				}
			}
			return count
		}
	}},
}

func reservation(user string, recipient map[string]any) map[string]any {
	recipient["userId"] = user
	return map[string]any{"type": "reservation.approved", "recipient": recipient, "channels": []string{"email"},
		"data": map[string]any{"reservationUrl": "https://example.com/r/" + user}}
}

func pushTo(user string) map[string]any {
	return map[string]any{"type": "reservation.approved", "recipient": map[string]any{"userId": user}, "channels": []string{"push"},
		"data": map[string]any{"reservationUrl": "https://example.com/r/" + user}}
}

// TestProviderAnswersJustBeforeAndJustAfterTheCut: for each channel, a
// provider that answers slack before the worker's cut (the invocation's
// deadline less worker.DefaultSendMargin; for a push target, the push
// provider's per-target timeout, which comes first) has its delivery sent
// on the first attempt; one that would answer slack after it is abandoned
// at the cut (the local provider sees the call cancelled and sends
// nothing), the attempt is recorded retrying before the function's
// timeout, and the retry sends it: exactly one send each, and no
// invocation of a channel worker runs to its timeout. The four providers
// run side by side, each with its own fault switch, and each provider's two
// calls at once (the call answering after the cut first, the one answering
// before it once the first has taken its fault): the test takes about the
// slowest channel's cut and a retry.
func TestProviderAnswersJustBeforeAndJustAfterTheCut(t *testing.T) {
	st := stacktest.Stack(t)
	timeouts := map[string]time.Duration{}
	for _, fn := range st.Template.Functions() {
		timeouts[fn.LogicalID] = time.Duration(fn.Timeout) * time.Second
	}
	for _, fn := range []string{"EmailFunction", "SmsFunction"} {
		if timeouts[fn] != channelTimeout*time.Second {
			t.Fatalf("%s's timeout on this stack is %v, want %v", fn, timeouts[fn], channelTimeout*time.Second)
		}
	}
	runs := make([]*run, len(cases))
	for i, c := range cases {
		timeout := timeouts[c.function]
		if timeout <= worker.DefaultSendMargin+slack {
			t.Fatalf("%s's timeout %v leaves no send window", c.function, timeout)
		}
		cut := timeout - worker.DefaultSendMargin
		if c.perTarget {
			if push.DefaultTargetTimeout >= cut {
				t.Fatalf("%s's send window %v ends before the per-target timeout %v", c.function, cut, push.DefaultTargetTimeout)
			}
			cut = push.DefaultTargetTimeout
		}
		n, delivered := c.recipient(t)
		runs[i] = &run{channelCase: c, cut: cut, timeout: timeout, notification: n, delivered: delivered}
		t.Cleanup(func() {
			stacktest.Do(t, http.MethodPost, "/_dev/faults", map[string]any{"channel": c.fault, "mode": "off"})
		})
	}
	before := st.Usage.Snapshot().Invocations

	// Just after, then just before, each once its predecessor's call holds
	// its fault (a switch holds one pending fault).
	for _, r := range runs {
		r.lateID = r.start(t, r.cut+slack)
	}
	for _, r := range runs {
		r.waitTaken(t)
	}
	for _, r := range runs {
		r.earlyID = r.start(t, r.cut-slack)
	}
	for _, r := range runs {
		// Just before: sent at the first attempt, once.
		early := r.waitSent(t, r.earlyID)
		if early.Attempts != 1 {
			t.Fatalf("%s answered %v before the %v cut: sent after %d attempts, want sent at the first attempt", r.fault, slack, r.cut, early.Attempts)
		}
		// Just after: abandoned at the cut, recorded, retried, sent once.
		late := r.waitSent(t, r.lateID)
		if late.Attempts != 2 {
			t.Fatalf("%s answering after the cut: sent after %d attempts, want 2 (cut, then retried)", r.fault, late.Attempts)
		}
		// One call answered, one abandoned at the cut.
		calls := st.Faults.SlowCalls(r.fault)
		if len(calls) != 2 || calls[0].Abandoned == calls[1].Abandoned {
			t.Fatalf("%s: slow calls %+v; want one answered %v before the %v cut, one abandoned at it", r.fault, calls, slack, r.cut)
		}
		abandoned := calls[slices.IndexFunc(calls, func(c pushsink.SlowCall) bool { return c.Abandoned })]
		if abandoned.Waited > r.cut+time.Second {
			t.Fatalf("%s answering %v after the %v cut: abandoned after %v; want at the cut", r.fault, slack, r.cut, abandoned.Waited)
		}
		t.Logf("%s: cut %v, the call answering after it abandoned after %v", r.fault, r.cut, abandoned.Waited.Round(time.Millisecond))
	}
	for _, r := range runs {
		stacktest.Eventually(t, 5*time.Second, string(r.fault)+": two sends in all", func() bool { return r.delivered() == 2 })
	}
	// A late duplicate would come from a queued message (a retry's
	// backoff): none is left.
	settle(t)
	for _, r := range runs {
		if got := r.delivered(); got != 2 {
			t.Errorf("%s: %d sends for two notifications, want one each", r.fault, got)
		}
	}

	// No invocation of a channel worker ran to its timeout: each recorded
	// its outcome first.
	after := st.Usage.Snapshot().Invocations
	for _, fn := range []string{"EmailFunction", "SmsFunction", "PushFunction"} {
		if n := after[fn].TimedOut - before[fn].TimedOut; n != 0 {
			t.Errorf("%s: %d invocations ran to the %v timeout", fn, n, timeouts[fn])
		}
		t.Logf("%s: longest invocation %v of %v", fn, after[fn].Longest.Round(time.Millisecond), timeouts[fn])
	}
	for _, dlq := range []string{"EmailDLQ", "SmsDLQ", "PushDLQ"} {
		if msgs := stacktest.PeekQueue(t, dlq); len(msgs) != 0 {
			t.Errorf("%s holds %d messages, want none", dlq, len(msgs))
		}
	}
}

// run is one channel's case: its cut, its recipient, its two notifications.
type run struct {
	channelCase
	cut, timeout     time.Duration
	notification     map[string]any
	delivered        func() int
	lateID, earlyID  string
	faultsTakenUntil int // Faults.Hits of the switch before the late call
}

// start makes the provider's next call answer after delay and sends a
// notification; it returns the notification's id.
func (r *run) start(t *testing.T, delay time.Duration) string {
	t.Helper()
	r.faultsTakenUntil = len(stacktest.Stack(t).Faults.Hits(r.fault))
	body := map[string]any{"channel": r.fault, "mode": "slow", "delayMs": delay.Milliseconds(), "times": 1}
	if resp := stacktest.Do(t, http.MethodPost, "/_dev/faults", body); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("POST /_dev/faults %v = %d %s", body, resp.StatusCode, resp.Body)
	}
	return stacktest.Notify(t, r.notification)
}

// waitTaken waits until a provider call has taken the fault start set: the
// call is held, and the switch is free for the next.
func (r *run) waitTaken(t *testing.T) {
	t.Helper()
	st := stacktest.Stack(t)
	stacktest.Eventually(t, r.timeout, fmt.Sprintf("%s: a call holding its slow fault", r.fault), func() bool {
		if r.fault == domain.ChannelPush { // the local push service's
			_, pending := st.Push.PendingFaults()
			return pending == 0
		}
		return len(st.Faults.Hits(r.fault)) > r.faultsTakenUntil
	})
}

// waitSent waits, at most a timeout and a retry, for the delivery of
// notification id to be sent and returns it.
func (r *run) waitSent(t *testing.T, id string) *domain.Delivery {
	t.Helper()
	var d *domain.Delivery
	stacktest.Eventually(t, r.timeout+20*time.Second, fmt.Sprintf("%s delivery %s sent", r.fault, id), func() bool {
		var err error
		d, err = stacktest.Store(t).GetDelivery(context.Background(), id, r.channel)
		return err == nil && d.Status == domain.StatusSent
	})
	return d
}
