package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/ops"
)

// TestMigrateUsage: mistakes are usage errors before any connection.
func TestMigrateUsage(t *testing.T) {
	connect := func(context.Context, ops.Where) (*dynamo.Inbox, string, error) {
		t.Error("connected despite a usage error")
		return nil, "", errors.New("no")
	}
	for _, args := range [][]string{nil, {"other"}, {"inbox-index", "--rate", "-1"}, {"inbox-index", "--page", "0"}, {"inbox-index", "extra"}, {"inbox-index", "--bogus"}} {
		var out, errOut bytes.Buffer
		if err := runMigrate(context.Background(), args, &out, &errOut, connect); !errors.Is(err, errMigrateUsage) {
			t.Errorf("%v: err %v, want a usage error", args, err)
		}
	}
	var out bytes.Buffer
	if err := runMigrate(context.Background(), []string{"help"}, &out, &out, connect); err != nil || !strings.Contains(out.String(), "inbox-index") {
		t.Errorf("help: %v %q", err, out.String())
	}
}
