package live

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// A user keeps at most MaxConnections open: a connect past it closes the
// oldest. Connects of one user can run at once (a browser reopening its
// tabs), so the connection is recorded with one write that never conflicts
// and answers the user's connections as of that write; from that view each
// connect evicts the oldest others, each removal conditional on the
// connection still being recorded, so that exactly one connect closes it.
// A connect sees only connections recorded before its own and never evicts
// itself: evictions follow the order of the writes, and the last connect
// of a burst leaves exactly MaxConnections.
//
// An evicted connection may still be inside its own $connect: API Gateway
// establishes a connection only when its $connect integration returns, and
// until then answers the management API (DeleteConnection included) 410
// GoneException. Such a connection (and one whose DeleteConnection failed)
// is closed later, from the live queue (Batch.Close), once its $connect has
// returned.

// ConnectWindow bounds how long after it was recorded a connection can
// still be inside its $connect: API Gateway's integration timeout (29 s at
// most, the function's own is shorter) and a second for the upgrade. A 410
// for a connection older than this means it is gone.
const ConnectWindow = 30 * time.Second

// Close is an evicted connection to close once its $connect has returned
// (a live queue message: Batch.Close).
type Close struct {
	// User is set while the connection's record is still to be removed
	// (the connect's EvictConnection failed: throttled, out of time); the
	// poster evicts it first.
	User         string `json:"userId,omitempty"`
	ConnectionID string `json:"connectionId"`
	// Until is the end of the connection's ConnectWindow: a 410 after it
	// means the connection is gone (it was never established, or closed).
	Until time.Time `json:"until"`
	// Attempt counts the EvictConnection and DeleteConnection calls made
	// so far (the evicting connect's is the first).
	Attempt int `json:"attempt,omitempty"`
}

// LaterCloser sends a Close to the live queue, delivered after delay
// (whole seconds).
type LaterCloser interface {
	CloseLater(ctx context.Context, c Close, delay time.Duration) error
}

// ConnectionEvictor removes a connection's record if it is still there and
// reports whether this call removed it (ConnectionStore.EvictConnection).
type ConnectionEvictor interface {
	EvictConnection(ctx context.Context, user, connectionID string) (bool, error)
}

// closeRetryDelay is how long the next call to close a connection waits
// after `calls` calls: 1 s, doubling up to 32 s, and for a connection
// still inside its window no later than the window's end (so that the
// last 410 is read after it).
func closeRetryDelay(calls int, now, until time.Time) time.Duration {
	d := time.Second << min(max(calls-1, 0), 5)
	if rest := until.Sub(now); rest > 0 && rest < d {
		d = rest
	}
	return d
}

// maxCloseAttempts bounds the calls to close one connection (410s inside
// its window end sooner: six calls cover it).
const maxCloseAttempts = 8

// overLimit splits a user's connections, as of the write that recorded
// newID, into those closed by now (API Gateway closed them; forgotten, not
// evicted) and the oldest open others that must go so that at most max stay
// with newID.
func overLimit(conns []Connection, newID string, max int, now time.Time) (closed []string, evict []Connection) {
	var open []Connection
	for _, c := range conns {
		switch {
		case c.ID == newID:
		case !c.Open(now):
			closed = append(closed, c.ID)
		default:
			open = append(open, c)
		}
	}
	sort.Slice(open, func(i, j int) bool {
		if !open[i].ConnectedAt.Equal(open[j].ConnectedAt) {
			return open[i].ConnectedAt.Before(open[j].ConnectedAt)
		}
		return open[i].ID < open[j].ID
	})
	if n := len(open) - (max - 1); n > 0 {
		evict = open[:n]
	}
	sort.Strings(closed)
	return closed, evict
}

