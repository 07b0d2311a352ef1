package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/ops"
)

const migrateUsage = `Usage:
  herald migrate inbox-index [--rate N] [--page N] [--from CURSOR] [--dry-run] [--json]
                             [--stack NAME | --state FILE]

inbox-index gives the notifications and announcements written before the
one inbox index their keys in it (README, "Upgrading"): it scans the table,
updates each item whose keys its state does not match, conditionally, and
prints its progress and a cursor after each page. Idempotent: a rerun updates
nothing; interrupted, rerun it with --from the last cursor printed.

  --rate N       most updates per second (the write budget; default 100, 0 = unpaced)
  --page N       items per scan request (default 100)
  --from CURSOR  resume where a run stopped
  --dry-run      count what would change, write nothing
  --json         progress as JSON lines

Which deployment: as 'herald dlq' (--stack, or $HERALD_STACK; TABLE_NAME;
--state or the running 'make dev'). The operator needs dynamodb:Scan and
dynamodb:UpdateItem on the table (and cloudformation:DescribeStacks with --stack).
`

var errMigrateUsage = errors.New("usage")

// migrateConnect opens the selected deployment's table.
type migrateConnect func(ctx context.Context, w ops.Where) (*dynamo.Inbox, string, error)

func defaultMigrateConnect(ctx context.Context, w ops.Where) (*dynamo.Inbox, string, error) {
	cfg, t, desc, err := ops.DefaultResolver().Resolve(ctx, w)
	if err != nil {
		return nil, "", err
	}
	return &dynamo.Inbox{Table: dynamo.New(dynamodb.NewFromConfig(cfg), t.Table)}, desc, nil
}

// runMigrate is `herald migrate`.
func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer, connect migrateConnect) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, migrateUsage)
		if len(args) == 0 {
			return fmt.Errorf("%w: missing migration", errMigrateUsage)
		}
		return nil
	}
	if args[0] != "inbox-index" {
		return fmt.Errorf("%w: unknown migration %q (inbox-index)", errMigrateUsage, args[0])
	}
	fs := flag.NewFlagSet("migrate inbox-index", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, migrateUsage) }
	var w ops.Where
	fs.StringVar(&w.Stack, "stack", "", "CloudFormation stack name")
	fs.StringVar(&w.State, "state", "", "local stack state file")
	var o dynamo.MigrateInboxOptions
	fs.Float64Var(&o.WritesPerSecond, "rate", 100, "most updates per second (0 = unpaced)")
	fs.IntVar(&o.PageSize, "page", 100, "items per scan request")
	fs.StringVar(&o.From, "from", "", "cursor to resume from")
	fs.BoolVar(&o.DryRun, "dry-run", false, "count, write nothing")
	asJSON := fs.Bool("json", false, "progress as JSON lines")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return fmt.Errorf("%w: %v", errMigrateUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected %q", errMigrateUsage, fs.Arg(0))
	}
	if o.WritesPerSecond < 0 || o.PageSize < 1 || o.PageSize > 1000 {
		return fmt.Errorf("%w: --rate must be ≥ 0 and --page from 1 to 1000", errMigrateUsage)
	}
	store, desc, err := connect(ctx, w)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "migrate inbox-index on %s (table %s)%s\n", desc, store.Name(), map[bool]string{true: ", dry run", false: ""}[o.DryRun])
	enc := json.NewEncoder(stdout)
	o.Progress = func(p dynamo.MigrateInboxProgress) {
		if *asJSON {
			_ = enc.Encode(p)
			return
		}
		fmt.Fprintf(stdout, "scanned %d, updated %d, already current %d", p.Scanned, p.Updated, p.Current)
		if p.Done {
			fmt.Fprintln(stdout, ", done")
		} else {
			fmt.Fprintf(stdout, ", cursor %s\n", p.Cursor)
		}
	}
	p, err := store.MigrateInboxIndex(ctx, o)
	if err != nil {
		if p.Cursor != "" || p.Scanned > 0 {
			fmt.Fprintf(stderr, "stopped after %d items; resume with --from %s\n", p.Scanned, resumeFrom(o.From, p.Cursor))
		}
		return fmt.Errorf("migrate inbox-index: %w", err)
	}
	return nil
}

// resumeFrom is the cursor a stopped run resumes at: the last page's, or
// where it started when no page completed.
func resumeFrom(from, cursor string) string {
	if cursor != "" {
		return cursor
	}
	return from
}

func runMigrateMain(ctx context.Context, args []string) error {
	err := runMigrate(ctx, args, os.Stdout, os.Stderr, defaultMigrateConnect)
	if errors.Is(err, errMigrateUsage) {
		fmt.Fprintf(os.Stderr, "herald: %v\n\n%s", err, migrateUsage)
		os.Exit(2)
	}
	return err
}
