package capacity

import (
	"fmt"
	"math"

	"github.com/heraldhq/herald/internal/live"
)

// The live inbox (WebSocket API): what it adds to notifications, and what
// an open connection costs, from the code's counts of calls:
//
//   - per notification: the relay's share of one SendMessageBatch per stream
//     batch (one LiveQueue message per relay batch of ≤ 200 records, ten
//     messages a call); the poster's receive and delete (ten messages a
//     call), its invocation, and 0.5 read unit (an eventually consistent
//     BatchGetItem of the user's U#<user>/LIVE item, present or not);
//   - per notification to a user with a connection open: the badge (a COUNT
//     query of gsi2 with Limit 100: ~1 read unit for a few unread), and one
//     PostToConnection message per open connection;
//   - per connected hour: 60 connection minutes, and the kit's ping every
//     live.PingInterval (one message in, one invocation of LiveFunction,
//     live.PingWrites writes: the presence lease).

// LiveProfile is the live inbox's share of the traffic.
type LiveProfile struct {
	// OnlineShare is the share of a notification's recipients with the app
	// open (a connection) when it arrives.
	OnlineShare float64 `json:"onlineShare"`
	// ConnectionsPerOnlineUser is the average open connections (tabs,
	// devices) of a user who has one.
	ConnectionsPerOnlineUser float64 `json:"connectionsPerOnlineUser"`
	// PingSeconds is the kit's ping interval (live.PingInterval) and
	// PingWrites the table writes a ping makes (live.PingWrites).
	PingSeconds float64 `json:"pingSeconds"`
	PingWrites  float64 `json:"pingWrites"`
	// ConnectWrites and DisconnectWrites: the table writes of a $connect and
	// of a $disconnect (live.ConnectWrites, live.DisconnectWrites).
	ConnectWrites    float64 `json:"connectWrites"`
	DisconnectWrites float64 `json:"disconnectWrites"`
}

// DefaultLiveProfile: 5 % of recipients online, 1.3 connections each, the
// kit's ping and the routes' writes as the code makes them.
func DefaultLiveProfile() LiveProfile {
	return LiveProfile{OnlineShare: 0.05, ConnectionsPerOnlineUser: 1.3, PingSeconds: live.PingInterval.Seconds(),
		PingWrites: live.PingWrites, ConnectWrites: live.ConnectWrites, DisconnectWrites: live.DisconnectWrites}
}

// LiveCost is the live inbox's cost in USD.
type LiveCost struct {
	Profile LiveProfile `json:"profile"`
	// PerMillionNotifications: what the live inbox adds to a million
	// notifications under the profile (most recipients offline: a read of
	// nothing and no post).
	PerMillionNotifications float64 `json:"perMillionNotificationsUSD"`
	// PerMillionPosts: a million notifications to users all online, posted.
	PerMillionPosts float64 `json:"perMillionPostsUSD"`
	// PerMillionConnectedHours: a million hours of one open connection.
	PerMillionConnectedHours float64 `json:"perMillionConnectedHoursUSD"`
	// A campaign to 10 M users under the profile: the poster's queue
	// messages and batch reads (not one call per user), and posts.
	Campaign10MQueueMessages float64 `json:"campaign10MQueueMessages"`
	Campaign10MBatchReads    float64 `json:"campaign10MBatchReads"`
	Campaign10MPosts         float64 `json:"campaign10MPosts"`
	Campaign10MUSD           float64 `json:"campaign10MUSD"`
}

const (
	liveRelayBatch      = 100   // the relay's stream batch: one LiveQueue message each
	liveMessagesPerCall = 10    // SendMessageBatch, ReceiveMessage, DeleteMessageBatch
	liveBatchGetUsers   = 100   // BatchGetItem keys a call
	livePostSeconds     = 0.05  // the poster's time per invocation, per user posted (I/O bound)
	liveRouteSeconds    = 0.01  // LiveFunction's time per ping
	liveMemoryGB        = 0.25  // Globals MemorySize 256 MB
	liveBadgeReadUnits  = 1.0   // gsi2 COUNT, Limit 100, a few unread
	liveItemReadUnits   = 0.5   // the LIVE item (≤ 4 KB), eventually consistent
	liveInvocationFixed = 0.005 // seconds of an invocation that posts nothing
)