// evict applies the limit after newID was recorded: it forgets the closed
// connections and evicts the oldest past max, closing each one it removed.
// Nothing here fails the connect: an eviction it cannot finish (a store
// write or a DeleteConnection that failed, a connection still inside its
// $connect) is finished by the poster, from the live queue.
func (r *Routes) evict(ctx context.Context, user string, conns []Connection, newID string, max int, now time.Time) int {
	closed, over := overLimit(conns, newID, max, now)
	if len(closed) > 0 {
		if err := r.Store.ForgetConnections(ctx, user, closed); err != nil {
			r.Log.WarnContext(ctx, "forget closed connections failed", "error", err)
		}
	}
	evicted := 0
	for _, c := range over {
		pending := Close{User: user, ConnectionID: c.ID, Until: c.ConnectedAt.Add(ConnectWindow)}
		removed, err := r.Store.EvictConnection(ctx, user, c.ID)
		var outcome closeOutcome
		switch {
		case err != nil:
			r.Log.WarnContext(ctx, "evict connection failed; the poster finishes it", "error", err)
			outcome, err = closeAgain(ctx, r.Later, pending, 1, err, now)
		case !removed:
			continue // another connect evicted it, or it disconnected
		default:
			evicted++
			pending.User = ""
			outcome, err = closeConnection(ctx, r.Closer, r.Later, pending, now)
		}
		if outcome == closeDropped {
			r.Log.WarnContext(ctx, "evicted connection not closed", "error", err)
		}
	}
	return evicted
}

// closeOutcome is what one attempt to close a connection came to.
type closeOutcome int

const (
	closeDone    closeOutcome = iota // DeleteConnection closed it
	closeGone                        // 410 past its window: nothing to close
	closeQueued                      // to be tried again from the live queue
	closeDropped                     // given up (the error says why)
)

// closeConnection calls DeleteConnection once for c (c.Attempt calls made
// before). A 410 inside the connection's window (possibly still inside its
// own $connect) or another failure (throttled, timed out) sends c to the
// live queue for a later call, at most maxCloseAttempts in all; a 410 after
// the window means the connection is gone.
func closeConnection(ctx context.Context, closer Closer, later LaterCloser, c Close, now time.Time) (closeOutcome, error) {
	err := closer.DeleteConnection(ctx, c.ConnectionID)
	switch {
	case err == nil:
		return closeDone, nil
	case isGone(err) && !now.Before(c.Until):
		return closeGone, nil
	}
	return closeAgain(ctx, later, c, c.Attempt+1, err, now)
}

// closeAgain sends c, after `calls` calls of which the last failed with
// cause, to the live queue for its next step; past maxCloseAttempts (or
// without a queue) it gives up.
func closeAgain(ctx context.Context, later LaterCloser, c Close, calls int, cause error, now time.Time) (closeOutcome, error) {
	if later == nil || calls >= maxCloseAttempts {
		return closeDropped, cause
	}
	c.Attempt = calls
	if err := later.CloseLater(ctx, c, closeRetryDelay(calls, now, c.Until)); err != nil {
		return closeDropped, fmt.Errorf("%w; and sending it to the live queue: %w", cause, err)
	}
	return closeQueued, nil
}

// closeLater serves a Close from the live queue: the record's eviction
// first when the connect could not make it, then the close. One given up is
// logged: the connection then lives until API Gateway's own limits.
func (p *Poster) closeLater(ctx context.Context, c Close, t *tally) {
	if p.Closer == nil || (c.User != "" && p.Evict == nil) {
		p.Log.WarnContext(ctx, "live close without a closer; dropped")
		t.dropped.Add(1)
		return
	}
	now := p.Now()
	if c.User != "" {
		removed, err := p.Evict.EvictConnection(ctx, c.User, c.ConnectionID)
		switch {
		case err != nil:
			if outcome, err := closeAgain(ctx, p.Later, c, c.Attempt+1, err, now); outcome == closeDropped {
				p.Log.WarnContext(ctx, "live close given up", "attempts", c.Attempt+1, "error", err)
				t.dropped.Add(1)
			}
			return
		case !removed:
			t.gone.Add(1) // another connect evicted it, or it disconnected
			return
		}
		c.User, c.Attempt = "", c.Attempt+1
	}
	outcome, err := closeConnection(ctx, p.Closer, p.Later, c, now)
	switch outcome {
	case closeDone:
		t.closed.Add(1)
	case closeGone:
		t.gone.Add(1)
	case closeDropped:
		p.Log.WarnContext(ctx, "live close given up", "attempts", c.Attempt+1, "error", err)
		t.dropped.Add(1)
	}
}
