package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/heraldhq/herald/internal/ops"
)

type fakeStacks struct{ outputs map[string]string }

func (f fakeStacks) DescribeStacks(_ context.Context, in *cloudformation.DescribeStacksInput, _ ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error) {
	if aws.ToString(in.StackName) != "herald-prod" {
		return nil, errors.New("stack does not exist")
	}
	var outs []cfntypes.Output
	for k, v := range f.outputs {
		outs = append(outs, cfntypes.Output{OutputKey: aws.String(k), OutputValue: aws.String(v)})
	}
	return &cloudformation.DescribeStacksOutput{Stacks: []cfntypes.Stack{{Outputs: outs}}}, nil
}

var _ ops.StacksAPI = fakeStacks{}

type seen struct {
	method, path string
	header       http.Header
	body         map[string]any
}

// fakeAPI accepts notifications and answers their status as sent.
func fakeAPI(t *testing.T) (*httptest.Server, func() []seen) {
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		s := seen{method: r.Method, path: r.URL.Path, header: r.Header.Clone()}
		_ = json.Unmarshal(raw, &s.body)
		mu.Lock()
		got = append(got, s)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusAccepted)
			io.WriteString(w, `{"id":"n1","status":"accepted","createdAt":"2026-01-02T03:04:05Z"}`)
			return
		}
		io.WriteString(w, `{"id":"n1","status":"accepted","deliveries":{"email":{"status":"sent","reason":null,"attempts":1,"updatedAt":"2026-01-02T03:04:06Z","dueAt":null},"push":{"status":"skipped","reason":"no_contact","attempts":0,"updatedAt":"2026-01-02T03:04:06Z","dueAt":null}}}`)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []seen { mu.Lock(); defer mu.Unlock(); return append([]seen(nil), got...) }
}

