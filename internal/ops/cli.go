package ops

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heraldhq/herald/internal/dynamo"
)

// DLQUsage is the help of `herald dlq`.
const DLQUsage = `Usage:
  herald dlq list [--json]                          depth and oldest message age of every DLQ
  herald dlq show <queue> [--limit N] [--json]      the parked messages, left in place
  herald dlq redrive <queue> (--all | --id ID ...) [--rate N/s] [--dry-run] [--json]
                                                    back to the work queues, deliveries reset to queued
                                                    (relay: re-run the relay's planning;
                                                    release: back to the release queue, --id MESSAGE_ID;
                                                    campaign: steps back to the campaign queue unchanged,
                                                    --id MESSAGE_ID or CAMPAIGN_ID;
                                                    events: published on the event bus again,
                                                    --id MESSAGE_ID, EVENT_ID or NOTIFICATION_ID)
  herald dlq purge <queue> --yes                    delete every message of a DLQ
  herald dlq stuck [--json]                         deliveries planned, queued, sending or retrying
                                                    past their lease and backoff plus a grace
                                                    (work message lost), with their age; the
                                                    scheduler sends each again, or fails it lost
                                                    past its notification's expiry

<queue> is email, sms, push, relay, release, campaign, feedback, events or live (or the queue's name).
The feedback DLQ (SES events the feedback function failed on) is listed, shown
and purged, not redriven: replay its events as docs/runbook.md says. The live
DLQ (live inbox posts the poster could not decode) is listed, shown and purged:
its posts are stale once the cause is fixed.

Which deployment (every subcommand):
  --stack NAME     a CloudFormation stack's outputs (default $HERALD_STACK)
  --state FILE     a local stack's state file (default: .herald/dev.json above the
                   working directory, written by 'herald dev')
  without either: TABLE_NAME, EMAIL_HIGH_QUEUE_URL …, RELEASE_QUEUE_URL, CAMPAIGN_QUEUE_URL
  and EMAIL_DLQ_URL, SMS_DLQ_URL, PUSH_DLQ_URL, RELAY_DLQ_URL, RELEASE_DLQ_URL,
  CAMPAIGN_DLQ_URL, FEEDBACK_DLQ_URL (EVENTS_DLQ_URL, LIVE_DLQ_URL optional) from the
  environment, else the running 'make dev'.

'show' and 'list' receive messages and release them at once: the messages stay,
but each inspection adds one to their receive count. Output carries ids, states,
counts and error codes, never addresses, numbers or message text.
`

// CLI runs `herald dlq`.
type CLI struct {
	Stdout, Stderr io.Writer
	// Connect opens the selected deployment and describes it in a few words.
	Connect func(ctx context.Context, w Where) (*Operator, string, error)
}

// DefaultConnect resolves the deployment from flags and environment and
// connects with real AWS clients; the relay's logs (relay DLQ redrive) go to
// stderr.
func DefaultConnect(ctx context.Context, w Where) (*Operator, string, error) {
	cfg, t, desc, err := DefaultResolver().Resolve(ctx, w)
	if err != nil {
		return nil, "", err
	}
	op, err := Connect(cfg, t, slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	return op, desc, err
}

// errUsage marks a command-line mistake (exit status 2).
var errUsage = errors.New("usage")

// IsUsage reports whether err is a command-line mistake.
func IsUsage(err error) bool { return errors.Is(err, errUsage) }

func usageError(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, a...))
}

// Run runs one `herald dlq` subcommand.
func (c CLI) Run(ctx context.Context, args []string) error {
	err := c.run(ctx, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil // -h: the usage was printed
	}
	return err
}

