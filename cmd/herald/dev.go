package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/ops"
)

// devEnvOverrides maps dev-runner environment variables to template parameters.
var devEnvOverrides = map[string]string{
	"HERALD_MAX_RECEIVE_COUNT": "MaxReceiveCount",
	"HERALD_BACKOFF_BASE":      "BackoffBase",
	"HERALD_BACKOFF_CAP":       "BackoffCap",
}

func runDev(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	root := fs.String("root", ".", "repository root (template.yaml, infra/local)")
	verbose := fs.Bool("v", false, "print emulator output too")
	if err := fs.Parse(args); err != nil {
		return err
	}
	port := os.Getenv("HERALD_API_PORT")
	if port == "" {
		port = "3000"
	}
	overrides := map[string]string{}
	for env, param := range devEnvOverrides {
		if v := os.Getenv(env); v != "" {
			overrides[param] = v
		}
	}
	interval := time.Minute
	if v := os.Getenv("HERALD_SCHEDULE_INTERVAL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("HERALD_SCHEDULE_INTERVAL %q: want a positive Go duration", v)
		}
		interval = d
	}
	var emuLogs io.Writer
	if *verbose {
		emuLogs = os.Stderr
	}
	fmt.Fprintln(os.Stderr, "herald dev: starting emulators and functions…")
	st, err := devstack.Start(ctx, devstack.Config{
		Root: *root, APIAddr: "127.0.0.1:" + port, Overrides: overrides, ScheduleInterval: interval,
		Logs: os.Stdout, EmulatorLogs: emuLogs,
	})
	if err != nil {
		return err
	}
	defer st.Stop()
	statePath, err := ops.WriteState(*root, st.LocalState())
	if err != nil {
		return err
	}
	defer os.Remove(statePath)
	fmt.Fprintf(os.Stderr, `herald dev: ready
  dev console      %[1]s/_dev/   (demo inbox: %[1]s/_dev/?user=u1)
  API              %[1]s   (service routes: header %[2]s: <caller>, default "dev")
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
Press Ctrl-C to stop.
`, st.APIURL, devstack.DevCallerHeader, st.Emulators.SES, st.Emulators.DynamoDB, st.Emulators.SQS, statePath)
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "herald dev: stopping…")
	return nil
}
