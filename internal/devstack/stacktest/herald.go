package stacktest

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/ops"
)

// Herald runs `herald dlq args…` in-process against the package's stack,
// finding it as the command does by default: through the state file
// `herald dev` writes. connect opens the deployment (ops.DefaultConnect, or
// one a test wraps: counted clients, the stack's clock). It logs the
// command's output and returns its stdout and error.
func Herald(t testing.TB, connect func(context.Context, ops.Where) (*ops.Operator, string, error), args ...string) (string, error) {
	t.Helper()
	path, err := ops.WriteState(t.TempDir(), Stack(t).LocalState())
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err = ops.CLI{Stdout: &out, Stderr: &errOut, Connect: connect}.Run(context.Background(), append(args, "--state", path))
	t.Logf("herald dlq %s\n%s%s", strings.Join(args, " "), errOut.String(), out.String())
	return out.String(), err
}
