package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/ops"
)

// devEnvOverrides maps dev-runner environment variables to template parameters.
var devEnvOverrides = map[string]string{
	"HERALD_MAX_RECEIVE_COUNT": "MaxReceiveCount",
	"HERALD_BACKOFF_BASE":      "BackoffBase",
	"HERALD_BACKOFF_CAP":       "BackoffCap",
	"HERALD_EMAIL_SEND_RATE":   "EmailSendRate",
	"HERALD_SMS_SEND_RATE":     "SmsSendRate",
	"HERALD_PUSH_SEND_RATE":    "PushSendRate",
	"HERALD_BULK_QUOTA_SHARE":  "BulkQuotaShare",
	// Campaign lots recount every 30 s in AWS; a local campaign shows done
	// within seconds instead (devDefaults).
	"HERALD_CAMPAIGN_RECONCILE_DELAY": "CampaignReconcileDelay",
	// The campaign fan-out's write budget (notifications/s; default 0: unpaced).
	"HERALD_CAMPAIGN_FANOUT_RATE": "CampaignFanOutRate",
	// The scheduler's release budget (deliveries/s; default 0: 800 per due partition).
	"HERALD_RELEASE_RATE": "SchedulerReleaseRate",
	// Origins (comma-separated) whose pages may call the API from a browser;
	// the console's own origin is always added.
	"HERALD_CORS_ORIGINS": "CorsAllowedOrigins",
	// Which delivery events are published (none, failures, all); locally all,
	// so the console lists them (devDefaults).
	"HERALD_DELIVERY_EVENTS": "DeliveryEvents",
	// Hosts a notification's links may point at (comma-separated; empty:
	// any host, https only).
	"HERALD_LINK_HOSTS": "LinkHosts",
}

// devDefaults are the template parameters herald dev sets differently from
// the template's defaults when the matching variable is unset: a short
// campaign recount, so a local campaign reaches done in seconds, and every
// delivery event published.
var devDefaults = map[string]string{
	"CampaignReconcileDelay": "2s",
	"DeliveryEvents":         "all",
}

// devOverrides returns the template parameters herald dev runs with: the
// variables of devEnvOverrides that are set, else devDefaults.
func devOverrides(getenv func(string) string) map[string]string {
	overrides := map[string]string{}
	for param, v := range devDefaults {
		overrides[param] = v
	}
	for env, param := range devEnvOverrides {
		if v := getenv(env); v != "" {
			overrides[param] = v
		}
	}
	return overrides
}

// devLogFile holds the functions' and emulators' logs unless `herald dev -v`.
const devLogFile = ".herald/dev.log"

func runDev(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "urls" {
		return runDevURLs(args[1:], os.Stdout)
	}
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage:\n  herald dev [-v] [-root DIR]   run the whole system locally\n  herald dev urls [-state FILE]  print the URLs of the running `herald dev`\n\nFlags of herald dev:\n")
		fs.PrintDefaults()
	}
	root := fs.String("root", ".", "repository root (template.yaml, infra/local)")
	verbose := fs.Bool("v", false, "print the functions' and emulators' logs here instead of in "+devLogFile)
	if err := fs.Parse(args); err != nil {
		return err
	}
	port := os.Getenv("HERALD_API_PORT")
	if port == "" {
		port = "3000"
	}
	overrides := devOverrides(os.Getenv)
	var interval time.Duration // the schedule rule's rate in the template
	if v := os.Getenv("HERALD_SCHEDULE_INTERVAL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("HERALD_SCHEDULE_INTERVAL %q: want a positive Go duration", v)
		}
		interval = d
	}
	lowPollers := 0 // the template's LowMaximumConcurrency
	if v := os.Getenv("HERALD_LOW_POLLERS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("HERALD_LOW_POLLERS %q: want a positive number of pollers", v)
		}
		lowPollers = n
	}
	dataDir := os.Getenv("HERALD_DEV_DATA")
	if dataDir != "" {
		abs, err := filepath.Abs(dataDir)
		if err != nil {
			return fmt.Errorf("HERALD_DEV_DATA: %w", err)
		}
		dataDir = abs
		release, err := lockDataDir(dataDir, fmt.Sprintf("pid %d, API http://127.0.0.1:%s", os.Getpid(), port))
		if err != nil {
			return err
		}
		defer release()
	}
	var logs, emuLogs io.Writer = os.Stdout, os.Stderr
	logPath := ""
	if !*verbose {
		logPath = filepath.Join(*root, devLogFile)
		if abs, err := filepath.Abs(logPath); err == nil {
			logPath = abs
		}
		if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
			return err
		}
		f, err := openDevLog(logPath)
		if err != nil {
			return fmt.Errorf("log file: %w", err)
		}
		defer f.Close()
		logs, emuLogs = f, f
	}
	fmt.Fprintln(os.Stderr, "herald dev: starting emulators and functions…")
	if logPath != "" {
		fmt.Fprintf(os.Stderr, "herald dev: function and emulator logs go to %s (herald dev -v prints them here)\n", logPath)
	}
	if dataDir != "" {
		fmt.Fprintf(os.Stderr, "herald dev: state is kept in %s (HERALD_DEV_DATA)\n", dataDir)
	} else {
		fmt.Fprintln(os.Stderr, "herald dev: state is in memory: every notification, queue and DLQ message is lost when this stops (set HERALD_DEV_DATA=DIR to keep it)")
	}
	st, err := devstack.Start(ctx, devstack.Config{
		Root: *root, APIAddr: "127.0.0.1:" + port, Overrides: overrides, ScheduleInterval: interval,
		Logs: logs, EmulatorLogs: emuLogs, DataDir: dataDir, LowPollers: lowPollers,
	})
	if err != nil {
		return err
	}
	defer st.Stop()
	state := st.LocalState()
	state.Logs = logPath
	statePath, err := ops.WriteState(*root, state)
	if err != nil {
		return err
	}
	defer os.Remove(statePath)
	fmt.Fprintln(os.Stderr, "herald dev: ready")
	printURLs(os.Stderr, state, statePath)
	fmt.Fprintln(os.Stderr, "Press Ctrl-C to stop; `herald dev urls` prints these again.")
	select {
	case <-ctx.Done():
		fmt.Fprintln(os.Stderr, "herald dev: stopping…")
		return nil
	case <-st.Done():
		return st.Err()
	}
}

