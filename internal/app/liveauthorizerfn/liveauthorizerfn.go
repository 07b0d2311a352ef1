// Package liveauthorizerfn wires the live inbox's $connect authorizer.
package liveauthorizerfn

import (
	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/live"
	"github.com/heraldhq/herald/internal/live/userjwt"
)

// New wires the authorizer: JWT_ISSUER and JWT_AUDIENCE are the HTTP API's
// UserJwt authorizer's (the JwtIssuer and JwtAudience parameters).
func New(d app.Deps) (*live.Authorizer, error) {
	env, err := d.Require("JWT_ISSUER", "JWT_AUDIENCE")
	if err != nil {
		return nil, err
	}
	return &live.Authorizer{Verifier: userjwt.New(env["JWT_ISSUER"], env["JWT_AUDIENCE"], nil, d.Now), Log: d.Log}, nil
}
