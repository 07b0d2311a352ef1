package capacity

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
//     60 s (one message in, one invocation of LiveFunction, one UpdateItem,
//     and at most one presence write a minute).

// LiveProfile is the live inbox's share of the traffic.
type LiveProfile struct {
	// OnlineShare is the share of a notification's recipients with the app
	// open (a connection) when it arrives.
	OnlineShare float64 `json:"onlineShare"`
	// ConnectionsPerOnlineUser is the average open connections (tabs,
	// devices) of a user who has one.
	ConnectionsPerOnlineUser float64 `json:"connectionsPerOnlineUser"`
	// PingSeconds is the kit's ping interval (presence-seconds, default 60).
	PingSeconds float64 `json:"pingSeconds"`
}

// DefaultLiveProfile: 5 % of recipients online, 1.3 connections each, the
// kit's default ping.
func DefaultLiveProfile() LiveProfile {
	return LiveProfile{OnlineShare: 0.05, ConnectionsPerOnlineUser: 1.3, PingSeconds: 60}
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
	livePingWriteUnits  = 1.0   // UpdateItem of the LIVE item
	livePresenceWrites  = 1.0   // ≤ one presence write a minute
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
		pings*(p.WebSocketMessage+p.LambdaRequest+liveRouteSeconds*liveMemoryGB*p.LambdaGBSecond+livePingWriteUnits*p.WriteRequestUnit) +
		min(pings, 60)*livePresenceWrites*p.WriteRequestUnit
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
