package failover

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/failover"
)

var (
	primaryName   = failover.SES(devstack.LocalRegion)
	secondaryName = failover.SES(secondaryRegion)
)

func fault(t *testing.T, provider, mode string) {
	t.Helper()
	r := stacktest.Do(t, http.MethodPost, "/_dev/faults", map[string]any{"provider": provider, "mode": mode})
	if r.StatusCode != http.StatusNoContent {
		t.Fatalf("fault %s %s: %d %s", provider, mode, r.StatusCode, r.Body)
	}
}

func notify(t *testing.T, typ, addr string) string {
	data := map[string]any{"url": "https://ex.co/s"}
	if typ == "reservation.approved" {
		data = map[string]any{"reservationUrl": "https://example.com/r/1"}
	}
	return stacktest.Notify(t, map[string]any{"type": typ, "recipient": map[string]any{"userId": stacktest.UniqueID("fo"), "email": addr},
		"channels": []string{"email"}, "data": data})
}

// settled waits for the email delivery of id to end and returns it.
func settled(t *testing.T, id string) *domain.Delivery { return settledOn(t, id, domain.ChannelEmail) }

// settledOn waits for the delivery of id on ch to end and returns it.
func settledOn(t *testing.T, id string, ch domain.Channel) *domain.Delivery {
	t.Helper()
	var d *domain.Delivery
	stacktest.Eventually(t, 20*time.Second, "delivery "+id+" settled", func() bool {
		var err error
		d, err = stacktest.Store(t).GetDelivery(context.Background(), id, ch)
		return err == nil && d.Status.Terminal()
	})
	return d
}

// emails counts the captured mail per recipient in one region's SES.
func emails(t *testing.T, provider string) map[string]int {
	t.Helper()
	var store struct{ Emails []stacktest.Email }
	stacktest.Do(t, http.MethodGet, "/_dev/emails?provider="+provider, nil).JSON(t, &store)
	out := map[string]int{}
	for _, e := range store.Emails {
		for _, to := range e.Destination.To {
			out[strings.ToLower(to)]++
		}
	}
	return out
}

// One sequence on one breaker: the primary's outage, its end, and a
// recipient's error after it.
func TestEmailFailover(t *testing.T) {
	st := stacktest.Stack(t)
	run := stacktest.UniqueID("run")

	// A first email warms the functions (cold starts are not the outage's).
	if d := settled(t, notify(t, "security.login_alert", run+"-warm@example.com")); d.Provider != primaryName {
		t.Fatalf("before the outage: %s via %q; want the primary", d.Status, d.Provider)
	}
	// 100 HIGH emails with the primary down: all sent through the
	// secondary, none twice, the first within 5 s of the outage.
	fault(t, devstack.FaultSESPrimary, string(devstack.FaultOutage))
	outageAt := st.Clock.Now()
	const high = 100
	ids := make([]string, high)
	addrs := make([]string, high)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range high {
		addrs[i] = fmt.Sprintf("%s-%d@example.com", run, i)
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			ids[i] = notify(t, "security.login_alert", addrs[i])
		}()
	}
	wg.Wait()
	t.Logf("100 notifications accepted %v after the outage began", st.Clock.Now().Sub(outageAt))
	first := time.Time{}
	for i, id := range ids {
		d := settled(t, id)
		if i < 3 {
			t.Logf("high %d: %s after %v, attempts %d, lastError %q", i, d.Status, d.UpdatedAt.Sub(outageAt), d.Attempts, d.LastError)
		}
		if d.Status != domain.StatusSent || d.Provider != secondaryName {
			t.Errorf("high %d: %s %s via %q; want sent via %s", i, d.Status, d.LastError, d.Provider, secondaryName)
		}
		if first.IsZero() || d.UpdatedAt.Before(first) {
			first = d.UpdatedAt
		}
	}
	if lag := first.Sub(outageAt); lag > 5*time.Second {
		t.Errorf("first HIGH sent %v after the outage began; want within 5 s", lag)
	}
	second, primary := emails(t, devstack.FaultSESSecondary), emails(t, devstack.FaultSESPrimary)
	for _, a := range addrs {
		if second[a] != 1 || primary[a] != 0 {
			t.Errorf("%s: %d emails in the secondary, %d in the primary; want exactly one, in the secondary", a, second[a], primary[a])
		}
	}
	if b, err := stacktest.Store(t).Breaker(context.Background(), primaryName); err != nil || b.State(st.Clock.Now()) != failover.Open {
		t.Fatalf("primary breaker %+v, %v; want open", b, err)
	}

	// NORMAL moves while the breaker is open.
	normal := notify(t, "reservation.approved", run+"-normal@example.com")
	if d := settled(t, normal); d.Status != domain.StatusSent || d.Provider != secondaryName {
		t.Errorf("normal while open: %s via %q; want sent via %s", d.Status, d.Provider, secondaryName)
	}

	// After off, once the breaker's open time has passed, a probe closes it
	// and new sends return to the primary.
	fault(t, devstack.FaultSESPrimary, string(devstack.FaultOff))
	st.Clock.Advance(failover.DefaultRules.OpenFor + time.Second)
	for i := range 2 {
		id := notify(t, "reservation.approved", fmt.Sprintf("%s-back%d@example.com", run, i))
		if d := settled(t, id); d.Status != domain.StatusSent || d.Provider != primaryName {
			t.Errorf("after off %d: %s via %q; want sent via %s", i, d.Status, d.Provider, primaryName)
		}
	}
	if b, _ := stacktest.Store(t).Breaker(context.Background(), primaryName); b.State(st.Clock.Now()) != failover.Closed {
		t.Errorf("primary breaker after the probe %+v; want closed", b)
	}

	// A recipient's permanent error does not fail over.
	fault(t, devstack.FaultSESPrimary, string(devstack.FaultPermanent))
	bad := run + "-bad@example.com"
	id := notify(t, "security.login_alert", bad)
	if d := settled(t, id); d.Status != domain.StatusFailed || d.Reason != domain.ReasonRejected || d.Provider != primaryName {
		t.Errorf("permanent error: %s %s via %q; want failed: rejected on %s", d.Status, d.Reason, d.Provider, primaryName)
	}
	if n := emails(t, devstack.FaultSESSecondary)[bad]; n != 0 {
		t.Errorf("the rejected address got %d emails in the secondary", n)
	}
}

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
