// Package livepostfn wires the live inbox's poster (the LiveQueue consumer).
package livepostfn

import (
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/live"
	"github.com/heraldhq/herald/internal/live/connections"
	"github.com/heraldhq/herald/internal/queue"
)

var (
	_ live.ConnectionReader  = (*dynamo.Live)(nil)
	_ live.ConnectionEvictor = (*dynamo.Live)(nil)
	_ live.BadgeStore        = (*dynamo.Inbox)(nil)
	_ live.OnlineReader      = (*dynamo.Live)(nil)
	_ live.BroadcastProgress = (*dynamo.Inbox)(nil)
	_ live.Sender            = (*connections.Client)(nil)
	_ live.Closer            = (*connections.Client)(nil)
)

// BroadcastRateEnv is an announcement broadcast's pace, users a second
// (the template's LiveBroadcastRate).
const BroadcastRateEnv = "LIVE_BROADCAST_RATE"

// New wires the poster: TABLE_NAME, LIVE_ENDPOINT, LIVE_QUEUE_URL (its own
// queue: a broadcast's continuations, a close retried), LIVE_BROADCAST_RATE.
func New(d app.Deps) (*live.Poster, error) {
	env, err := d.Require("LIVE_ENDPOINT", queue.LiveQueueEnv, BroadcastRateEnv)
	if err != nil {
		return nil, err
	}
	rate, err := strconv.ParseFloat(env[BroadcastRateEnv], 64)
	if err != nil || rate <= 0 {
		return nil, fmt.Errorf("%s %q: want a positive number of users a second", BroadcastRateEnv, env[BroadcastRateEnv])
	}
	st, err := d.Stores()
	if err != nil {
		return nil, err
	}
	client, err := connections.New(d.AWS, env["LIVE_ENDPOINT"])
	if err != nil {
		return nil, err
	}
	q := queue.NewLiveQueue(sqs.NewFromConfig(d.AWS), env[queue.LiveQueueEnv])
	return &live.Poster{Connections: st.Live, Badge: &live.StoreBadge{Store: st.Inbox, Now: d.Now}, Sender: client, Now: d.Now, Log: d.Log,
		Online: st.Live, Progress: st.Inbox, Queue: q, Evict: st.Live, Closer: client, Later: q, BroadcastRate: rate}, nil
}
