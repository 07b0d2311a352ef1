// Package stacktest runs integration tests against a local Herald stack: a
// test package calls Main from TestMain to start one stack (emulators, table,
// queues, functions) for its tests and stop it afterwards. Packages that
// advance the clock or inject faults get their own stack by living in their
// own package.
package stacktest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/dynamo"
)

var current *devstack.Stack

// Main starts a stack with cfg (Root and APIAddr are filled in), runs the
// tests and stops the stack. With -short, or when HERALD_SKIP_INTEGRATION is
// set, it runs the tests without a stack and Stack skips them.
func Main(m *testing.M, cfg devstack.Config) {
	os.Exit(run(m, cfg, Options{}))
}

// Options change what Main checks after the tests.
type Options struct {
	// ExpectIAMDenials lets the package's functions be denied AWS calls by
	// their IAM policies without failing it (tests of the IAM check itself).
	ExpectIAMDenials bool
}

// Run is Main with options, returning the exit code instead of exiting.
func Run(m *testing.M, cfg devstack.Config, opts Options) int {
	return run(m, cfg, opts)
}

// RunEdited is Run on a copy of the repository's template.yaml changed by
// edit (a package's own timeouts, retries or subscribers), written to a
// temporary directory for the package's run.
func RunEdited(m *testing.M, edit func(template string) (string, error), cfg devstack.Config, opts Options) int {
	root, err := RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "stacktest:", err)
		return 1
	}
	raw, err := os.ReadFile(filepath.Join(root, "template.yaml"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "stacktest:", err)
		return 1
	}
	edited, err := edit(string(raw))
	if err != nil {
		fmt.Fprintln(os.Stderr, "stacktest: edit template.yaml:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "herald-template")
	if err != nil {
		fmt.Fprintln(os.Stderr, "stacktest:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	cfg.Template = filepath.Join(dir, "template.yaml")
	if err := os.WriteFile(cfg.Template, []byte(edited), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "stacktest:", err)
		return 1
	}
	return run(m, cfg, opts)
}

func run(m *testing.M, cfg devstack.Config, opts Options) int {
	if os.Getenv("HERALD_SKIP_INTEGRATION") != "" || testingShort() {
		return m.Run()
	}
	root, err := RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "stacktest:", err)
		return 1
	}
	cfg.Root = root
	if cfg.APIAddr == "" {
		cfg.APIAddr = "127.0.0.1:0"
	}
	if cfg.Logs == nil && os.Getenv("HERALD_TEST_LOGS") != "" {
		cfg.Logs = os.Stderr
	}
	if cfg.DataDir == "" {
		cfg.DynamoDB = os.Getenv(devstack.SharedDynamoDBEnv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	st, err := devstack.Start(ctx, cfg)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "stacktest: start local stack:", err)
		return 1
	}
	current = st
	defer st.Stop()
	code := m.Run()
	return code | checkIAM(st, root, opts)
}

// checkIAM makes every AWS call a denial of the function's IAM policy fail
// the package, even when the function survives it (a retried or logged
// error), and, with HERALD_IAM_SEEN set to a directory, writes what the
// package's functions called there for `make aws-check`.
func checkIAM(st *devstack.Stack, root string, opts Options) int {
	code := 0
	if denials := st.IAM.Denials(); len(denials) > 0 && !opts.ExpectIAMDenials {
		fmt.Fprintln(os.Stderr, "stacktest: AWS calls denied by the functions' IAM policies (template.yaml):")
		for _, d := range denials {
			fmt.Fprintf(os.Stderr, "  %s: %s on %s (%s, %d×)\n", d.Function, d.Action, d.Resource, d.Decision, d.Count)
		}
		code = 1
	}
	if dir := os.Getenv("HERALD_IAM_SEEN"); dir != "" && !opts.ExpectIAMDenials {
		wd, _ := os.Getwd()
		rel, err := filepath.Rel(root, wd)
		if err != nil {
			rel = wd
		}
		name := strings.ReplaceAll(filepath.ToSlash(rel), "/", "-") + ".json"
		if err := st.IAM.WriteRecord(filepath.Join(dir, name), filepath.ToSlash(rel)); err != nil {
			fmt.Fprintln(os.Stderr, "stacktest: record IAM calls:", err)
			code = 1
		}
	}
	return code
}

func testingShort() bool {
	for _, a := range os.Args[1:] {
		if a == "-test.short" || a == "-test.short=true" {
			return true
		}
	}
	return false
}

// Stack returns the package's running stack, skipping the test when
// integration tests are disabled.
func Stack(t testing.TB) *devstack.Stack {
	t.Helper()
	if current == nil {
		t.Skip("integration test: no local stack (-short or HERALD_SKIP_INTEGRATION)")
	}
	return current
}

