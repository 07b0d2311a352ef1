package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/ops"
)

const sendUsage = `Usage:
  herald send --type TYPE --user USER [--email ADDR] [--phone +E164] [--locale L]
              [--data key=value ...] [--priority high|normal|low] [--channel email ...]
              [--idempotency-key KEY] [--resource-id ID] [--send-at RFC3339]
              [--wait] [--json] [where]
  herald send --type TYPE --topic TOPIC [--exclude USER,USER ...]
              [--data key=value ...] [--priority normal|low] [--channel email ...]
              [--idempotency-key KEY] [--wait] [--json] [where]

Where (first match wins):
  --stack NAME       a deployed stack: its ApiUrl output, signed with SigV4 using the
                     AWS SDK's credentials chain (default $HERALD_STACK)
  --endpoint URL     an API URL, signed with SigV4 (or --caller for a local stack)
  otherwise          the running 'make dev' (.herald/dev.json above the working
                     directory), calling as --caller (default "cli")

Prints the notification id; --wait follows its deliveries until they settle
(up to 60 s). With --topic every subscriber of the topic but the excluded
users gets the notification: it prints the send's id (a campaign: GET
/v1/campaigns/{id} counts it, DELETE cancels it), and --wait follows its
counts until the fan-out finishes.

Exit status:
  0  accepted; with --wait, every delivery settled and none failed
     (sent, delivered, skipped, dropped, or deferred to a later time)
  1  not sent: the API refused it or could not be reached
  2  usage: a flag is wrong
  3  --wait: a delivery ended failed or bounced (a topic: a recipient failed)
  4  --wait: the deliveries had not settled after 60 s (a topic: not finished)
`

// Exit statuses of herald send --wait beyond 0, 1 (error) and 2 (usage).
const (
	exitDeliveryFailed = 3
	exitWaitTimeout    = 4
)

// exitError carries the exit status of a command whose output was printed.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// ExitCode is the process exit status.
func (e *exitError) ExitCode() int { return e.code }

// sendDeps are what `herald send` reaches outside the process; tests replace them.
type sendDeps struct {
	getenv     func(string) string
	getwd      func() (string, error)
	alive      func(pid int) bool
	loadConfig func(context.Context) (aws.Config, error)
	stacks     func(aws.Config) ops.StacksAPI
	clientOpts []client.Option
	poll       time.Duration
	waitFor    time.Duration // how long --wait follows the deliveries
}

func defaultSendDeps() sendDeps {
	return sendDeps{
		getenv: os.Getenv, getwd: os.Getwd,
		alive: func(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil },
		loadConfig: func(ctx context.Context) (aws.Config, error) {
			wd, err := os.Getwd()
			if err != nil {
				return aws.Config{}, err
			}
			return ops.LoadAWSConfig(ctx, wd)
		},
		stacks:  func(cfg aws.Config) ops.StacksAPI { return cloudformation.NewFromConfig(cfg) },
		poll:    500 * time.Millisecond,
		waitFor: 60 * time.Second,
	}
}

// errSendUsage marks a command-line mistake (exit status 2).
var errSendUsage = errors.New("usage")

func sendUsageError(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errSendUsage, fmt.Sprintf(format, a...))
}

// repeated collects a repeatable flag.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

