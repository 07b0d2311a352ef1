package failover_test

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/failover"
)

func TestBreakerState(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		b    failover.Breaker
		want failover.State
	}{
		{"zero", failover.Breaker{}, failover.Closed},
		{"failures below the threshold", failover.Breaker{Failures: 4}, failover.Closed},
		{"open", failover.Breaker{OpenUntil: now.Add(time.Second)}, failover.Open},
		{"open time over", failover.Breaker{OpenUntil: now}, failover.HalfOpen},
		{"forced open", failover.Breaker{Forced: failover.ForceOpen}, failover.Open},
		{"forced closed while open", failover.Breaker{OpenUntil: now.Add(time.Hour), Forced: failover.ForceClosed}, failover.Closed},
	} {
		if got := c.b.State(now); got != c.want {
			t.Errorf("%s: state %s, want %s", c.name, got, c.want)
		}
	}
}

func TestOpensOnceAtTheThreshold(t *testing.T) {
	now := time.Now()
	r := failover.DefaultRules
	if r.Opens(failover.Breaker{Failures: r.Threshold - 1}, now) {
		t.Error("opens below the threshold")
	}
	if !r.Opens(failover.Breaker{Failures: r.Threshold}, now) {
		t.Error("does not open at the threshold")
	}
	if r.Opens(failover.Breaker{Failures: r.Threshold + 3, OpenUntil: now.Add(time.Second)}, now) {
		t.Error("opens again while open")
	}
	if r.Opens(failover.Breaker{Failures: r.Threshold, Forced: failover.ForceClosed}, now) {
		t.Error("opens while forced closed")
	}
}

func TestRoute(t *testing.T) {
	const p, s = "ses:us-east-1", "ses:eu-west-1"
	for _, c := range []struct {
		name         string
		hasSecondary bool
		primary, sec failover.State
		pinned       string
		want         failover.Target
	}{
		{"no secondary, primary open", false, failover.Open, failover.Closed, "", failover.Primary},
		{"closed", true, failover.Closed, failover.Closed, "", failover.Primary},
		{"open", true, failover.Open, failover.Closed, "", failover.Secondary},
		{"half-open probes", true, failover.HalfOpen, failover.Closed, "", failover.Probe},
		{"both open: the primary", true, failover.Open, failover.Open, "", failover.Primary},
		// An unknown outcome pins the delivery to the provider that may have sent it.
		{"pinned to the primary while it is open", true, failover.Open, failover.Closed, p, failover.Primary},
		{"pinned to the secondary while the primary is closed", true, failover.Closed, failover.Closed, s, failover.Secondary},
	} {
		if got := failover.Route(p, s, c.hasSecondary, c.primary, c.sec, c.pinned); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestFailOverNow(t *testing.T) {
	if !failover.FailOverNow(domain.PriorityHigh, failover.Closed) {
		t.Error("high does not fail over at once")
	}
	for _, p := range []domain.Priority{domain.PriorityNormal, domain.PriorityLow} {
		if failover.FailOverNow(p, failover.Closed) {
			t.Errorf("%s fails over while the breaker is closed", p)
		}
		if !failover.FailOverNow(p, failover.Open) {
			t.Errorf("%s does not fail over once the breaker is open", p)
		}
	}
}

func TestParseForce(t *testing.T) {
	for in, want := range map[string]failover.Force{"open": failover.ForceOpen, "closed": failover.ForceClosed, "auto": failover.ForceAuto} {
		if got, err := failover.ParseForce(in); err != nil || got != want {
			t.Errorf("ParseForce(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := failover.ParseForce("half"); err == nil {
		t.Error("ParseForce(half) took it")
	}
}
