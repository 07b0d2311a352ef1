// Package livepostfn wires the live inbox's poster (the LiveQueue consumer).
package livepostfn

import (
	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/live"
	"github.com/heraldhq/herald/internal/live/connections"
)

var (
	_ live.ConnectionReader = (*dynamo.Store)(nil)
	_ live.BadgeStore       = (*dynamo.Store)(nil)
	_ live.Sender           = (*connections.Client)(nil)
)

// New wires the poster: TABLE_NAME, LIVE_ENDPOINT.
func New(d app.Deps) (*live.Poster, error) {
	env, err := d.Require("LIVE_ENDPOINT")
	if err != nil {
		return nil, err
	}
	st, err := d.Store()
	if err != nil {
		return nil, err
	}
	client, err := connections.New(d.AWS, env["LIVE_ENDPOINT"])
	if err != nil {
		return nil, err
	}
	return &live.Poster{Connections: st, Badge: &live.StoreBadge{Store: st, Now: d.Now}, Sender: client, Now: d.Now, Log: d.Log}, nil
}
