package api

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// PresenceStore records when a user's app was last seen.
type PresenceStore interface {
	// TouchPresence writes lastSeenAt = at unless a write within
	// minInterval before at already did; written says whether it wrote.
	TouchPresence(ctx context.Context, userID string, at time.Time, minInterval time.Duration) (written bool, err error)
}

// PresenceInterval is the resolution of lastSeenAt: at most one write per
// user per interval, whatever the request rate.
const PresenceInterval = time.Minute

// presenceCacheMax bounds the per-instance cache; past it, entries older
// than the interval are dropped (they no longer save anything). The bound is
// soft: entries younger than the interval are kept (dropping them would cost
// a billed conditional write per call), at ~127 bytes a user
// (BenchmarkPresenceCache).
const presenceCacheMax = 10000

// presenceCache remembers, per API instance, when this instance last wrote
// (or found written) each user's presence, so that repeated calls within
// the interval make no request at all; the conditional write covers the
// other instances.
type presenceCache struct {
	mu   sync.Mutex
	last map[string]time.Time
	// nextSweep is when a cache at the bound is next scanned: not before
	// its oldest entry is older than the interval (nothing to drop until
	// then) nor within presenceSweepGap of the last scan, so new users do
	// not each pay a scan of 10,000 entries under the lock.
	nextSweep time.Time
	// sweeps counts full scans of last (the tests bound them).
	sweeps int
}

// due reports whether user's presence needs a write at now, and if so
// reserves it (concurrent calls on this instance then skip).
func (c *presenceCache) due(user string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		c.last = map[string]time.Time{}
	}
	if t, ok := c.last[user]; ok && now.Sub(t) < PresenceInterval && !now.Before(t) {
		return false
	}
	if len(c.last) >= presenceCacheMax && !now.Before(c.nextSweep) {
		c.sweep(now)
	}
	c.last[user] = now
	return true
}

// presenceSweepGap is the least time between two scans at the bound, so that
// a steady stream of new users (entries ageing out one by one) costs at most
// ten scans a minute, not one per call; the cache may exceed its bound by
// the users that arrive in between (a soft bound).
const presenceSweepGap = PresenceInterval / 10

// sweep drops the entries older than the interval (they no longer save a
// request) and sets when the next sweep can drop anything.
func (c *presenceCache) sweep(now time.Time) {
	c.sweeps++
	oldest := now
	for u, t := range c.last {
		switch {
		case now.Sub(t) >= PresenceInterval:
			delete(c.last, u)
		case t.Before(oldest):
			oldest = t
		}
	}
	c.nextSweep = oldest.Add(PresenceInterval)
	if gap := now.Add(presenceSweepGap); c.nextSweep.Before(gap) {
		c.nextSweep = gap
	}
}

// forget drops a reservation whose write failed, so the next call retries.
func (c *presenceCache) forget(user string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last[user].Equal(at) {
		delete(c.last, user)
	}
}

// seen records the user's presence at most once per interval. Errors are
// logged, not returned: presence never fails the inbox read it rides on.
func (h *InboxHandler) seen(ctx context.Context, user string) error {
	if h.presence == nil {
		return nil
	}
	now := h.now()
	if !h.presenceCache.due(user, now) {
		return nil
	}
	if _, err := h.presence.TouchPresence(ctx, user, now, PresenceInterval); err != nil {
		h.presenceCache.forget(user, now)
		h.log.WarnContext(ctx, "record presence", "error", err)
		return err
	}
	return nil
}

// postPresence is POST /v1/users/{userId}/presence: the user's app is open.
func (h *InboxHandler) postPresence(ctx context.Context, req *request) response {
	user, p := h.owner(req)
	if p != nil {
		return problemResponse(p)
	}
	if err := h.seen(ctx, user); err != nil {
		return h.internalError(ctx, "record presence", err)
	}
	return response{status: http.StatusNoContent}
}