func (c CLI) run(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(c.Stdout, DLQUsage)
		if len(args) == 0 {
			return usageError("missing subcommand")
		}
		return nil
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("dlq "+sub, flag.ContinueOnError)
	fs.SetOutput(c.Stderr)
	fs.Usage = func() { fmt.Fprint(c.Stderr, DLQUsage) }
	var w Where
	fs.StringVar(&w.Stack, "stack", "", "CloudFormation stack name")
	fs.StringVar(&w.State, "state", "", "local stack state file")
	asJSON := fs.Bool("json", false, "print JSON")
	switch sub {
	case "list":
		if _, err := parse(fs, args, 0); err != nil {
			return err
		}
		return c.list(ctx, w, *asJSON)
	case "show":
		limit := fs.Int("limit", 10, "most messages to show")
		pos, err := parse(fs, args, 1)
		if err != nil {
			return err
		}
		if *limit < 1 {
			return usageError("--limit must be at least 1")
		}
		return c.show(ctx, w, pos[0], *limit, *asJSON)
	case "redrive":
		var opts RedriveOptions
		fs.Var((*idList)(&opts.IDs), "id", "notification id to redrive, release DLQ: message id, campaign DLQ: message or campaign id (repeatable, or comma-separated)")
		fs.BoolVar(&opts.All, "all", false, "redrive every message")
		rate := fs.String("rate", "", "most messages per second, e.g. 10/s")
		fs.BoolVar(&opts.DryRun, "dry-run", false, "show what would happen, change nothing")
		pos, err := parse(fs, args, 1)
		if err != nil {
			return err
		}
		if opts.Rate, err = parseRate(*rate); err != nil {
			return err
		}
		return c.redrive(ctx, w, pos[0], opts, *asJSON)
	case "stuck":
		if _, err := parse(fs, args, 0); err != nil {
			return err
		}
		return c.stuck(ctx, w, *asJSON)
	case "purge":
		yes := fs.Bool("yes", false, "confirm: delete every message")
		pos, err := parse(fs, args, 1)
		if err != nil {
			return err
		}
		return c.purge(ctx, w, pos[0], *yes)
	}
	fmt.Fprint(c.Stderr, DLQUsage)
	return usageError("unknown subcommand %q", sub)
}

// parse parses flags placed before or after the positional arguments and
// requires exactly n of them.
func parse(fs *flag.FlagSet, args []string, n int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos, args = append(pos, args[0]), args[1:]
	}
	if len(pos) != n {
		if n == 0 {
			return nil, usageError("%s takes no arguments, got %s", fs.Name(), strings.Join(pos, " "))
		}
		return nil, usageError("%s takes a queue: email, sms, push, relay, release, campaign, feedback, events or live", fs.Name())
	}
	return pos, nil
}

type idList []string

func (l *idList) String() string { return strings.Join(*l, ",") }

func (l *idList) Set(v string) error {
	for _, id := range strings.Split(v, ",") {
		if id = strings.TrimSpace(id); id != "" {
			*l = append(*l, id)
		}
	}
	return nil
}

// parseRate reads "10", "10/s" or "0.5/s".
func parseRate(s string) (float64, error) {
	if s == "" {
		return 0, nil
	}
	r, err := strconv.ParseFloat(strings.TrimSuffix(s, "/s"), 64)
	if err != nil || r <= 0 {
		return 0, usageError("--rate %q: want messages per second, like 10/s", s)
	}
	return r, nil
}

func (c CLI) connect(ctx context.Context, w Where) (*Operator, error) {
	op, desc, err := c.Connect(ctx, w)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(c.Stderr, "herald dlq: %s\n", desc)
	return op, nil
}