// LiveCosts prices the live inbox under profile lp.
func LiveCosts(p Prices, lp LiveProfile) LiveCost {
	perMessage := 1.0 / liveRelayBatch                    // LiveQueue messages per notification
	base := perMessage/liveMessagesPerCall*p.SQSRequest + // the relay's send
		2*perMessage/liveMessagesPerCall*p.SQSRequest + // receive, delete
		perMessage/liveMessagesPerCall*(p.LambdaRequest+liveInvocationFixed*liveMemoryGB*p.LambdaGBSecond) +
		liveItemReadUnits*p.ReadRequestUnit
	post := liveBadgeReadUnits*p.ReadRequestUnit + livePostSeconds*liveMemoryGB*p.LambdaGBSecond +
		lp.ConnectionsPerOnlineUser*p.WebSocketMessage
	pings := 3600 / lp.PingSeconds
	hour := 60*p.WebSocketConnectionMinute +
		pings*(p.WebSocketMessage+p.LambdaRequest+liveRouteSeconds*liveMemoryGB*p.LambdaGBSecond+lp.PingWrites*p.WriteRequestUnit)
	const n = 10e6
	return LiveCost{
		Profile:                  lp,
		PerMillionNotifications:  round2(1e6 * (base + lp.OnlineShare*post)),
		PerMillionPosts:          round2(1e6 * (base + post)),
		PerMillionConnectedHours: round2(1e6 * hour),
		Campaign10MQueueMessages: n / liveRelayBatch,
		Campaign10MBatchReads:    n / liveBatchGetUsers,
		Campaign10MPosts:         n * lp.OnlineShare * lp.ConnectionsPerOnlineUser,
		Campaign10MUSD:           round2(n * (base + lp.OnlineShare*post)),
	}
}

// An announcement's broadcast (live.Announcer, live.Poster): every user
// online when it is published receives one post per open connection. The
// poster pages through the online set (LIVE#<shard>, live.OnlineShards
// partitions, live.BroadcastPage entries a Query), one queue message a page
// (the first of each shard sent by whoever marked the announcement, the
// rest by the poster, delayed to LiveBroadcastRate), one invocation a
// page, each page taken once on the announcement item before it is posted
// (live.BroadcastProgress, one conditional UpdateItem); per page user: a
// read of the LIVE item (BatchGetItem, 100 a call),
// and per user with an open connection the badge (the unread COUNT, the
// announcement's marker) and the posts. Every post makes the kit refetch
// the inbox, so the broadcast's pace is the inbox route's load.

// Broadcast profile: how the online set relates to the users online now.
const (
	// liveSetValidPerOnline: valid entries (a connect in the last 2 h) per
	// user online now (sessions are shorter than the entry's 2 hours).
	liveSetValidPerOnline = 1.5
	// liveSetEntriesPerOnline: entries a Query evaluates per user online,
	// the expired ones TTL has not deleted yet (within days) included.
	liveSetEntriesPerOnline = 3.0
	liveSetEntryBytes       = 60  // pk, sk, kind, ttl
	liveMarkerReadUnits     = 0.5 // the user's marker of the announcement (absent: 0.5)
	// liveProgressWriteUnits: a page's taking updates the announcement
	// item, ≤ 5 KB with its title, body and link at their limits in ASCII.
	liveProgressWriteUnits = 5.0
	// WebSocketNewConnectionsPerSecond is API Gateway's "New connections
	// per second" per account and Region (adjustable): API Gateway
	// developer guide, "Amazon API Gateway quotas for configuring and
	// running a WebSocket API". Each connect writes one online-set entry.
	WebSocketNewConnectionsPerSecond = 500
	// onlineSetWriteUnits: an entry is far under 1 KB.
	onlineSetWriteUnits = 1.0
)

// LiveBroadcast is one announcement broadcast to the profile's users.
type LiveBroadcast struct {
	// OnlineUsers: the profile's users online when it is published;
	// Posts: their open connections (one PostToConnection each).
	OnlineUsers float64 `json:"onlineUsers"`
	Posts       float64 `json:"posts"`
	// Queries (pages of the online set), queue messages and invocations:
	// one each a page.
	Queries       float64 `json:"queries"`
	QueueMessages float64 `json:"queueMessages"`
	Invocations   float64 `json:"invocations"`
	// Seconds: how long it takes at LiveBroadcastRate.
	Seconds float64 `json:"seconds"`
	USD     float64 `json:"usd"`
}

