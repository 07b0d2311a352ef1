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
	// RemoveConnection forgets a connection (absent: nothing to do).
	RemoveConnection(ctx context.Context, user, connectionID string) error
	// TouchConnection records the client's activity at `at`.
	TouchConnection(ctx context.Context, user, connectionID string, at time.Time) error
}

// PresenceStore records that the user's app was seen (the escalation's
// unlessActiveWithin): an open connection is presence.
type PresenceStore interface {
	TouchPresence(ctx context.Context, userID string, at time.Time, minInterval time.Duration) (bool, error)
}

// Closer closes a connection through the management API (DeleteConnection).
type Closer interface {
	DeleteConnection(ctx context.Context, connectionID string) error
}

// PresenceInterval bounds presence writes: at most one a minute a user.
const PresenceInterval = time.Minute

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
		conns, err := r.Store.AddConnection(ctx, user, Connection{ID: conn, ConnectedAt: now, LastActive: now})
		if err != nil {
			r.Log.ErrorContext(ctx, "live connect failed", "error", err)
			return events.APIGatewayProxyResponse{StatusCode: http.StatusInternalServerError}, nil
		}
		evicted := r.evict(ctx, user, conns, conn, limit, now)
		r.touchPresence(ctx, user, now)
		r.Log.InfoContext(ctx, "live connected", "evicted", evicted)
	case "$disconnect":
		if err := r.Store.RemoveConnection(ctx, user, conn); err != nil {
			r.Log.WarnContext(ctx, "live disconnect failed", "error", err)
		}
	default:
		// {"action":"ping"} (or anything): the client is there. A message
		// is at most 128 KB; nothing in it is used.
		var msg struct {
			Action string `json:"action"`
		}
		_ = json.Unmarshal([]byte(ev.Body), &msg)
		if err := r.Store.TouchConnection(ctx, user, conn, now); err != nil {
			r.Log.WarnContext(ctx, "live touch failed", "error", err)
		}
		r.touchPresence(ctx, user, now)
		if msg.Action == "ping" {
			return events.APIGatewayProxyResponse{StatusCode: http.StatusOK, Body: `{"kind":"pong"}`}, nil
		}
	}
	return events.APIGatewayProxyResponse{StatusCode: http.StatusOK}, nil
}

func (r *Routes) touchPresence(ctx context.Context, user string, now time.Time) {
	if r.Presence == nil {
		return
	}
	if _, err := r.Presence.TouchPresence(ctx, user, now, PresenceInterval); err != nil {
		r.Log.WarnContext(ctx, "live presence failed", "error", fmt.Sprint(err))
	}
}
