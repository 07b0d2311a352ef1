package live

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// ConnectionStore keeps each user's open connections (one item a user).
type ConnectionStore interface {
	// AddConnection records c for user with a write that never conflicts
	// with another connect of the user, and returns the user's connections
	// as of that write: every one recorded before it, c included.
	AddConnection(ctx context.Context, user string, c Connection) ([]Connection, error)
	// EvictConnection removes a connection if it is still recorded and
	// reports whether this call removed it: of concurrent evictions of one
	// connection, exactly one is true.
	EvictConnection(ctx context.Context, user, connectionID string) (bool, error)
	// ForgetConnections removes connections API Gateway has closed
	// (absent ones: nothing to do).
	ForgetConnections(ctx context.Context, user string, connectionIDs []string) error
	// RemoveConnection forgets a connection (absent: nothing to do) and
	// returns the user's connections left in the item.
	RemoveConnection(ctx context.Context, user, connectionID string) (left []Connection, err error)
}

// PresenceStore records that the user's app is open (the escalation's
// unlessActiveWithin): an open connection is presence. Each call is one
// unconditional write of the user's presence item.
type PresenceStore interface {
	// HoldPresence records the user seen at `at` and present until `until`
	// (a connect's or a ping's lease).
	HoldPresence(ctx context.Context, userID string, at, until time.Time) error
	// EndPresence records the user seen at `at` and ends the lease: their
	// last connection closed.
	EndPresence(ctx context.Context, userID string, at time.Time) error
}

// Closer closes a connection through the management API (DeleteConnection).
type Closer interface {
	DeleteConnection(ctx context.Context, connectionID string) error
}

// Routes handles the WebSocket API's $connect, $disconnect and $default.
type Routes struct {
	Store    ConnectionStore
	Presence PresenceStore
	// Online is the online set a broadcast walks; nil records nothing.
	Online OnlineStore
	Closer Closer
	// Later closes, from the live queue, an evicted connection that was
	// still inside its own $connect; nil leaves it open (logged).
	Later LaterCloser
	Now   func() time.Time
	Log   *slog.Logger
	// MaxConnections per user; 0 means DefaultMaxConnections.
	MaxConnections int
}

// UserOf reads the user the authorizer put in the connection's context
// (every route of the connection carries it, not only $connect).
func UserOf(rc events.APIGatewayWebsocketProxyRequestContext) string {
	m, ok := rc.Authorizer.(map[string]any)
	if !ok {
		return ""
	}
	if u, ok := m["userId"].(string); ok && u != "" {
		return u
	}
	u, _ := m["principalId"].(string)
	return u
}

// Handle answers one route invocation. A $connect that cannot be recorded
// is refused (500: the client retries); $disconnect and $default never fail
// the connection.
func (r *Routes) Handle(ctx context.Context, ev events.APIGatewayWebsocketProxyRequest) (events.APIGatewayProxyResponse, error) {
	rc := ev.RequestContext
	user, conn, now := UserOf(rc), rc.ConnectionID, r.Now()
	if user == "" || conn == "" {
		// Only reachable without the authorizer: refuse.
		return events.APIGatewayProxyResponse{StatusCode: http.StatusForbidden}, nil
	}
	switch rc.RouteKey {
	case "$connect":
		limit := r.MaxConnections
		if limit <= 0 {
			limit = DefaultMaxConnections
		}
		// The online set first: an entry without a recorded connection is
		// harmless (a broadcast finds no open connection and posts
		// nothing), a connection missing from the set would miss every
		// announcement; either failure refuses the connect (the kit retries).
		if r.Online != nil {
			if err := r.Online.AddOnline(ctx, OnlineShard(user), user, now.Add(MaxConnectionAge)); err != nil {
				r.Log.ErrorContext(ctx, "live online set write failed", "error", err)
				return events.APIGatewayProxyResponse{StatusCode: http.StatusInternalServerError}, nil
			}
		}
		conns, err := r.Store.AddConnection(ctx, user, Connection{ID: conn, ConnectedAt: now})
		if err != nil {
			r.Log.ErrorContext(ctx, "live connect failed", "error", err)
			return events.APIGatewayProxyResponse{StatusCode: http.StatusInternalServerError}, nil
		}
		evicted := r.evict(ctx, user, conns, conn, limit, now)
		r.holdPresence(ctx, user, now)
		r.Log.InfoContext(ctx, "live connected", "evicted", evicted)
	case "$disconnect":
		left, err := r.Store.RemoveConnection(ctx, user, conn)
		if err != nil {
			r.Log.WarnContext(ctx, "live disconnect failed", "error", err)
			return events.APIGatewayProxyResponse{StatusCode: http.StatusOK}, nil
		}
		// The user's last connection: the app is closed now, so the lease
		// ends here instead of at its term (PresenceLease).
		if !anyOpen(left, conn, now) && r.Presence != nil {
			if err := r.Presence.EndPresence(ctx, user, now); err != nil {
				r.Log.WarnContext(ctx, "live presence failed", "error", fmt.Sprint(err))
			}
		}
	default:
		// {"action":"ping"} (or anything): the client is there, the
		// connection stays open (API Gateway's idle timeout restarts) and
		// the user present: one write, the lease. A message is at most
		// 128 KB; nothing in it is used.
		var msg struct {
			Action string `json:"action"`
		}
		_ = json.Unmarshal([]byte(ev.Body), &msg)
		r.holdPresence(ctx, user, now)
		if msg.Action == "ping" {
			return events.APIGatewayProxyResponse{StatusCode: http.StatusOK, Body: `{"kind":"pong"}`}, nil
		}
	}
	return events.APIGatewayProxyResponse{StatusCode: http.StatusOK}, nil
}

// holdPresence holds the user present for PresenceLease from now: until
// the connection's idle deadline, which the next ping moves.
func (r *Routes) holdPresence(ctx context.Context, user string, now time.Time) {
	if r.Presence == nil {
		return
	}
	if err := r.Presence.HoldPresence(ctx, user, now, now.Add(PresenceLease)); err != nil {
		r.Log.WarnContext(ctx, "live presence failed", "error", fmt.Sprint(err))
	}
}

// anyOpen reports whether a connection other than closed may still be open.
func anyOpen(cs []Connection, closed string, now time.Time) bool {
	for _, c := range cs {
		if c.ID != closed && c.Open(now) {
			return true
		}
	}
	return false
}
