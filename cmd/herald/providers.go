package main

import (
	"context"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/ops"
)

// runProviders is `herald providers`: the providers' circuit breakers of
// the stack (--stack, HERALD_STACK) or of herald dev (--state).
func runProviders(ctx context.Context, args []string) error {
	w, rest, err := ops.ParseProvidersArgs(args, os.Stderr)
	if err != nil {
		return err
	}
	cfg, t, _, err := ops.DefaultResolver().Resolve(ctx, w)
	if err != nil {
		return err
	}
	b := dynamo.StoresOf(dynamo.New(dynamodb.NewFromConfig(cfg), t.Table)).Breakers
	return ops.Providers(ctx, os.Stdout, b, time.Now(), rest)
}
