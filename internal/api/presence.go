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

// presenceCache remembers, per API instance, when this instance last wrote
// (or found written) each user's presence, so that repeated calls within
// the interval make no request at all; the conditional write covers the
// other instances. It keeps two generations: the first call an interval
// after the current one began starts a new one and drops the older whole.
// Every entry dropped is over an interval old (it would save nothing), no
// entry is ever scanned, and what it holds is the users seen in the current
// generation and the one before (docs/decisions.md, "Presence").
type presenceCache struct {
	mu                sync.Mutex
	current, previous map[string]time.Time
	started           time.Time // when current began
}

// due reports whether user's presence needs a write at now, and if so
// reserves it (concurrent calls on this instance then skip).
func (c *presenceCache) due(user string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.current == nil || now.Sub(c.started) >= PresenceInterval || now.Before(c.started) {
		c.previous, c.current, c.started = c.current, map[string]time.Time{}, now
	}
	for _, seen := range [2]map[string]time.Time{c.current, c.previous} {
		if t, ok := seen[user]; ok && now.Sub(t) < PresenceInterval && !now.Before(t) {
			return false
		}
	}
	c.current[user] = now
	return true
}

// forget drops a reservation whose write failed, so the next call retries.
func (c *presenceCache) forget(user string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, seen := range [2]map[string]time.Time{c.current, c.previous} {
		if t, ok := seen[user]; ok && t.Equal(at) {
			delete(seen, user)
		}
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
