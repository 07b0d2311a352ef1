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
// than the interval are dropped (they no longer save anything).
const presenceCacheMax = 10000

// presenceCache remembers, per API instance, when this instance last wrote
// (or found written) each user's presence, so that repeated calls within
// the interval make no request at all; the conditional write covers the
// other instances.
type presenceCache struct {
	mu   sync.Mutex
	last map[string]time.Time
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
	if len(c.last) >= presenceCacheMax {
		for u, t := range c.last {
			if now.Sub(t) >= PresenceInterval {
				delete(c.last, u)
			}
		}
	}
	c.last[user] = now
	return true
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
func (h *Handler) seen(ctx context.Context, user string) error {
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
func (h *Handler) postPresence(ctx context.Context, req *request) response {
	user, p := h.owner(req)
	if p != nil {
		return problemResponse(p)
	}
	if err := h.seen(ctx, user); err != nil {
		return h.internalError(ctx, "record presence", err)
	}
	return response{status: http.StatusNoContent}
}