// LiveBroadcastCost prices one broadcast to users (the profile's
// OnlineShare of them online) at rate users a second.
func LiveBroadcastCost(p Prices, lp LiveProfile, users, rate float64) LiveBroadcast {
	online := users * lp.OnlineShare
	valid := online * liveSetValidPerOnline
	entries := online * liveSetEntriesPerOnline
	pages := math.Max(float64(live.OnlineShards), math.Ceil(entries/live.BroadcastPage))
	queryUnits := math.Ceil(live.BroadcastPage*liveSetEntryBytes/4096.0) * 0.5 // eventually consistent
	posts := online * lp.ConnectionsPerOnlineUser
	usd := pages*(3*p.SQSRequest+ // send, receive, delete (paced: one message a call)
		p.LambdaRequest+liveInvocationFixed*liveMemoryGB*p.LambdaGBSecond+
		queryUnits*p.ReadRequestUnit+liveProgressWriteUnits*p.WriteRequestUnit) +
		valid*liveItemReadUnits*p.ReadRequestUnit +
		online*((liveBadgeReadUnits+liveMarkerReadUnits)*p.ReadRequestUnit+livePostSeconds*liveMemoryGB*p.LambdaGBSecond) +
		posts*p.WebSocketMessage
	b := LiveBroadcast{OnlineUsers: online, Posts: posts, Queries: pages, QueueMessages: pages, Invocations: pages, USD: round2(usd)}
	if rate > 0 {
		b.Seconds = round2(valid / rate)
	}
	return b
}

// checkLive: a broadcast's pace (every post a refetch of the inbox) and its
// first wave (a page of every shard at once) under the inbox route's
// throttle, and the online set's writes (one a connect, at API Gateway's
// connect quota) under a partition's write limit.
func (res *Result) checkLive(l Limits) {
	lp := res.Live.Profile
	refetch := l.LiveBroadcastRate * lp.ConnectionsPerOnlineUser
	res.check("live broadcast: "+routeInbox+" refetches/s × headroom vs route throttle", refetch*apiHeadroom, l.routeLimit(routeInbox), true,
		fmt.Sprintf("an announcement's broadcast at LiveBroadcastRate %.0f users/s makes %.0f inbox refetches/s, over half the route's %.0f/s throttle", l.LiveBroadcastRate, refetch, l.routeLimit(routeInbox)))
	// A kit whose refetch was served from an API instance's announcement
	// copy older than the announcement reloads once more, the API's cache
	// TTL + 2 s later (web/herald-inbox.js, CATCH_UP_SECONDS): at worst every
	// refetch of that window is repeated, doubling the route's load for it.
	res.check("live broadcast: "+routeInbox+" refetches/s with the kit's catch-up reloads vs route throttle", 2*refetch, l.routeLimit(routeInbox), true,
		fmt.Sprintf("an announcement's broadcast at LiveBroadcastRate %.0f users/s, with every refetch of the API cache's window reloaded once more, makes %.0f inbox requests/s, over the route's %.0f/s throttle", l.LiveBroadcastRate, 2*refetch, l.routeLimit(routeInbox)))
	wave := float64(live.OnlineShards*live.BroadcastPage) * lp.ConnectionsPerOnlineUser
	res.check("live broadcast: first wave's refetches vs "+routeInbox+" burst", wave, l.routeBurst(routeInbox), true,
		fmt.Sprintf("a broadcast's first pages (%d shards × %d users) make %.0f refetches at once, over the route's burst %.0f", live.OnlineShards, live.BroadcastPage, wave, l.routeBurst(routeInbox)))
	// Every page of every shard is taken on the one announcement item: the
	// first wave (a page of each shard at once), then the pace's pages.
	pagesPerSecond := math.Max(live.OnlineShards, l.LiveBroadcastRate*liveSetEntriesPerOnline/liveSetValidPerOnline/live.BroadcastPage)
	res.check("live broadcast: progress write units/s on the announcement item vs partition limit", pagesPerSecond*liveProgressWriteUnits, PartitionWriteUnitsPerSecond, true,
		fmt.Sprintf("a broadcast takes %.0f pages/s on its announcement's item, %.0f write units/s, over a partition's %d", pagesPerSecond, pagesPerSecond*liveProgressWriteUnits, PartitionWriteUnitsPerSecond))
	perShard := WebSocketNewConnectionsPerSecond * onlineSetWriteUnits / live.OnlineShards
	res.check("live online set: write units/s per shard at the connect quota vs partition limit", perShard, PartitionWriteUnitsPerSecond, true,
		fmt.Sprintf("%d connects/s over %d online-set shards write %.0f units/s a partition, over %d", WebSocketNewConnectionsPerSecond, live.OnlineShards, perShard, PartitionWriteUnitsPerSecond))
}