// RepoTemplate loads the repository's template.yaml as CloudFormation
// receives it (the SAM transform's output; no parameter overrides), failing
// the test if it cannot.
func RepoTemplate(t testing.TB) *devstack.Template {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := devstack.LoadTransformed(context.Background(), root, filepath.Join(root, "template.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

// RepoRoot finds the directory holding go.mod, upwards from the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// Client returns a Herald client for the stack's API, calling service routes
// as caller (X-Herald-Dev-Caller; "dev" when empty).
func Client(t testing.TB, caller string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(Stack(t).APIURL, append([]client.Option{client.WithDevCaller(caller)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Notify sends a notification (a JSON string or a value to encode) with the
// client, fails the test unless it is accepted, and returns its id.
func Notify(t testing.TB, body any) string {
	t.Helper()
	raw, ok := body.(string)
	if !ok {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		raw = string(b)
	}
	var n client.Notification
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&n); err != nil {
		t.Fatalf("notification %s: %v", raw, err)
	}
	a, err := Client(t, "").Send(context.Background(), n)
	if err != nil {
		t.Fatalf("send %s: %v", raw, err)
	}
	return a.ID
}

// Response is an HTTP response with its body read.
type Response struct {
	*http.Response
	Body []byte
}

// JSON decodes the body into v, failing the test on error.
func (r *Response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s body %q: %v", r.Request.URL.Path, r.Body, err)
	}
}

// Do sends a request to the stack's API. body may be nil, a string, []byte or
// a value to encode as JSON. headers are "Name: value" pairs.
func Do(t testing.TB, method, path string, body any, headers ...string) *Response {
	t.Helper()
	return DoOn(t, Stack(t), method, path, body, headers...)
}

// DoOn is Do against a given stack (a test that starts and restarts its own).
func DoOn(t testing.TB, st *devstack.Stack, method, path string, body any, headers ...string) *Response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, st.APIURL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range headers {
		k, v, ok := strings.Cut(h, ":")
		if !ok {
			t.Fatalf("header %q: want \"Name: value\"", h)
		}
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return &Response{Response: resp, Body: raw}
}

// Eventually polls cond every 50 ms until it returns true or timeout passes.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Email is one message captured by the SES emulator.
type Email struct {
	MessageID   string `json:"messageId"`
	From        string `json:"from"`
	Subject     string `json:"subject"`
	Destination struct {
		To []string `json:"to"`
	} `json:"destination"`
	Body struct {
		HTML string `json:"html"`
		Text string `json:"text"`
	} `json:"body"`
}

// Emails lists the mail the SES emulator received.
func Emails(t testing.TB) []Email {
	t.Helper()
	var store struct {
		Emails []Email `json:"emails"`
	}
	Do(t, http.MethodGet, "/_dev/emails", nil).JSON(t, &store)
	return store.Emails
}

// EmailsTo lists the captured mail addressed to addr.
func EmailsTo(t testing.TB, addr string) []Email {
	t.Helper()
	var out []Email
	for _, e := range Emails(t) {
		for _, to := range e.Destination.To {
			if strings.EqualFold(to, addr) {
				out = append(out, e)
			}
		}
	}
	return out
}

// UniqueID returns an id unique to this test run, for user ids and keys.
func UniqueID(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
}

// SendWork puts raw bodies on one of the stack's queues (by logical id) in one
// SendMessageBatch: poison messages, or work messages made by hand.
func SendWork(t testing.TB, queueID string, bodies ...string) {
	t.Helper()
	st := Stack(t)
	var entries []sqstypes.SendMessageBatchRequestEntry
	for i, b := range bodies {
		entries = append(entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String(b)})
	}
	out, err := sqs.NewFromConfig(st.AWS).SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{
		QueueUrl: aws.String(st.Resources.Queues[queueID].URL), Entries: entries,
	})
	if err != nil || len(out.Failed) > 0 {
		t.Fatalf("send to %s: %v %v", queueID, err, out)
	}
}

// PeekQueue returns the bodies of up to ten messages of the template queue
// queueID (e.g. "EmailDLQ") without consuming them: they are visible again
// at once. ReceiveMessage cannot say so itself (the SDK drops a
// VisibilityTimeout of 0, its zero value, so the queue's own timeout would
// hide them), so the received messages are made visible again with
// ChangeMessageVisibilityBatch, whose VisibilityTimeout is always sent.
func PeekQueue(t testing.TB, queueID string) []string {
	t.Helper()
	st := Stack(t)
	ctx := context.Background()
	client := sqs.NewFromConfig(st.AWS)
	url := aws.String(st.Resources.Queues[queueID].URL)
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	bodies := make([]string, 0, len(out.Messages))
	var release []sqstypes.ChangeMessageVisibilityBatchRequestEntry
	for i, m := range out.Messages {
		bodies = append(bodies, aws.ToString(m.Body))
		release = append(release, sqstypes.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0})
	}
	if len(release) > 0 {
		res, err := client.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: url, Entries: release})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Failed) > 0 {
			t.Fatalf("peek %s: %d messages not made visible again: %s", queueID, len(res.Failed), aws.ToString(res.Failed[0].Message))
		}
	}
	return bodies
}

// Store is every feature store on the stack's table with the stack's clock
// (what it stamps agrees with the functions' time when a test moves the
// clock), for fixtures and checks.
func Store(t testing.TB) *Stores {
	t.Helper()
	st := Stack(t)
	return NewStores(dynamo.New(DB(t), st.Resources.Table, dynamo.WithClock(st.Clock.Now)))
}

// Stores is every feature store of one table in one value, for tests'
// fixtures and checks that cross features; production wiring (internal/app)
// hands each consumer only the feature stores it uses.
type Stores struct {
	*dynamo.Table
	*dynamo.Notifications
	*dynamo.Inbox
	*dynamo.Campaigns
	*dynamo.Users
	*dynamo.Live
	*dynamo.Scheduling
	*dynamo.Quotas
	*dynamo.Digests
	*dynamo.Budgets
	*dynamo.History
	*dynamo.Breakers
	*dynamo.Topics
}

// NewStores returns every feature store over t.
func NewStores(t *dynamo.Table) *Stores {
	s := dynamo.StoresOf(t)
	return &Stores{Table: t, Notifications: s.Notifications, Inbox: s.Inbox, Campaigns: s.Campaigns, Users: s.Users,
		Live: s.Live, Scheduling: s.Scheduling, Quotas: s.Quotas, Digests: s.Digests, Budgets: s.Budgets, History: s.History, Breakers: s.Breakers, Topics: s.Topics}
}

// DB is a DynamoDB client on the stack's emulator, for raw reads and writes.
func DB(t testing.TB) *dynamodb.Client {
	t.Helper()
	return dynamodb.NewFromConfig(Stack(t).AWS)
}
