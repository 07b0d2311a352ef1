package ops

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heraldhq/herald/internal/failover"
)

// BreakerAdmin is what herald providers reads and forces (dynamo.Breakers).
type BreakerAdmin interface {
	Breakers(ctx context.Context) ([]failover.Breaker, error)
	Force(ctx context.Context, provider string, f failover.Force) (failover.Breaker, error)
}

// ProvidersUsage is herald providers' help.
const ProvidersUsage = `usage: herald providers [--stack NAME | --state FILE] [list]
       herald providers [--stack NAME | --state FILE] force PROVIDER open|closed|auto

list   each provider's circuit breaker (ses:<region>, sns, sms-voice): its state,
       failures in the current window, when it opened, until when, any force
force  an operator's override: open sends everything to the failover provider,
       closed keeps the primary whatever fails, auto gives the breaker back
`

// ParseProvidersArgs reads herald providers' flags; the rest are the
// subcommand and its arguments.
func ParseProvidersArgs(args []string, stderr io.Writer) (Where, []string, error) {
	fs := flag.NewFlagSet("providers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var w Where
	fs.StringVar(&w.Stack, "stack", "", "CloudFormation stack name")
	fs.StringVar(&w.State, "state", "", "local stack state file (herald dev)")
	if err := fs.Parse(args); err != nil {
		return w, nil, usageError("%v", err)
	}
	return w, fs.Args(), nil
}

// Providers runs herald providers' subcommand on b at now.
func Providers(ctx context.Context, out io.Writer, b BreakerAdmin, now time.Time, args []string) error {
	if len(args) == 0 || args[0] == "list" {
		list, err := b.Breakers(ctx)
		if err != nil {
			return err
		}
		slices.SortFunc(list, func(a, b failover.Breaker) int { return strings.Compare(a.Provider, b.Provider) })
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PROVIDER\tSTATE\tFAILURES\tOPENED\tOPEN UNTIL\tFORCED")
		for _, br := range list {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", br.Provider, br.State(now), br.Failures, stampOrDash(br.OpenedAt), stampOrDash(br.OpenUntil), orDash(string(br.Forced)))
		}
		if len(list) == 0 {
			fmt.Fprintln(tw, "(no breaker has recorded a failure: every provider is closed)")
		}
		return tw.Flush()
	}
	if args[0] != "force" || len(args) != 3 {
		return usageError("%s", strings.TrimSpace(ProvidersUsage))
	}
	f, err := failover.ParseForce(args[2])
	if err != nil {
		return usageError("%v", err)
	}
	br, err := b.Force(ctx, args[1], f)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: %s (forced: %s); workers see it within %s\n", br.Provider, br.State(now), orDash(string(br.Forced)), failover.DefaultRules.Refresh)
	return nil
}

func stampOrDash(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