func TestSend(t *testing.T) {
	// One stand-in per target, so each case proves which one it selected.
	srv, localRequests := fakeAPI(t)
	stackSrv, stackRequests := fakeAPI(t)
	endpointSrv, endpointRequests := fakeAPI(t)
	targets := map[string]func() []seen{"local": localRequests, "stack": stackRequests, "endpoint": endpointRequests}
	withState := t.TempDir()
	if _, err := ops.WriteState(withState, ops.LocalState{PID: os.Getpid(), APIURL: srv.URL}); err != nil {
		t.Fatal(err)
	}
	staleState := t.TempDir()
	if _, err := ops.WriteState(staleState, ops.LocalState{PID: 0, APIURL: srv.URL}); err != nil {
		t.Fatal(err)
	}
	deps := func(wd string, env map[string]string) sendDeps {
		d := defaultSendDeps()
		d.getenv = func(k string) string { return env[k] }
		d.getwd = func() (string, error) { return filepath.Join(wd, "sub"), nil }
		d.loadConfig = func(context.Context) (aws.Config, error) {
			return aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")}, nil
		}
		d.stacks = func(aws.Config) ops.StacksAPI {
			return fakeStacks{outputs: map[string]string{"ApiUrl": stackSrv.URL, "TableName": "t"}}
		}
		d.poll = time.Millisecond
		return d
	}
	base := []string{"--type", "invoice.payment_failed", "--user", "u1", "--email", "u1@example.com", "--data", "invoiceUrl=https://example.com/i?a=b"}
	tests := []struct {
		name      string
		args      []string
		wd        string
		env       map[string]string
		wantErr   error
		errPart   string
		signed    bool
		caller    string
		outPart   string
		noRequest bool
		target    string // "local" (default), "stack" or "endpoint": the stand-in that must receive the request
	}{
		{name: "local stack from the state file", args: base, wd: withState, caller: "cli", outPart: "n1 accepted"},
		{name: "local caller", args: append([]string{"--caller", "billing"}, base...), wd: withState, caller: "billing", outPart: "n1 accepted"},
		{name: "stack flag signs", args: append([]string{"--stack", "herald-prod"}, base...), wd: withState, signed: true, outPart: "n1 accepted", target: "stack"},
		{name: "HERALD_STACK", args: base, wd: t.TempDir(), env: map[string]string{"HERALD_STACK": "herald-prod"}, signed: true, outPart: "n1 accepted", target: "stack"},
		{name: "stack wins over endpoint", args: append([]string{"--stack", "herald-prod", "--endpoint", endpointSrv.URL}, base...), wd: withState, signed: true, outPart: "n1 accepted", target: "stack"},
		{name: "endpoint signs", args: append([]string{"--endpoint", endpointSrv.URL}, base...), wd: withState, signed: true, outPart: "n1 accepted", target: "endpoint"},
		{name: "endpoint wins over HERALD_STACK", args: append([]string{"--endpoint", endpointSrv.URL}, base...), wd: withState, env: map[string]string{"HERALD_STACK": "herald-prod"}, signed: true, outPart: "n1 accepted", target: "endpoint"},
		{name: "endpoint with a caller", args: append([]string{"--endpoint", endpointSrv.URL, "--caller", "ci"}, base...), wd: t.TempDir(), caller: "ci", outPart: "n1 accepted", target: "endpoint"},
		{name: "wait prints deliveries", args: append([]string{"--wait"}, base...), wd: withState, caller: "cli", outPart: "skipped    no_contact"},
		{name: "unknown stack", args: append([]string{"--stack", "nope"}, base...), wd: withState, errPart: "stack nope", noRequest: true},
		{name: "no deployment", args: base, wd: t.TempDir(), wantErr: errNoSendTarget, noRequest: true},
		{name: "stale state", args: base, wd: staleState, wantErr: ops.ErrStaleState, noRequest: true},
		{name: "type required", args: []string{"--user", "u1"}, wd: withState, wantErr: errSendUsage, noRequest: true},
		{name: "bad data", args: append([]string{"--data", "novalue"}, base...), wd: withState, wantErr: errSendUsage, noRequest: true},
		{name: "bad send-at", args: append([]string{"--send-at", "tomorrow"}, base...), wd: withState, wantErr: errSendUsage, noRequest: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.target == "" {
				tt.target = "local"
			}
			before := map[string]int{}
			for name, requests := range targets {
				before[name] = len(requests())
			}
			var out, errOut bytes.Buffer
			err := runSend(context.Background(), tt.args, &out, &errOut, deps(tt.wd, tt.env))
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
			case tt.errPart != "":
				if err == nil || !strings.Contains(err.Error(), tt.errPart) {
					t.Fatalf("err = %v, want it to mention %q", err, tt.errPart)
				}
			case err != nil:
				t.Fatalf("err = %v (stderr %s)", err, errOut.String())
			}
			for name, requests := range targets {
				if n := len(requests()) - before[name]; name != tt.target && n > 0 {
					t.Errorf("the %s stand-in received %d requests; the target is %s", name, n, tt.target)
				}
			}
			reqs := targets[tt.target]()[before[tt.target]:]
			if tt.noRequest {
				if len(reqs) != 0 {
					t.Fatalf("sent %d requests", len(reqs))
				}
				return
			}
			if !strings.Contains(out.String(), tt.outPart) {
				t.Errorf("stdout %q lacks %q", out.String(), tt.outPart)
			}
			r := reqs[0]
			if r.method != http.MethodPost || r.path != "/v1/notifications" {
				t.Fatalf("sent %s %s", r.method, r.path)
			}
			data, _ := r.body["data"].(map[string]any)
			recipient, _ := r.body["recipient"].(map[string]any)
			if data["invoiceUrl"] != "https://example.com/i?a=b" || r.body["type"] != "invoice.payment_failed" ||
				recipient["userId"] != "u1" || recipient["email"] != "u1@example.com" {
				t.Errorf("body = %v", r.body)
			}
			if r.header.Get("Idempotency-Key") == "" {
				t.Error("no Idempotency-Key")
			}
			auth := r.header.Get("Authorization")
			if tt.signed != strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKID/") || (tt.signed && !strings.Contains(auth, "/eu-west-1/execute-api/")) {
				t.Errorf("Authorization = %q, signed %v", auth, tt.signed)
			}
			if got := r.header.Get("X-Herald-Dev-Caller"); got != tt.caller {
				t.Errorf("caller = %q, want %q", got, tt.caller)
			}
			if strings.Contains(out.String()+errOut.String(), "u1@example.com") {
				t.Errorf("the output repeats the address: %s %s", out.String(), errOut.String())
			}
		})
	}
}

func TestSendReportsTheProblem(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		io.WriteString(w, `{"type":"x","title":"Unprocessable Entity","status":422,"code":"missing_variable","pointer":"/data/code","detail":"variable \"code\": missing"}`)
	}))
	defer srv.Close()
	var out, errOut bytes.Buffer
	err := runSend(context.Background(), []string{"--endpoint", srv.URL, "--caller", "ci", "--type", "otp.code", "--user", "u1"}, &out, &errOut, defaultSendDeps())
	want := srv.URL + ` answered 422 missing_variable at /data/code: variable "code": missing`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}

