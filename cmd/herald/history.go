package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/ops"
)

const historyUsage = `Usage:
  herald user history USER [--type TYPE] [--channel C] [--status S] [--since RFC3339]
                           [--until RFC3339] [--limit N] [--all] [--json] [where]
  herald notification explain ID [--json] [where]

user history: the caller's notifications to USER, newest first, each channel's
delivery with its state, the policy's decision and its times (one page; --all
follows the cursor to the end). notification explain: one notification's
decision trail per channel, each step with its time.

Where (first match wins): --stack NAME (default $HERALD_STACK), --endpoint URL,
otherwise the running 'make dev', calling as --caller (default "cli"), as
'herald send'.
`

// whereFlags are the flags where a command finds the API (as herald send).
type whereFlags struct{ stack, endpoint, caller string }

func (w *whereFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&w.stack, "stack", "", "CloudFormation stack name (default $HERALD_STACK)")
	fs.StringVar(&w.endpoint, "endpoint", "", "API URL")
	fs.StringVar(&w.caller, "caller", "", `local stack caller (X-Herald-Dev-Caller; default "cli")`)
}

// parseOne parses args (flags before or after the one positional argument)
// and returns that argument.
func parseOne(fs *flag.FlagSet, args []string, what string) (string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return "", err
			}
			return "", fmt.Errorf("%w: %v", errSendUsage, err)
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(pos) != 1 {
		return "", sendUsageError("want one %s", what)
	}
	return pos[0], nil
}

// target parses args (one positional argument, what) and builds the client
// of the API the flags name.
func (w *whereFlags) target(ctx context.Context, d sendDeps, fs *flag.FlagSet, args []string, what string) (string, *client.Client, string, error) {
	arg, err := parseOne(fs, args, what)
	if err != nil {
		return "", nil, "", err
	}
	c, where, err := sendTarget(ctx, d, w.stack, w.endpoint, w.caller)
	return arg, c, where, err
}

// helpIsDone: -h printed the usage, the command is done.
func helpIsDone(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

func calledAt(where string, err error) error {
	var herr *client.Error
	if errors.As(err, &herr) {
		return fmt.Errorf("%s answered %d %s: %s", where, herr.Status, herr.Code, herr.Detail)
	}
	return fmt.Errorf("%s: %w", where, err)
}

// runUserHistory is herald user history.
func runUserHistory(ctx context.Context, args []string, stdout, stderr io.Writer, d sendDeps) error {
	fs := flag.NewFlagSet("user history", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, historyUsage) }
	var w whereFlags
	w.add(fs)
	var q client.HistoryQuery
	var since, until string
	var all, asJSON bool
	fs.StringVar(&q.Type, "type", "", "only this notification type")
	fs.StringVar(&q.Channel, "channel", "", "only this channel's deliveries")
	fs.StringVar(&q.Status, "status", "", "only notifications with a delivery in this state")
	fs.StringVar(&since, "since", "", "created at or after (RFC 3339)")
	fs.StringVar(&until, "until", "", "created before (RFC 3339)")
	fs.IntVar(&q.Limit, "limit", 20, "notifications a page (1–100)")
	fs.BoolVar(&all, "all", false, "every page")
	fs.BoolVar(&asJSON, "json", false, "print the pages as JSON")
	user, c, where, err := w.target(ctx, d, fs, args, "user id")
	if err != nil {
		return helpIsDone(err)
	}
	for _, t := range []struct {
		s  string
		to *time.Time
	}{{since, &q.Since}, {until, &q.Until}} {
		if t.s == "" {
			continue
		}
		if *t.to, err = time.Parse(time.RFC3339, t.s); err != nil {
			return sendUsageError("%q: want RFC 3339, like 2026-01-02T15:04:05Z", t.s)
		}
	}
	shown := 0
	for {
		page, err := c.ListUserNotifications(ctx, user, q)
		if err != nil {
			return calledAt(where, err)
		}
		if asJSON {
			if err := json.NewEncoder(stdout).Encode(page); err != nil {
				return err
			}
		} else {
			for _, e := range page.Items {
				ops.PrintHistoryEntry(stdout, e)
			}
		}
		shown += len(page.Items)
		if page.NextCursor == "" {
			break
		}
		if !all {
			if !asJSON {
				fmt.Fprintf(stdout, "(more: --all)\n")
			}
			break
		}
		q.Cursor = page.NextCursor
	}
	if !asJSON && shown == 0 {
		fmt.Fprintf(stdout, "no notifications of this caller to %s\n", user)
	}
	return nil
}

// runExplain is herald notification explain.
func runExplain(ctx context.Context, args []string, stdout, stderr io.Writer, d sendDeps) error {
	fs := flag.NewFlagSet("notification explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, historyUsage) }
	var w whereFlags
	w.add(fs)
	var asJSON bool
	fs.BoolVar(&asJSON, "json", false, "print the notification as JSON")
	id, c, where, err := w.target(ctx, d, fs, args, "notification id")
	if err != nil {
		return helpIsDone(err)
	}
	st, err := c.GetNotification(ctx, id)
	if err != nil {
		return calledAt(where, err)
	}
	if asJSON {
		return json.NewEncoder(stdout).Encode(st)
	}
	ops.PrintTrail(stdout, st)
	return nil
}

// runHistoryMain dispatches herald user history and herald notification
// explain.
func runHistoryMain(ctx context.Context, args []string) error {
	switch {
	case len(args) >= 2 && args[0] == "user" && args[1] == "history":
		return runUserHistory(ctx, args[2:], os.Stdout, os.Stderr, defaultSendDeps())
	case len(args) >= 2 && args[0] == "notification" && args[1] == "explain":
		return runExplain(ctx, args[2:], os.Stdout, os.Stderr, defaultSendDeps())
	}
	return sendUsageError("unknown command %q", strings.Join(args, " "))
}
