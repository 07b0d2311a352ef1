package main

import (
	"context"
	"os"

	"github.com/heraldhq/herald/internal/ops"
)

// runDLQ is `herald dlq`: the logic lives in internal/ops so that tests run
// it in-process against a local stack.
func runDLQ(ctx context.Context, args []string) error {
	return ops.CLI{Stdout: os.Stdout, Stderr: os.Stderr, Connect: ops.DefaultConnect}.Run(ctx, args)
}