// herald send --wait tells scripts how the deliveries ended: 0 when none
// failed, 3 when one ended failed or bounced, 4 when they had not settled.
func TestSendWaitExitStatus(t *testing.T) {
	tests := []struct {
		name, deliveries string
		code             int
	}{
		{"sent and skipped", `{"email":{"status":"sent"},"push":{"status":"skipped","reason":"no_contact"}}`, 0},
		{"email failed", `{"email":{"status":"failed","reason":"MessageRejected"},"push":{"status":"sent"}}`, exitDeliveryFailed},
		{"email bounced", `{"email":{"status":"bounced"}}`, exitDeliveryFailed},
		{"still queued", `{"email":{"status":"queued"}}`, exitWaitTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if r.Method == http.MethodPost {
					w.WriteHeader(http.StatusAccepted)
					io.WriteString(w, `{"id":"n1","status":"accepted","createdAt":"2026-01-02T03:04:05Z"}`)
					return
				}
				io.WriteString(w, `{"id":"n1","status":"accepted","deliveries":`+tt.deliveries+`}`)
			}))
			defer srv.Close()
			d := defaultSendDeps()
			d.poll, d.waitFor = time.Millisecond, 50*time.Millisecond
			var out, errOut bytes.Buffer
			err := runSend(context.Background(), []string{"--endpoint", srv.URL, "--caller", "ci", "--wait",
				"--type", "otp.code", "--user", "u1", "--data", "code=123456"}, &out, &errOut, d)
			code := 0
			if err != nil {
				var coded interface{ ExitCode() int }
				if !errors.As(err, &coded) {
					t.Fatalf("err = %v, want an exit status", err)
				}
				code = coded.ExitCode()
			}
			if code != tt.code {
				t.Fatalf("exit status %d (%v), want %d", code, err, tt.code)
			}
			if !strings.Contains(out.String(), "email") {
				t.Errorf("stdout %q does not show the deliveries", out.String())
			}
		})
	}
	if !strings.Contains(sendUsage, "3  --wait: a delivery ended failed") {
		t.Error("usage does not say what exit status 3 means")
	}
}

// herald send --topic notifies a topic's subscribers: the body names the
// topic and the excluded users, the output the send's id; --wait follows
// the fan-out's counts until it finishes; a topic takes no per-user flag.
func TestSendTopic(t *testing.T) {
	var mu sync.Mutex
	var got []seen
	polls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		s := seen{method: r.Method, path: r.URL.Path, header: r.Header.Clone()}
		_ = json.Unmarshal(raw, &s.body)
		mu.Lock()
		got = append(got, s)
		if r.Method == http.MethodGet {
			polls++
		}
		finished := polls >= 2
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusAccepted)
			io.WriteString(w, `{"id":"cmp1","topic":"thread:42","recipients":"pending"}`)
			return
		}
		if !finished {
			io.WriteString(w, `{"id":"cmp1","status":"running","recipients":3,"sent":1,"createdAt":"2026-01-02T03:04:05Z"}`)
			return
		}
		io.WriteString(w, `{"id":"cmp1","status":"done","recipients":3,"sent":2,"skipped":1,"createdAt":"2026-01-02T03:04:05Z","finishedAt":"2026-01-02T03:04:09Z"}`)
	}))
	defer srv.Close()
	d := defaultSendDeps()
	d.poll = time.Millisecond
	base := []string{"--endpoint", srv.URL, "--caller", "forum", "--type", "reservation.approved", "--topic", "thread:42", "--data", "reservationUrl=https://example.com/r/1"}

	var out, errOut bytes.Buffer
	if err := runSend(context.Background(), append(base, "--exclude", "u1,u2", "--exclude", "u3"), &out, &errOut, d); err != nil {
		t.Fatalf("err = %v (stderr %s)", err, errOut.String())
	}
	if !strings.Contains(out.String(), "cmp1 topic thread:42 recipients pending") {
		t.Errorf("stdout %q", out.String())
	}
	r := got[0]
	recipient, _ := r.body["recipient"].(map[string]any)
	exclude, _ := r.body["exclude"].([]any)
	if r.method != http.MethodPost || r.path != "/v1/notifications" || recipient["topic"] != "thread:42" || len(recipient) != 1 ||
		len(exclude) != 3 || exclude[0] != "u1" || exclude[2] != "u3" || r.header.Get("Idempotency-Key") == "" || r.header.Get("X-Herald-Dev-Caller") != "forum" {
		t.Errorf("sent %s %s %v (key %q)", r.method, r.path, r.body, r.header.Get("Idempotency-Key"))
	}

	out.Reset()
	if err := runSend(context.Background(), append(base, "--wait"), &out, &errOut, d); err != nil {
		t.Fatalf("--wait: %v", err)
	}
	if want := "cmp1 done: 3 recipients, 2 sent, 1 skipped, 0 failed, 0 dropped"; !strings.Contains(out.String(), want) {
		t.Errorf("--wait stdout %q, want %q", out.String(), want)
	}
	if last := got[len(got)-1]; last.method != http.MethodGet || last.path != "/v1/campaigns/cmp1" {
		t.Errorf("--wait read %s %s", last.method, last.path)
	}

	before := len(got)
	for _, args := range [][]string{
		append(base, "--user", "u1"),
		append(base, "--email", "a@example.com"),
		append(base, "--send-at", "2026-01-02T03:04:05Z"),
		{"--endpoint", srv.URL, "--caller", "forum", "--type", "reservation.approved", "--user", "u1", "--exclude", "u2"},
	} {
		if err := runSend(context.Background(), args, &out, &errOut, d); !errors.Is(err, errSendUsage) {
			t.Errorf("%v: err = %v, want a usage error", args[6:], err)
		}
	}
	if len(got) != before {
		t.Errorf("a usage error sent %d requests", len(got)-before)
	}
}
