package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/ops"
)

func TestDevURLs(t *testing.T) {
	running := ops.LocalState{
		PID: os.Getpid(), APIURL: "http://127.0.0.1:3999", Region: "us-east-1",
		Endpoints: map[string]string{"SESV2": "http://127.0.0.1:4101", "DYNAMODB": "http://127.0.0.1:4102", "SQS": "http://127.0.0.1:4103"},
		Logs:      "/tmp/x/.herald/dev.log", DataDir: "/tmp/data",
	}
	gone := running
	gone.PID = 1 << 30 // no such process
	tests := []struct {
		name    string
		state   *ops.LocalState
		want    []string
		wantErr error
	}{
		{name: "running stack", state: &running, want: []string{
			"http://127.0.0.1:3999/_dev/token?sub=u1", "http://127.0.0.1:4101", "http://127.0.0.1:4102", "http://127.0.0.1:4103",
			"/tmp/x/.herald/dev.log", "state kept in    /tmp/data",
		}},
		{name: "stale state file", state: &gone, wantErr: errNoDev},
		{name: "no state file", wantErr: errNoDev},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			path := filepath.Join(root, ops.StateFile)
			if tc.state != nil {
				var err error
				if path, err = ops.WriteState(root, *tc.state); err != nil {
					t.Fatal(err)
				}
			}
			var out bytes.Buffer
			err := runDevURLs([]string{"-state", path}, &out)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

// herald dev recounts campaigns every 2 s unless told otherwise, and every
// variable of the README's table reaches its template parameter.
func TestDevOverrides(t *testing.T) {
	got := devOverrides(func(string) string { return "" })
	if got["CampaignReconcileDelay"] != "2s" {
		t.Fatalf("default CampaignReconcileDelay = %q, want 2s", got["CampaignReconcileDelay"])
	}
	env := map[string]string{"HERALD_CAMPAIGN_RECONCILE_DELAY": "10s", "HERALD_BACKOFF_BASE": "1s"}
	got = devOverrides(func(k string) string { return env[k] })
	if got["CampaignReconcileDelay"] != "10s" || got["BackoffBase"] != "1s" {
		t.Fatalf("overrides = %v", got)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for env := range devEnvOverrides {
		if !strings.Contains(string(readme), "`"+env+"`") {
			t.Errorf("README's environment of make dev lacks %s", env)
		}
	}
}

// TestDevLogKeepsThePreviousRun: a start keeps the last run's log as
// dev.log.1 instead of truncating it.
func TestDevLogKeepsThePreviousRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dev.log")
	for _, run := range []string{"first run\\n", "second run\\n", "third run\\n"} {
		f, err := openDevLog(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(run); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	cur, _ := os.ReadFile(path)
	prev, _ := os.ReadFile(path + ".1")
	if string(cur) != "third run\\n" || string(prev) != "second run\\n" {
		t.Fatalf("dev.log %q, dev.log.1 %q", cur, prev)
	}
}

// TestDataDirLockRefusesASecondDev: a second `herald dev` on the same
// HERALD_DEV_DATA is refused with the first one's pid and API address; the
// directory is free again once the first stops.
func TestDataDirLockRefusesASecondDev(t *testing.T) {
	dir := t.TempDir()
	release, err := lockDataDir(dir, "pid 111, API http://127.0.0.1:3000")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockDataDir(dir, "pid 222, API http://127.0.0.1:3001"); err == nil || !strings.Contains(err.Error(), "pid 111, API http://127.0.0.1:3000") {
		t.Fatalf("second lock: %v, want a refusal naming the first", err)
	}
	release()
	again, err := lockDataDir(dir, "pid 333, API http://127.0.0.1:3000")
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again()
}