func runSend(ctx context.Context, args []string, stdout, stderr io.Writer, d sendDeps) error {
	fs := flag.NewFlagSet("send", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, sendUsage) }
	var n client.Notification
	var data, channels, exclude repeated
	var sendAt, topic, stack, endpoint, caller string
	var wait, asJSON bool
	fs.StringVar(&n.Type, "type", "", "notification type")
	fs.StringVar(&n.Recipient.UserID, "user", "", "recipient user id")
	fs.StringVar(&topic, "topic", "", "notify every subscriber of this topic (instead of --user)")
	fs.Var(&exclude, "exclude", "with --topic: leave out these users (comma-separated, repeatable)")
	fs.StringVar(&n.Recipient.Email, "email", "", "recipient email (overrides the profile)")
	fs.StringVar(&n.Recipient.Phone, "phone", "", "recipient phone, E.164 (overrides the profile)")
	fs.StringVar(&n.Recipient.Locale, "locale", "", "recipient locale (overrides the profile)")
	fs.Var(&data, "data", "template variable key=value (repeatable)")
	fs.Var(&channels, "channel", "deliver only on this channel (repeatable)")
	fs.StringVar(&n.Priority, "priority", "", "high, normal or low")
	fs.StringVar(&n.IdempotencyKey, "idempotency-key", "", "Idempotency-Key (generated when empty and no --resource-id)")
	fs.StringVar(&n.ResourceID, "resource-id", "", "deduplicate on (user, type, resource id)")
	fs.StringVar(&n.BatchKey, "batch-key", "", "digest batch key")
	fs.StringVar(&sendAt, "send-at", "", "not before this time (RFC 3339)")
	fs.StringVar(&stack, "stack", "", "CloudFormation stack name (default $HERALD_STACK)")
	fs.StringVar(&endpoint, "endpoint", "", "API URL")
	fs.StringVar(&caller, "caller", "", `local stack caller (X-Herald-Dev-Caller; default "cli")`)
	fs.BoolVar(&wait, "wait", false, "follow the deliveries until they settle")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return fmt.Errorf("%w: %v", errSendUsage, err)
	}
	if fs.NArg() > 0 {
		return sendUsageError("unexpected argument %q", fs.Arg(0))
	}
	if n.Type == "" || (n.Recipient.UserID == "") == (topic == "") {
		return sendUsageError("--type and one of --user or --topic are required")
	}
	if topic == "" && len(exclude) > 0 {
		return sendUsageError("--exclude goes with --topic")
	}
	if topic != "" && (n.Recipient.Email != "" || n.Recipient.Phone != "" || n.Recipient.Locale != "" || n.ResourceID != "" || n.BatchKey != "" || sendAt != "") {
		return sendUsageError("--topic takes no --email, --phone, --locale, --resource-id, --batch-key or --send-at: each subscriber gets their own")
	}
	for _, kv := range data {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return sendUsageError("--data %q: want key=value", kv)
		}
		if n.Data == nil {
			n.Data = map[string]string{}
		}
		n.Data[k] = v
	}
	n.Channels = channels
	if sendAt != "" {
		t, err := time.Parse(time.RFC3339, sendAt)
		if err != nil {
			return sendUsageError("--send-at %q: want RFC 3339, like 2026-01-02T15:04:05Z", sendAt)
		}
		n.SendAt = &t
	}
	c, where, err := sendTarget(ctx, d, stack, endpoint, caller)
	if err != nil {
		return err
	}
	if topic != "" {
		tn := client.TopicNotification{Type: n.Type, Topic: topic, Data: n.Data, Priority: n.Priority, Channels: n.Channels, IdempotencyKey: n.IdempotencyKey}
		for _, e := range exclude {
			for u := range strings.SplitSeq(e, ",") {
				if u = strings.TrimSpace(u); u != "" {
					tn.Exclude = append(tn.Exclude, u)
				}
			}
		}
		return sendTopic(ctx, c, where, tn, wait, asJSON, stdout, stderr, d)
	}
	a, err := c.Send(ctx, n)
	if err != nil {
		return sendError(where, err)
	}
	if !wait {
		return printAccepted(stdout, stderr, asJSON, map[string]any{"id": a.ID, "status": a.Status, "createdAt": a.CreatedAt},
			a.ID+" "+a.Status, where, a.IdempotencyKey, a.Replayed)
	}
	st, done, err := waitSettled(ctx, c, a.ID, d.poll, d.waitFor)
	if err != nil {
		return err
	}
	chans := make([]string, 0, len(st.Deliveries))
	var failed []string
	for ch, dl := range st.Deliveries {
		chans = append(chans, ch)
		if dl.Status == "failed" || dl.Status == "bounced" {
			failed = append(failed, ch+" "+dl.Status)
		}
	}
	sort.Strings(chans)
	sort.Strings(failed)
	if asJSON {
		if err := json.NewEncoder(stdout).Encode(st); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "%s %s\n", st.ID, st.Status)
		for _, ch := range chans {
			dl := st.Deliveries[ch]
			fmt.Fprintf(stdout, "  %-6s %-10s %s\n", ch, dl.Status, dl.Reason)
		}
	}
	switch {
	case len(failed) > 0:
		return &exitError{exitDeliveryFailed, "delivery ended " + strings.Join(failed, ", ")}
	case !done:
		return &exitError{exitWaitTimeout, fmt.Sprintf("deliveries not settled after %s (herald send prints the last state)", d.waitFor)}
	}
	return nil
}

// sendError names the API's problem (status, code, pointer, detail).
func sendError(where string, err error) error {
	var herr *client.Error
	if errors.As(err, &herr) {
		at := ""
		if herr.Pointer != "" {
			at = " at " + herr.Pointer
		}
		return fmt.Errorf("%s answered %d %s%s: %s", where, herr.Status, herr.Code, at, herr.Detail)
	}
	return fmt.Errorf("send to %s: %w", where, err)
}

// printAccepted prints an accepted send: fields with its key and replay as
// JSON, or line on stdout and where it went with its key on stderr.
func printAccepted(stdout, stderr io.Writer, asJSON bool, fields map[string]any, line, where, key string, replayed bool) error {
	if asJSON {
		fields["idempotencyKey"], fields["replayed"] = key, replayed
		return json.NewEncoder(stdout).Encode(fields)
	}
	if replayed {
		line += " (replayed: an earlier request with this key made it)"
	}
	fmt.Fprintln(stdout, line)
	fmt.Fprintf(stderr, "sent to %s; Idempotency-Key %s\n", where, key)
	return nil
}

