// Package live is the live inbox: the WebSocket connections of the browser
// kit (API Gateway WebSocket API), their authorizer, and the poster that
// sends a user's open connections a small message when an inbox item is
// created or changes. It imports no AWS client: the table store, the
// management API client (PostToConnection) and the queue are adapters
// behind the small interfaces declared next to their consumers here.
//
// The inbox stays the truth: a message that cannot be posted is dropped,
// and the kit refetches the inbox when it (re)connects.
package live

import (
	"context"
	"errors"
	"hash/fnv"
	"time"
)

// API Gateway's WebSocket limits (not adjustable): a connection lasts at
// most MaxConnectionAge and is closed after IdleTimeout without a message
// from the client.
const (
	MaxConnectionAge = 2 * time.Hour
	IdleTimeout      = 10 * time.Minute
	// PingInterval is how often the browser kit pings an open connection
	// (web/herald-inbox.js, LIVE_PING_SECONDS): the one client message that
	// keeps it within IdleTimeout, a minute to spare. Each ping costs a
	// WebSocket message, an invocation and one write (the presence lease),
	// so it is as rare as the idle timeout allows: 650,000 connections ping
	// 1,204 times a second, where a ping a minute made 10,833 (herald
	// capacity, liveConnections).
	PingInterval = 9 * time.Minute
	// PresenceLease is how long a connect or a ping holds the user present
	// (the presence item's presentUntil): API Gateway's idle timeout, after
	// which the connection is closed unless a ping came. The user's last
	// $disconnect ends it sooner.
	PresenceLease = IdleTimeout
	// DefaultMaxConnections is how many connections a user keeps open
	// (tabs, devices); a new one beyond it closes the oldest.
	DefaultMaxConnections = 5
	// MaxMessageBytes is the largest message the poster sends: one
	// WebSocket frame (API Gateway: 32 KB a frame, 128 KB a message).
	MaxMessageBytes = 32 << 10
)

// Table writes each route makes (TestRouteWrites counts them through the
// stores; herald capacity prices the online profile with them): a ping
// holds the lease; a connect writes the online-set entry, its entry of the
// connections item (reading nothing; evictions past the bound are more) and
// the lease; a disconnect removes the connection and, for the user's last
// one, ends the lease.
const (
	PingWrites       = 1
	ConnectWrites    = 3
	DisconnectWrites = 2
)

// The kinds of message a connection receives.
const (
	KindCreated = "inbox.created"
	KindUpdated = "inbox.updated"
)

// Event is one inbox change to post to the user's connections: a queue
// message carries a batch of them (Batch).
type Event struct {
	UserID string `json:"userId"`
	Kind   string `json:"kind"`
	// ID is the inbox item's id; empty for read-all.
	ID string `json:"id,omitempty"`
}

// Batch is the body of one message of the live queue: a batch of
// per-user events, one page of an announcement's broadcast, or a
// connection to close (evicted while inside its $connect).
type Batch struct {
	Events    []Event    `json:"events,omitempty"`
	Broadcast *Broadcast `json:"broadcast,omitempty"`
	Close     *Close     `json:"close,omitempty"`
}

// Broadcast posts an announcement (ID) to the users of one shard of the
// online set whose user id sorts after After ("": from the first).
type Broadcast struct {
	ID    string `json:"id"`
	Shard int    `json:"shard"`
	After string `json:"after,omitempty"`
}

// OnlineShards is how many partitions the online set (LIVE#<shard>) spreads
// over. Writes: one small item per $connect, and API Gateway accepts at most
// 500 new connections a second per account and Region (adjustable), so a
// shard takes ~31 of a partition's 1,000 writes a second (32 times
// headroom; still 3 times at a raised 5,000 connects a second). Reads: a
// broadcast walks the shards in parallel, one chain of paced pages each.
const OnlineShards = 16

// OnlineShard is the user's shard of the online set (FNV-1a of the id).
func OnlineShard(user string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(user))
	return int(h.Sum32() % OnlineShards)
}

// Message is what a connection receives.
type Message struct {
	Kind   string `json:"kind"`
	ID     string `json:"id,omitempty"`
	Unread Unread `json:"unread"`
}

// Unread is the badge: the count (capped) and its display text ("99+").
type Unread struct {
	Count   int    `json:"count"`
	Display string `json:"display"`
}

// Connection is one open WebSocket connection of a user, as the
// connections item records it. Pings write nothing there (their one write
// is the presence lease), so the item knows the connect time, not the
// client's last message.
type Connection struct {
	ID          string
	ConnectedAt time.Time
}

// Deadline is when API Gateway closes the connection at the latest: 2 hours
// after connecting. One closed earlier (idle, or by the client) leaves the
// item at its $disconnect; where that is lost (API Gateway delivers it best
// effort), the next post's 410 forgets it.
func (c Connection) Deadline() time.Time { return c.ConnectedAt.Add(MaxConnectionAge) }

// Open reports whether the connection can still be open at now.
func (c Connection) Open(now time.Time) bool { return now.Before(c.Deadline()) }

// GatewayDeadline is when API Gateway closes a connection made at
// connectedAt whose client last sent a message at lastMessage: 2 hours after
// connecting, or 10 minutes after that message (the local gateway plays it).
func GatewayDeadline(connectedAt, lastMessage time.Time) time.Time {
	if a, b := connectedAt.Add(MaxConnectionAge), lastMessage.Add(IdleTimeout); a.Before(b) {
		return a
	}
	return lastMessage.Add(IdleTimeout)
}

// ErrGone is a connection API Gateway no longer has (410 GoneException).
var ErrGone = errors.New("connection gone")

// Notifier sends inbox changes to the live queue; the relay and the API
// call it after their own work is done, and ignore its errors (logged):
// nothing here may slow or fail a delivery.
type Notifier interface {
	Notify(ctx context.Context, events []Event) error
}

// NopNotifier notifies nothing (a stack without the live queue).
type NopNotifier struct{}

// Notify does nothing.
func (NopNotifier) Notify(context.Context, []Event) error { return nil }