// printURLs prints where a running stack's parts are.
func printURLs(w io.Writer, st ops.LocalState, statePath string) {
	api := st.APIURL
	fmt.Fprintf(w, `  dev console      %[1]s/_dev/   (demo inbox: %[1]s/_dev/?user=u1)
  API              %[1]s   (service routes: header %[2]s: <caller>, default "dev")
  live inbox       %[7]s?token=<user token>   (WebSocket; both URLs: %[1]s/_dev/urls)
  user token       %[1]s/_dev/token?sub=u1
  sent email       %[3]s   (SES emulator UI; JSON at %[1]s/_dev/emails)
  queues           %[1]s/_dev/queues
  SMS / Web Push   %[1]s/_dev/sms   %[1]s/_dev/push   (POST %[1]s/_dev/push-subscriptions)
  faults           POST %[1]s/_dev/faults {"channel":"email","mode":"transient","times":2}
  IAM              %[1]s/_dev/iam   (each function's calls checked against its role in template.yaml)
  SES events       POST %[1]s/_dev/ses-events (an SES Delivery/Bounce/Complaint event)
  health           %[1]s/_dev/health
  DynamoDB Local   %[4]s
  SQS (fauxqs)     %[5]s
  DLQs             herald dlq list   (state for the CLI: %[6]s)
`, api, devstack.DevCallerHeader, st.Endpoints["SESV2"], st.Endpoints["DYNAMODB"], st.Endpoints["SQS"], statePath, st.WebSocketURL)
	if st.Logs != "" {
		fmt.Fprintf(w, "  logs             %s\n", st.Logs)
	}
	if st.DataDir != "" {
		fmt.Fprintf(w, "  state kept in    %s\n", st.DataDir)
	} else {
		fmt.Fprintln(w, "  state            in memory (lost when herald dev stops)")
	}
}

// errNoDev is `herald dev urls` without a running `herald dev`.
var errNoDev = errors.New("no running `herald dev` found (start it with `make dev`)")

// runDevURLs prints the URLs of the running `herald dev` from its state file.
func runDevURLs(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("dev urls", flag.ContinueOnError)
	statePath := fs.String("state", "", "the state file of `herald dev` (default: .herald/dev.json above the working directory)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	path := *statePath
	if path == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		var found bool
		if path, found = ops.FindState(wd); !found {
			return errNoDev
		}
	}
	st, err := ops.ReadState(path)
	if errors.Is(err, iofs.ErrNotExist) {
		return fmt.Errorf("%w: no %s", errNoDev, path)
	}
	if err != nil {
		return err
	}
	if st.PID <= 0 || syscall.Kill(st.PID, 0) != nil {
		return fmt.Errorf("%w: %s names pid %d, which is not running", errNoDev, path, st.PID)
	}
	printURLs(w, st, path)
	return nil
}

// openDevLog starts a fresh log at path and keeps the previous run's (a
// crashed run's log is what one needs next) as path.1, replacing the one
// before it.
func openDevLog(path string) (*os.File, error) {
	if _, err := os.Stat(path); err == nil {
		if err := os.Rename(path, path+".1"); err != nil {
			return nil, err
		}
	}
	return os.Create(path)
}
