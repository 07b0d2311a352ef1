package failover

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/failover"
)

// notifySMS sends a one-time code to phone at priority p (the type's high,
// or normal).
func notifySMS(t *testing.T, phone string, p domain.Priority) string {
	t.Helper()
	body := map[string]any{"type": "otp.code", "recipient": map[string]any{"userId": stacktest.UniqueID("fo"), "phone": phone},
		"data": map[string]any{"code": "123456"}}
	if p != domain.PriorityHigh {
		body["priority"] = string(p)
	}
	return stacktest.Notify(t, body)
}

// texts counts the captured SMS per number one provider sent.
func texts(t *testing.T, provider string) map[string]int {
	t.Helper()
	var list []struct{ To string }
	stacktest.Do(t, http.MethodGet, "/_dev/sms?provider="+provider, nil).JSON(t, &list)
	out := map[string]int{}
	for _, m := range list {
		out[m.To]++
	}
	return out
}

// TestSMSFailover is TestEmailFailover's sequence for SMS, SNS the primary
// and End User Messaging SMS the secondary: 20 HIGH texts (email proves the
// 100) in SNS's outage all sent once through sms-voice, the first within 5 s;
// NORMAL moves once the breaker is open; after off and the open time, a probe
// closes it and texts go through SNS again. It runs after the email test,
// not beside it: both move the stack's one clock, and each measures its
// outage's first send on it.
func TestSMSFailover(t *testing.T) {
	st := stacktest.Stack(t)
	base := rand.IntN(9_000_000) + 1_000_000
	phone := func(i int) string { return fmt.Sprintf("+1555%07d", base+i) }

	if d := settledOn(t, notifySMS(t, phone(0), domain.PriorityHigh), domain.ChannelSMS); d.Status != domain.StatusSent || d.Provider != failover.SNS {
		t.Fatalf("before the outage: %s %s via %q; want sent via sns", d.Status, d.LastError, d.Provider)
	}
	fault(t, devstack.FaultSNS, string(devstack.FaultOutage))
	outageAt := st.Clock.Now()
	const high = 20
	ids := make([]string, high)
	var wg sync.WaitGroup
	for i := range high {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i] = notifySMS(t, phone(1+i), domain.PriorityHigh)
		}()
	}
	wg.Wait()
	var first time.Time
	for i, id := range ids {
		d := settledOn(t, id, domain.ChannelSMS)
		if d.Status != domain.StatusSent || d.Provider != failover.SMSVoice {
			t.Errorf("high %d: %s %s via %q; want sent via sms-voice", i, d.Status, d.LastError, d.Provider)
		}
		if first.IsZero() || d.UpdatedAt.Before(first) {
			first = d.UpdatedAt
		}
	}
	lag := first.Sub(outageAt)
	t.Logf("first HIGH text sent %v after the outage began", lag)
	if lag > 5*time.Second {
		t.Errorf("first HIGH text sent %v after the outage began; want within 5 s", lag)
	}
	voice, sns := texts(t, failover.SMSVoice), texts(t, failover.SNS)
	for i := range high {
		if n := phone(1 + i); voice[n] != 1 || sns[n] != 0 {
			t.Errorf("%s: %d texts via sms-voice, %d via sns; want exactly one, via sms-voice", n, voice[n], sns[n])
		}
	}
	if b, err := stacktest.Store(t).Breaker(context.Background(), failover.SNS); err != nil || b.State(st.Clock.Now()) != failover.Open {
		t.Fatalf("sns breaker %+v, %v; want open", b, err)
	}

	if d := settledOn(t, notifySMS(t, phone(100), domain.PriorityNormal), domain.ChannelSMS); d.Status != domain.StatusSent || d.Provider != failover.SMSVoice {
		t.Errorf("normal while open: %s %s via %q; want sent via sms-voice", d.Status, d.LastError, d.Provider)
	}

	fault(t, devstack.FaultSNS, string(devstack.FaultOff))
	st.Clock.Advance(failover.DefaultRules.OpenFor + time.Second)
	for i := range 2 {
		if d := settledOn(t, notifySMS(t, phone(200+i), domain.PriorityNormal), domain.ChannelSMS); d.Status != domain.StatusSent || d.Provider != failover.SNS {
			t.Errorf("after off %d: %s %s via %q; want sent via sns", i, d.Status, d.LastError, d.Provider)
		}
	}
	if b, _ := stacktest.Store(t).Breaker(context.Background(), failover.SNS); b.State(st.Clock.Now()) != failover.Closed {
		t.Errorf("sns breaker after the probe %+v; want closed", b)
	}
}