// sendTopic notifies a topic's subscribers and prints the send's id; with
// wait it follows the fan-out's counts (GET /v1/campaigns/{id}) until it
// finishes.
func sendTopic(ctx context.Context, c *client.Client, where string, n client.TopicNotification, wait, asJSON bool, stdout, stderr io.Writer, d sendDeps) error {
	a, err := c.NotifyTopic(ctx, n)
	if err != nil {
		return sendError(where, err)
	}
	if !wait {
		return printAccepted(stdout, stderr, asJSON, map[string]any{"id": a.ID, "topic": a.Topic, "recipients": a.Recipients},
			a.ID+" topic "+a.Topic+" recipients "+a.Recipients, where, a.IdempotencyKey, a.Replayed)
	}
	deadline := time.Now().Add(d.waitFor)
	var st *client.CampaignStatus
	for {
		if st, err = c.GetCampaign(ctx, a.ID); err != nil {
			return sendError(where, err)
		}
		if st.FinishedAt != nil || !time.Now().Add(d.poll).Before(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d.poll):
		}
	}
	if asJSON {
		if err := json.NewEncoder(stdout).Encode(st); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "%s %s: %d recipients, %d sent, %d skipped, %d failed, %d dropped\n",
			st.ID, st.Status, st.Recipients, st.Sent, st.Skipped, st.Failed, st.Dropped)
	}
	switch {
	case st.Failed > 0:
		return &exitError{exitDeliveryFailed, fmt.Sprintf("%d recipients failed", st.Failed)}
	case st.FinishedAt == nil:
		return &exitError{exitWaitTimeout, fmt.Sprintf("the topic send had not finished after %s (herald send prints its last counts)", d.waitFor)}
	}
	return nil
}

// settled delivery states: nothing more happens without a new event.
var settled = map[string]bool{"sent": true, "delivered": true, "bounced": true, "complained": true,
	"skipped": true, "dropped": true, "failed": true, "deferred": true}

// waitSettled polls the notification until the relay planned it and every
// delivery settled (done), or timeout passes (then it answers the last state
// and done false).
func waitSettled(ctx context.Context, c *client.Client, id string, every, timeout time.Duration) (*client.NotificationStatus, bool, error) {
	deadline := time.Now().Add(timeout)
	for {
		st, err := c.GetNotification(ctx, id)
		if err != nil {
			return nil, false, err
		}
		done := len(st.Deliveries) > 0 || st.Status == "cancelled"
		for _, dl := range st.Deliveries {
			done = done && settled[dl.Status]
		}
		if done {
			return st, true, nil
		}
		if !time.Now().Add(every).Before(deadline) {
			return st, false, nil
		}
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-time.After(every):
		}
	}
}

// errNoSendTarget: no flag, variable or running local stack names an API.
var errNoSendTarget = errors.New("no Herald API selected: pass --stack NAME (or set HERALD_STACK) or --endpoint URL, or start the local stack with `make dev`")

// sendTarget builds the client for the selected deployment and says which it is.
func sendTarget(ctx context.Context, d sendDeps, stack, endpoint, caller string) (*client.Client, string, error) {
	if stack == "" && endpoint == "" {
		stack = d.getenv("HERALD_STACK")
	}
	opts := append([]client.Option{client.WithUserAgent("herald-cli")}, d.clientOpts...)
	if stack != "" || (endpoint != "" && caller == "") {
		cfg, err := d.loadConfig(ctx)
		if err != nil {
			return nil, "", fmt.Errorf("AWS configuration: %w", err)
		}
		where := endpoint
		if stack != "" {
			out, err := d.stacks(cfg).DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
			if err != nil {
				return nil, "", fmt.Errorf("stack %s in %s: %w", stack, cfg.Region, err)
			}
			if len(out.Stacks) == 0 {
				return nil, "", fmt.Errorf("stack %s not found in %s", stack, cfg.Region)
			}
			for _, o := range out.Stacks[0].Outputs {
				if aws.ToString(o.OutputKey) == "ApiUrl" {
					endpoint = aws.ToString(o.OutputValue)
				}
			}
			if endpoint == "" {
				return nil, "", fmt.Errorf("stack %s has no ApiUrl output", stack)
			}
			where = "stack " + stack + " (" + endpoint + ")"
		}
		c, err := client.New(endpoint, append(opts, client.WithAWSConfig(cfg))...)
		return c, where, err
	}
	if caller == "" {
		caller = "cli"
	}
	if endpoint != "" {
		c, err := client.New(endpoint, append(opts, client.WithDevCaller(caller))...)
		return c, endpoint, err
	}
	wd, err := d.getwd()
	if err != nil {
		return nil, "", err
	}
	path, found := ops.FindState(wd)
	if !found {
		return nil, "", errNoSendTarget
	}
	st, err := ops.ReadState(path)
	if err != nil {
		return nil, "", err
	}
	if !d.alive(st.PID) {
		return nil, "", fmt.Errorf("%w %s: `herald dev` (pid %d) is not running; start it with `make dev` or delete the file", ops.ErrStaleState, path, st.PID)
	}
	c, err := client.New(st.APIURL, append(opts, client.WithDevCaller(caller))...)
	return c, "local stack " + st.APIURL, err
}