func (c CLI) list(ctx context.Context, w Where, asJSON bool) error {
	op, err := c.connect(ctx, w)
	if err != nil {
		return err
	}
	qs, err := op.List(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(c.Stdout, qs)
	}
	tw := tabwriter.NewWriter(c.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCHANNEL\tDEPTH\tOLDEST\tQUEUE")
	for _, q := range qs {
		oldest := "-"
		if q.Depth > 0 {
			oldest = (time.Duration(q.OldestAgeSeconds) * time.Second).String()
			if q.Sampled {
				oldest = "≥" + oldest
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", q.Name, dash(q.Channel), q.Depth, oldest, q.Queue)
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (c CLI) show(ctx context.Context, w Where, queue string, limit int, asJSON bool) error {
	op, err := c.connect(ctx, w)
	if err != nil {
		return err
	}
	q, parked, err := op.Show(ctx, queue, limit)
	if errors.Is(err, ErrEmpty) {
		if asJSON {
			return writeJSON(c.Stdout, []Parked{})
		}
		fmt.Fprintln(c.Stdout, err)
		return nil
	}
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(c.Stdout, parked)
	}
	now := op.now()
	fmt.Fprintf(c.Stdout, "%s DLQ %s: %d message(s) shown, left in place\n", q.Name, q.QueueName(), len(parked))
	for _, p := range parked {
		fmt.Fprintln(c.Stdout)
		tw := tabwriter.NewWriter(c.Stdout, 0, 0, 2, ' ', 0)
		row := func(k, v string) {
			if v != "" {
				fmt.Fprintf(tw, "  %s\t%s\n", k, v)
			}
		}
		switch {
		case q.Name == ReleaseDLQName:
			fmt.Fprintf(tw, "message %s\n", p.MessageID)
			if p.Partition != nil {
				row("partition", fmt.Sprintf("%s (bucket %s, shard %d)", dynamo.DuePartitionKey(*p.Partition), p.Partition.Bucket.UTC().Format(time.RFC3339), p.Partition.Shard))
			}
			if p.StillDue != nil {
				row("still due", map[bool]string{true: "yes: redrive it (or wait for the next tick)", false: "no: a later tick released it (purge it)"}[*p.StillDue])
			}
		case q.Name == CampaignDLQName:
			fmt.Fprintf(tw, "message %s\n", p.MessageID)
			if c := p.Campaign; c != nil {
				row("campaign", c.CampaignID+" ("+dash(c.CampaignStatus)+")")
				row("step", strings.TrimSuffix(c.Kind+", "+c.Place(), ", "))
			}
		case q.Name == FeedbackDLQName:
			fmt.Fprintf(tw, "message %s\n", p.MessageID)
			if f := p.Feedback; f != nil {
				for _, ev := range f.Events {
					row("SES event", fmt.Sprintf("%s of SES message %s (SNS message %s)", dash(ev.EventType), dash(ev.SESMessageID), ev.SNSMessageID))
				}
				row("function error", f.ErrorCode)
			}
		case q.Name == LiveDLQName:
			fmt.Fprintf(tw, "message %s\n", p.MessageID)
			if l := p.Live; l != nil {
				row("asks", describeLive(*l))
			}
		case q.Name == EventsDLQName:
			fmt.Fprintf(tw, "message %s\n", p.MessageID)
			if e := p.Event; e != nil {
				row("event", e.EventID+" ("+e.DetailType+")")
				row("notification", e.NotificationID)
				row("campaign", e.CampaignID)
				row("state", strings.Trim(e.Channel+" "+e.Status, " "))
			}
		case q.Channel != "":
			fmt.Fprintf(tw, "notification %s\n", dash(p.NotificationID))
			row("message", p.MessageID)
			row("type", p.Type)
			row("channel", strings.TrimSuffix(p.Channel+" / "+p.Priority, " / "))
			if p.Status != "" {
				row("delivery now", strings.TrimSuffix(p.Status+": "+p.Reason, ": "))
				row("send attempts", fmt.Sprintf("%d (calls to the provider, recorded on the delivery)", p.Attempts))
			}
			row("last error", p.LastError)
			row("accepted", when(p.AcceptedAt, now))
		default:
			fmt.Fprintf(tw, "record %s\n", p.MessageID)
			row("condition", p.Condition)
			if b := p.Batch; b != nil {
				row("stream batch", fmt.Sprintf("shard %s, sequence numbers %s…%s (%d records)", b.ShardID, b.StartSequenceNumber, b.EndSequenceNumber, b.BatchSize))
			}
			row("notifications", strings.Join(p.NotificationIDs, ", "))
		}
		row("message receives", strconv.Itoa(p.Receives)+" (times a function received this SQS message before it was parked; not send attempts)")
		row("message enqueued", when(p.SentAt, now))
		row("first received", when(p.FirstReceivedAt, now))
		row("problem", p.Problem)
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// describeLive says what a live DLQ message asked the poster for.
func describeLive(l LiveMessage) string {
	switch l.Kind {
	case "close":
		if l.Evict {
			return fmt.Sprintf("evict and close a connection (%d calls made)", l.Attempts)
		}
		return fmt.Sprintf("close an evicted connection (%d calls made)", l.Attempts)
	case "broadcast":
		return fmt.Sprintf("post a broadcast page: announcement %s, shard %d", l.AnnouncementID, *l.Shard)
	}
	return fmt.Sprintf("post %d inbox changes (%s)", l.Events, strings.Join(l.Kinds, ", "))
}

func when(t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	return fmt.Sprintf("%s (%s ago)", t.UTC().Format(time.RFC3339), now.Sub(t).Round(time.Second))
}

var actionWords = map[Action][2]string{
	ActionRequeue: {"requeued", "would requeue"},
	ActionMove:    {"moved", "would move"},
	ActionLeave:   {"left", "would leave"},
	ActionReplan:  {"replanned", "would replan"},
	ActionRelease: {"released", "would release"},
	ActionResend:  {"resent", "would resend"},
}

func (c CLI) redrive(ctx context.Context, w Where, queue string, opts RedriveOptions, asJSON bool) error {
	op, err := c.connect(ctx, w)
	if err != nil {
		return err
	}
	if !asJSON {
		opts.OnItem = func(it RedriveItem) { c.printItem(it, opts.DryRun) }
		opts.OnTask = func(t MoveTask) {
			fmt.Fprintf(c.Stderr, "move task %s: %s, %d of %d moved\n", t.Handle, t.Status, t.Moved, t.ToMove)
		}
	}
	res, err := op.Redrive(ctx, queue, opts)
	if errors.Is(err, ErrEmpty) {
		fmt.Fprintln(c.Stdout, err)
		return nil
	}
	if asJSON {
		if jerr := writeJSON(c.Stdout, res); jerr != nil {
			return jerr
		}
	} else if len(res.Items) > 0 || res.Task != nil {
		verb := 0
		if res.DryRun {
			verb = 1
		}
		var parts []string
		for _, a := range []Action{ActionRequeue, ActionMove, ActionReplan, ActionRelease, ActionResend, ActionLeave} {
			if n := res.Count(a); n > 0 || (a == ActionRequeue && res.Queue.Name != ReleaseDLQName && res.Queue.Name != CampaignDLQName && res.Queue.Name != EventsDLQName) || (a == ActionResend && (res.Queue.Name == CampaignDLQName || res.Queue.Name == EventsDLQName)) {
				parts = append(parts, fmt.Sprintf("%d %s", n, actionWords[a][verb]))
			}
		}
		fmt.Fprintf(c.Stdout, "%s DLQ: %s\n", res.Queue.Name, strings.Join(parts, ", "))
	}
	if err != nil {
		return err
	}
	if failed := res.Failed(); len(failed) > 0 {
		return fmt.Errorf("%d message(s) could not be redriven (see above); they are still in the DLQ", len(failed))
	}
	if res.Unseen > 0 {
		return fmt.Errorf("about %d message(s) of the DLQ were not looked at: another reader held them for longer than %s (a `herald dlq show`, a console); run the redrive again", res.Unseen, op.hold())
	}
	return nil
}

func (c CLI) printItem(it RedriveItem, dry bool) {
	verb := actionWords[it.Action][0]
	if dry {
		verb = actionWords[it.Action][1]
	}
	if it.Error != "" {
		verb = "FAILED " + string(it.Action)
	}
	subject := it.NotificationID
	if len(it.NotificationIDs) > 0 {
		subject = strings.Join(it.NotificationIDs, ",")
	}
	if subject == "" && it.Partition != "" {
		subject = "message " + it.MessageID + "  " + it.Partition
	}
	if c := it.Campaign; subject == "" && c != nil {
		subject = "message " + it.MessageID + "  campaign " + c.CampaignID + " " + strings.TrimSuffix(c.Kind+", "+c.Place(), ", ")
	}
	if subject == "" {
		subject = "message " + it.MessageID
	}
	where := strings.TrimSuffix(it.Channel+"/"+it.Priority, "/")
	line := fmt.Sprintf("%-13s %s", verb, subject)
	if where != "" {
		line += "  " + where
	}
	if it.Note != "" {
		line += "  " + it.Note
	}
	if it.Error != "" {
		line += "  error: " + it.Error
	}
	fmt.Fprintln(c.Stdout, line)
}

func (c CLI) purge(ctx context.Context, w Where, queue string, yes bool) error {
	if !yes {
		return usageError("purge deletes every message of the %s DLQ for good: read them first with 'herald dlq show %s', then add --yes", queue, queue)
	}
	op, err := c.connect(ctx, w)
	if err != nil {
		return err
	}
	q, n, err := op.Purge(ctx, queue)
	if errors.Is(err, ErrEmpty) {
		fmt.Fprintln(c.Stdout, err)
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(c.Stdout, "purged the %s DLQ (%s): about %d message(s) deleted\n", q.Name, q.QueueName(), n)
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
