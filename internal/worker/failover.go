package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/failover"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/policy"
)

// Failover is a channel's second provider (issue 38; the rules are
// internal/failover's): HIGH moves an attempt the primary refused to it at
// once, everything moves while the primary's breaker is open.
type Failover struct {
	Secondary channel.Provider
	// SecondaryName is its provider name (ses:<region>, sns, sms-voice).
	SecondaryName string
	// SecondaryQuota is the secondary's own send quota (its account's
	// rate in its region), with the same HIGH reserve and LOW share.
	SecondaryQuota policy.SendQuota
}

// target is one provider an attempt may go to, with its quota.
type target struct {
	name      string
	provider  channel.Provider
	quota     policy.SendQuota
	secondary bool
}

// quotaKey is the counter the target's send quota is kept in: the
// channel's for the primary (the counters as they always were), the
// channel and provider name for the secondary.
func (t target) quotaKey(c domain.Channel) domain.Channel {
	if t.secondary {
		return c + "@" + domain.Channel(t.name)
	}
	return c
}

func (h *Handler) primary() target {
	return target{name: h.providerName, provider: h.provider, quota: h.cfg.SendQuota}
}

func (h *Handler) secondary() (target, bool) {
	if h.failover == nil {
		return target{}, false
	}
	return target{name: h.failover.SecondaryName, provider: h.failover.Secondary, quota: h.failover.SecondaryQuota, secondary: true}, true
}

// targetNamed is the target of a provider name (a delivery's pin); the
// primary when the name is no longer configured.
func (h *Handler) targetNamed(name string) target {
	if sec, ok := h.secondary(); ok && sec.name == name {
		return sec
	}
	return h.primary()
}

// cachedBreaker is a breaker as this instance last read or wrote it.
type cachedBreaker struct {
	b      failover.Breaker
	readAt time.Time
}

// breakerState is the state of a provider's breaker from the instance's
// cache, re-read when older than Rules.Refresh. A read that fails keeps the
// cached copy (closed when there is none): the breaker only steers, every
// send still records its own outcome.
func (h *Handler) breakerState(ctx context.Context, name string) failover.State {
	now := h.now()
	if h.breakers == nil || name == "" {
		return failover.Closed
	}
	h.brMu.Lock()
	c, ok := h.brCache[name]
	h.brMu.Unlock()
	if !ok || now.Sub(c.readAt) >= h.rules.Refresh || now.Before(c.readAt) {
		b, err := h.breakers.Breaker(ctx, name)
		if err != nil {
			h.log.WarnContext(ctx, "read breaker failed", "provider", name, "error", err)
			return c.b.State(now)
		}
		c = h.cacheBreaker(name, b)
	}
	return c.b.State(now)
}

func (h *Handler) cacheBreaker(name string, b failover.Breaker) cachedBreaker {
	c := cachedBreaker{b: b, readAt: h.now()}
	h.brMu.Lock()
	h.brCache[name] = c
	h.brMu.Unlock()
	return c
}

// chooseTarget chooses an attempt's provider before its claim from the
// cached breakers (pinned: the delivery's pin once the claim has read it):
// Primary, Secondary, or Probe when the primary's breaker is half-open
// (the claim's holder then tries to take the probe).
func (h *Handler) chooseTarget(ctx context.Context, pinned string) failover.Target {
	sec, ok := h.secondary()
	if !ok {
		return failover.Primary
	}
	if pinned != "" {
		return failover.Route(h.providerName, sec.name, true, failover.Closed, failover.Closed, pinned)
	}
	ps := h.breakerState(ctx, h.providerName)
	ss := failover.Closed
	if ps != failover.Closed {
		ss = h.breakerState(ctx, sec.name)
	}
	return failover.Route(h.providerName, sec.name, true, ps, ss, pinned)
}

// attempt is one claimed attempt's provider calls.
type attempt struct {
	to    target
	probe bool // the call to the primary is its half-open breaker's probe
}

