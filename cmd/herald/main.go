// Command herald is Herald's command-line tool: the local stack (dev) and
// operator commands (dlq).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/heraldhq/herald/internal/ops"
)

const usage = `herald — notification service tooling

Usage:
  herald dev           run the whole system locally (emulators + functions)
  herald dev urls      print the URLs of the running 'herald dev'
  herald dlq …         inspect, redrive and purge the dead-letter queues
                       (list | show | redrive | purge; 'herald dlq help')
  herald providers …   the providers' circuit breakers (list | force PROVIDER open|closed|auto)
  herald send …        send a notification with the Go client ('herald send -h')
  herald user history USER          a user's notifications from this caller, newest first
  herald notification explain ID    a notification's decision trail per channel
  herald vapid-keys    generate a VAPID key pair for Web Push
  herald capacity      the capacity and cost model at full scale [--json]
  herald migrate …     data migrations of an upgrade (inbox-index; 'herald migrate help')

Run 'herald <command> -h' for a command's flags.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "dev":
		err = runDev(ctx, os.Args[2:])
	case "dlq":
		err = runDLQ(ctx, os.Args[2:])
		if ops.IsUsage(err) {
			fmt.Fprintln(os.Stderr, "herald:", err)
			os.Exit(2)
		}
	case "providers":
		err = runProviders(ctx, os.Args[2:])
		if ops.IsUsage(err) {
			fmt.Fprintf(os.Stderr, "herald: %v\n\n%s", err, ops.ProvidersUsage)
			os.Exit(2)
		}
	case "send":
		err = runSend(ctx, os.Args[2:], os.Stdout, os.Stderr, defaultSendDeps())
		if errors.Is(err, errSendUsage) {
			fmt.Fprintf(os.Stderr, "herald: %v\n\n%s", err, sendUsage)
			os.Exit(2)
		}
	case "user", "notification":
		err = runHistoryMain(ctx, os.Args[1:])
		if errors.Is(err, errSendUsage) {
			fmt.Fprintf(os.Stderr, "herald: %v\n\n%s", err, historyUsage)
			os.Exit(2)
		}
	case "vapid-keys":
		err = runVAPIDKeys(os.Args[2:], os.Stdout, os.Stderr)
	case "capacity":
		err = runCapacity(os.Args[2:], os.Stdout, os.Stderr)
	case "migrate":
		err = runMigrateMain(ctx, os.Args[2:])
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "herald: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "herald:", err)
		var coded interface{ ExitCode() int }
		if errors.As(err, &coded) {
			os.Exit(coded.ExitCode())
		}
		os.Exit(1)
	}
}
