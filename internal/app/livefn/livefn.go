// Package livefn wires the live inbox's WebSocket routes ($connect,
// $disconnect, $default).
package livefn

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
	_ live.ConnectionStore = (*dynamo.Live)(nil)
	_ live.PresenceStore   = (*dynamo.Live)(nil)
	_ live.OnlineStore     = (*dynamo.Live)(nil)
	_ live.Closer          = (*connections.Client)(nil)
	_ live.LaterCloser     = (*queue.LiveQueue)(nil)
)

// New wires the routes: TABLE_NAME, LIVE_ENDPOINT (the stage's management
// endpoint), LIVE_MAX_CONNECTIONS (per user), LIVE_QUEUE_URL (where an
// evicted connection still inside its $connect is closed from).
func New(d app.Deps) (*live.Routes, error) {
	env, err := d.Require("LIVE_ENDPOINT", "LIVE_MAX_CONNECTIONS", queue.LiveQueueEnv)
	if err != nil {
		return nil, err
	}
	max, err := strconv.Atoi(env["LIVE_MAX_CONNECTIONS"])
	if err != nil || max < 1 {
		return nil, fmt.Errorf("LIVE_MAX_CONNECTIONS %q: want a positive integer", env["LIVE_MAX_CONNECTIONS"])
	}
	st, err := d.Stores()
	if err != nil {
		return nil, err
	}
	client, err := connections.New(d.AWS, env["LIVE_ENDPOINT"])
	if err != nil {
		return nil, err
	}
	later := queue.NewLiveQueue(sqs.NewFromConfig(d.AWS), env[queue.LiveQueueEnv])
	return &live.Routes{Store: st.Live, Presence: st.Live, Online: st.Live, Closer: client, Later: later, Now: d.Now, Log: d.Log, MaxConnections: max}, nil
}