// send calls the attempt's provider and, when the primary refused with a
// known transient error and the rules allow, the secondary in the same
// attempt (its own quota token first: takeSecondary). It records each
// call's outcome on its provider's breaker and metrics, and returns the
// target of the last call with its result.
func (h *Handler) send(ctx, sendCtx context.Context, log *slog.Logger, c domain.Channel, d *domain.Delivery, at attempt, cm *channel.Message,
	takeSecondary func(target) bool) (target, string, error) {
	pmid, err := at.to.provider.Send(sendCtx, cm)
	state := h.sendOutcome(ctx, log, c, at, err)
	pe := asProviderError(err)
	sec, ok := h.secondary()
	if err == nil || !ok || at.to.secondary || d.PinnedProvider != "" || !pe.Transient || pe.Unknown || len(cm.Accepted) > 0 ||
		!failover.FailOverNow(d.Priority, state) || h.breakerState(ctx, sec.name) == failover.Open {
		return at.to, pmid, err
	}
	if !takeSecondary(sec) {
		return at.to, pmid, err
	}
	log.InfoContext(ctx, "failing over", "from", at.to.name, "to", sec.name, "code", pe.Code)
	pmid, err = sec.provider.Send(sendCtx, cm)
	h.sendOutcome(ctx, log, c, attempt{to: sec}, err)
	return sec, pmid, err
}

// asProviderError is err as a *channel.ProviderError (an unclassified
// error is transient); nil for nil.
func asProviderError(err error) *channel.ProviderError {
	if err == nil {
		return nil
	}
	var pe *channel.ProviderError
	if !errors.As(err, &pe) {
		pe = &channel.ProviderError{Transient: true, Code: "unclassified", Err: err}
	}
	return pe
}

// sendOutcome counts one provider call per provider, and keeps its
// breaker: a transient failure is counted (and may open it), a probe's
// outcome closes or reopens it. It returns the provider's breaker state
// after the call.
func (h *Handler) sendOutcome(ctx context.Context, log *slog.Logger, c domain.Channel, at attempt, err error) failover.State {
	if at.to.name == "" {
		return failover.Closed
	}
	dims := metrics.Dims{Channel: c, Provider: at.to.name}
	pe := asProviderError(err)
	if err != nil {
		h.metrics.Add(ctx, metrics.ProviderFailed, dims, 1)
	} else {
		h.metrics.Add(ctx, metrics.ProviderSent, dims, 1)
	}
	if h.breakers == nil {
		return failover.Closed
	}
	now := h.now()
	switch {
	case at.probe && err == nil:
		if closed, werr := h.breakers.ProbeSucceeded(ctx, at.to.name); werr != nil {
			log.WarnContext(ctx, "close breaker failed", "provider", at.to.name, "error", werr)
		} else if closed {
			log.InfoContext(ctx, "breaker closed", "provider", at.to.name)
		}
		h.cacheBreaker(at.to.name, failover.Breaker{Provider: at.to.name})
		return failover.Closed
	case err == nil || !pe.Transient:
		// A recipient's error says nothing about the provider.
		return h.breakerState(ctx, at.to.name)
	case at.probe:
		if werr := h.breakers.ProbeFailed(ctx, at.to.name, now, h.rules); werr != nil {
			log.WarnContext(ctx, "reopen breaker failed", "provider", at.to.name, "error", werr)
		}
		h.cacheBreaker(at.to.name, failover.Breaker{Provider: at.to.name, OpenUntil: now.Add(h.rules.OpenFor)})
		return failover.Open
	}
	b, opened, werr := h.breakers.RecordFailure(ctx, at.to.name, now, h.rules)
	if werr != nil {
		log.WarnContext(ctx, "count breaker failure failed", "provider", at.to.name, "error", werr)
		return h.breakerState(ctx, at.to.name)
	}
	h.cacheBreaker(at.to.name, b)
	if opened {
		log.ErrorContext(ctx, BreakerOpenedLog, "provider", at.to.name, "failures", b.Failures)
		h.metrics.Add(ctx, metrics.BreakerOpened, dims, 1)
	}
	return b.State(now)
}

// BreakerOpenedLog is the stable log message of a breaker opening.
const BreakerOpenedLog = "provider breaker opened"

// takeProbe tries to make this attempt the half-open breaker's probe.
func (h *Handler) takeProbe(ctx context.Context, log *slog.Logger) bool {
	if h.breakers == nil {
		return false
	}
	ok, err := h.breakers.TakeProbe(ctx, h.providerName, h.now(), h.rules.ProbeLease)
	if err != nil {
		log.WarnContext(ctx, "take probe failed", "provider", h.providerName, "error", err)
		return false
	}
	return ok
}
