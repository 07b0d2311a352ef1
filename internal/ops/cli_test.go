package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/policy"
	"github.com/heraldhq/herald/internal/recovery"
)

type fakeStacks struct {
	outputs map[string]string
	asked   string
}

func (f *fakeStacks) DescribeStacks(_ context.Context, in *cloudformation.DescribeStacksInput, _ ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error) {
	f.asked = aws.ToString(in.StackName)
	if f.outputs == nil {
		return nil, errors.New("ValidationError: Stack with id " + f.asked + " does not exist")
	}
	var outs []cfntypes.Output
	for k, v := range f.outputs {
		outs = append(outs, cfntypes.Output{OutputKey: aws.String(k), OutputValue: aws.String(v)})
	}
	return &cloudformation.DescribeStacksOutput{Stacks: []cfntypes.Stack{{Outputs: outs}}}, nil
}

// DescribeStackResource names the stack's relay function.
func (f *fakeStacks) DescribeStackResource(_ context.Context, in *cloudformation.DescribeStackResourceInput, _ ...func(*cloudformation.Options)) (*cloudformation.DescribeStackResourceOutput, error) {
	return &cloudformation.DescribeStackResourceOutput{StackResourceDetail: &cfntypes.StackResourceDetail{
		LogicalResourceId: in.LogicalResourceId, PhysicalResourceId: aws.String(aws.ToString(in.StackName) + "-" + aws.ToString(in.LogicalResourceId) + "-X1"),
	}}, nil
}

// fakeFunctions serves deployed functions' environments by name.
type fakeFunctions map[string]map[string]string

func (f fakeFunctions) GetFunctionConfiguration(_ context.Context, in *lambda.GetFunctionConfigurationInput, _ ...func(*lambda.Options)) (*lambda.GetFunctionConfigurationOutput, error) {
	env, ok := f[aws.ToString(in.FunctionName)]
	if !ok {
		return nil, errors.New("ResourceNotFoundException: Function not found: " + aws.ToString(in.FunctionName))
	}
	return &lambda.GetFunctionConfigurationOutput{Environment: &lambdatypes.EnvironmentResponse{Variables: env}}, nil
}

type failingCreds struct{}

func (failingCreds) Retrieve(context.Context) (aws.Credentials, error) {
	return aws.Credentials{}, errors.New("no EC2 IMDS role found")
}

func testOutputs() map[string]string {
	out := map[string]string{"TableName": "tbl"}
	t := testTarget()
	for _, q := range t.DLQs {
		out[q.LogicalID+"Url"] = q.URL
	}
	out["ReleaseQueueUrl"] = t.Release
	out["CampaignQueueUrl"] = t.Campaign
	for _, c := range domain.Channels {
		for _, p := range domain.Priorities {
			out[WorkQueueLogicalID(c, p)+"Url"] = t.Work[domain.QueueName(c, p)]
		}
	}
	return out
}

func TestResolver(t *testing.T) {
	repo := t.TempDir()
	sub := filepath.Join(repo, "internal", "x")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	st := LocalState{PID: 4242, APIURL: "http://127.0.0.1:3000", Region: "us-east-1", Table: "herald-Table",
		Endpoints: map[string]string{"SQS": "http://127.0.0.1:9324", "DYNAMODB": "http://127.0.0.1:8000"}, Queues: map[string]string{},
		RelayEnv: map[string]string{"RATE_LIMIT_EMAIL": "2", "RATE_LIMIT_WINDOW": "2m"}}
	// The deployed relay functions' environments, with limits other than the
	// defaults: a redrive must plan with them.
	functions := fakeFunctions{
		"prod-RelayFunction-X1": {"TABLE_NAME": "tbl", "RATE_LIMIT_EMAIL": "1", "RATE_LIMIT_WINDOW": "1h"},
		"stg-RelayFunction-X1":  {"TABLE_NAME": "tbl", "RATE_LIMIT_EMAIL": "7", "RATE_LIMIT_WINDOW": "10m"},
	}
	for k, v := range testOutputs() {
		if id, ok := strings.CutSuffix(k, "Url"); ok {
			st.Queues[id] = v
		}
	}
	statePath, err := WriteState(repo, st)
	if err != nil {
		t.Fatal(err)
	}
	goodCreds := credentials.NewStaticCredentialsProvider("a", "b", "")
	tests := []struct {
		name      string
		where     Where
		env       map[string]string
		wd        string
		alive     bool
		creds     aws.CredentialsProvider
		stack     map[string]string
		wantDesc  string
		wantErr   error
		wantStack string
		wantSet   string
		// wantLimit is the email limit and window the redrive's relay plans with.
		wantLimit int
		wantWin   time.Duration
	}{
		{name: "stack flag", where: Where{Stack: "prod"}, wd: sub, alive: true, creds: goodCreds, stack: testOutputs(), wantDesc: "stack prod", wantStack: "prod", wantLimit: 1, wantWin: time.Hour},
		{name: "HERALD_STACK", env: map[string]string{"HERALD_STACK": "stg"}, wd: sub, creds: goodCreds, stack: testOutputs(), wantDesc: "stack stg", wantStack: "stg", wantLimit: 7, wantWin: 10 * time.Minute},
		{name: "unknown stack", where: Where{Stack: "nope"}, wd: sub, creds: goodCreds, wantDesc: ""},
		{name: "no credentials", where: Where{Stack: "prod"}, wd: sub, creds: failingCreds{}, stack: testOutputs(), wantErr: ErrNoCredentials},
		{name: "environment", env: map[string]string{"TABLE_NAME": "tbl", "EMAIL_DLQ_URL": emailDLQ, "SMS_DLQ_URL": smsDLQ, "PUSH_DLQ_URL": pushDLQ, "RELAY_DLQ_URL": relayDLQ,
			"RELEASE_DLQ_URL": releaseDLQ, "RELEASE_QUEUE_URL": releaseQueue, "CAMPAIGN_DLQ_URL": campaignDLQ, "CAMPAIGN_QUEUE_URL": campaignQ, "FEEDBACK_DLQ_URL": feedbackDLQ,
			"LIVE_DLQ_URL": liveDLQ, "EMAIL_HIGH_QUEUE_URL": "a", "EMAIL_NORMAL_QUEUE_URL": "a", "EMAIL_LOW_QUEUE_URL": "a", "SMS_HIGH_QUEUE_URL": "a", "SMS_NORMAL_QUEUE_URL": "a",
			"SMS_LOW_QUEUE_URL": "a", "PUSH_HIGH_QUEUE_URL": "a", "PUSH_NORMAL_QUEUE_URL": "a", "PUSH_LOW_QUEUE_URL": "a", "RATE_LIMIT_EMAIL": "3", "RATE_LIMIT_WINDOW": "30s"}, wd: sub, creds: goodCreds, wantDesc: "environment", wantLimit: 3, wantWin: 30 * time.Second},
		{name: "local state found upwards", wd: sub, alive: true, creds: goodCreds, wantDesc: "local stack http://127.0.0.1:3000", wantSet: "AWS_ENDPOINT_URL_SQS=http://127.0.0.1:9324", wantLimit: 2, wantWin: 2 * time.Minute},
		{name: "state flag", where: Where{State: statePath}, wd: "/", alive: true, creds: goodCreds, wantDesc: "local stack", wantSet: "AWS_REGION=us-east-1", wantLimit: 2, wantWin: 2 * time.Minute},
		{name: "stale state", wd: sub, alive: false, creds: goodCreds, wantErr: ErrStaleState},
		{name: "nothing", wd: t.TempDir(), creds: goodCreds, wantErr: ErrNoTarget},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stacks := &fakeStacks{outputs: tt.stack}
			set := map[string]string{}
			r := Resolver{
				Getenv: func(k string) string { return tt.env[k] },
				Setenv: func(k, v string) error { set[k] = v; return nil },
				Getwd:  func() (string, error) { return tt.wd, nil },
				Alive:  func(pid int) bool { return tt.alive && pid == 4242 },
				LoadConfig: func(context.Context) (aws.Config, error) {
					return aws.Config{Region: "eu-west-1", Credentials: tt.creds}, nil
				},
				Stacks:         func(aws.Config) StacksAPI { return stacks },
				StackResources: func(aws.Config) StackResourcesAPI { return stacks },
				Functions:      func(aws.Config) FunctionsAPI { return functions },
			}
			_, tg, desc, err := r.Resolve(context.Background(), tt.where)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if tt.wantDesc == "" {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(desc, tt.wantDesc) || len(tg.DLQs) != 8 || tg.Release == "" || tg.Campaign == "" || stacks.asked != tt.wantStack {
				t.Errorf("desc %q, target %+v, asked stack %q", desc, tg, stacks.asked)
			}
			// The relay a redrive re-runs is configured as the deployed one.
			limits, err := policy.LimitsFromEnv(relayDeps(aws.Config{}, tg, nil, nil).Getenv)
			if err != nil || limits.For(domain.ChannelEmail) != tt.wantLimit || limits.Window != tt.wantWin {
				t.Errorf("redrive relay limits %+v, %v; want email %d per %v (the deployed relay's)", limits, err, tt.wantLimit, tt.wantWin)
			}
			if tt.wantSet != "" {
				k, v, _ := strings.Cut(tt.wantSet, "=")
				if set[k] != v {
					t.Errorf("%s = %q, want %q (set %v)", k, set[k], v, set)
				}
			} else if len(set) > 0 {
				t.Errorf("environment changed for a non-local target: %v", set)
			}
		})
	}
}

func runCLI(t *testing.T, e *env, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	c := CLI{Stdout: &out, Stderr: &errOut, Connect: func(context.Context, Where) (*Operator, string, error) {
		return e.op, "test deployment", nil
	}}
	err := c.Run(context.Background(), args)
	return out.String(), errOut.String(), err
}

func TestCLI(t *testing.T) {
	e := newEnv()
	e.parkDelivery("n1", domain.ChannelEmail, domain.PriorityHigh, domain.StatusFailed, domain.ReasonExhausted, 6, "Throttling")

	out, _, err := runCLI(t, e, "list", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var list []map[string]any
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 8 {
		t.Fatalf("list --json: %v %s", err, out)
	}
	for _, k := range []string{"name", "channel", "depth", "oldestAgeSeconds"} {
		if _, ok := list[0][k]; !ok {
			t.Errorf("list --json lacks %q: %v", k, list[0])
		}
	}
	if list[0]["name"] != "email" || list[0]["depth"] != 1.0 || list[0]["oldestAgeSeconds"] != 1800.0 {
		t.Errorf("list --json: %v", list[0])
	}

	out, _, err = runCLI(t, e, "list")
	if err != nil || !strings.Contains(out, "email") || !strings.Contains(out, "30m0s") {
		t.Errorf("list: %v\n%s", err, out)
	}

	// show labels each count and time for what it is: the delivery's send
	// attempts apart from the SQS message's receives, the message's enqueue
	// time, never a bare "sent" beside a failed delivery.
	out, _, err = runCLI(t, e, "show", "email")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"delivery now      failed: exhausted", "send attempts     6 (calls to the provider", "message receives", "message enqueued"} {
		if !strings.Contains(out, want) {
			t.Errorf("show: output lacks %q:\n%s", want, out)
		}
	}
	if regexp.MustCompile(`(?m)^\s+(sent|receives)\s`).MatchString(out) {
		t.Errorf("show: an unlabelled sent or receives row:\n%s", out)
	}

	// show never prints the recipient's address, number or data.
	for _, args := range [][]string{{"show", "email"}, {"show", "--json", "email", "--limit", "5"}} {
		out, _, err = runCLI(t, e, args...)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"n1", "Throttling", "invoice.payment_failed", "high", "exhausted"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: output lacks %q:\n%s", args, want, out)
			}
		}
		for _, secret := range []string{"secret.n1@example.com", "+1555", "private"} {
			if strings.Contains(out, secret) {
				t.Errorf("%v: output leaks %q:\n%s", args, secret, out)
			}
		}
	}

	out, _, err = runCLI(t, e, "redrive", "email", "--all", "--dry-run")
	if err != nil || !strings.Contains(out, "would requeue") || !strings.Contains(out, "1 would requeue") {
		t.Errorf("dry run: %v\n%s", err, out)
	}
	out, _, err = runCLI(t, e, "redrive", "email", "--id", "n1", "--rate", "5/s")
	if err != nil || !strings.Contains(out, "requeued") || !strings.Contains(out, "email DLQ: 1 requeued") {
		t.Errorf("redrive: %v\n%s", err, out)
	}
	out, _, err = runCLI(t, e, "redrive", "email", "--all")
	if err != nil || !strings.Contains(out, "is empty") {
		t.Errorf("redrive of an empty DLQ: %v\n%s", err, out)
	}
	out, _, err = runCLI(t, e, "show", "email")
	if err != nil || !strings.Contains(out, "is empty") {
		t.Errorf("show of an empty DLQ: %v\n%s", err, out)
	}

	e.parkDelivery("n2", domain.ChannelEmail, domain.PriorityHigh, domain.StatusFailed, domain.ReasonExhausted, 6, "x")
	if _, _, err := runCLI(t, e, "purge", "email"); !IsUsage(err) || !strings.Contains(err.Error(), "--yes") {
		t.Errorf("purge without --yes: %v", err)
	}
	if out, _, err := runCLI(t, e, "purge", "email", "--yes"); err != nil || !strings.Contains(out, "purged") {
		t.Errorf("purge: %v %s", err, out)
	}

	usage := [][]string{
		{}, {"frobnicate"}, {"show"}, {"show", "email", "extra"}, {"list", "email"},
		{"redrive", "email", "--rate", "fast"}, {"show", "email", "--limit", "0"}, {"show", "--bogus", "email"},
	}
	for _, args := range usage {
		if _, _, err := runCLI(t, e, args...); !IsUsage(err) {
			t.Errorf("%v: err %v, want a usage error", args, err)
		}
	}
	if _, errOut, err := runCLI(t, e, "redrive", "-h"); err != nil || !strings.Contains(errOut, "Usage:") {
		t.Errorf("-h: %v %q", err, errOut)
	}
	if _, _, err := runCLI(t, e, "show", "emial"); err == nil || IsUsage(err) || !strings.Contains(err.Error(), "unknown queue") {
		t.Errorf("unknown queue: %v", err)
	}
	if _, _, err := runCLI(t, e, "redrive", "email"); err == nil || !strings.Contains(err.Error(), "--all") {
		t.Errorf("redrive without selection: %v", err)
	}

	// The release DLQ: one due partition per message.
	p := recovery.DuePartition{Bucket: time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC), Shard: 3}
	e.store.due = map[recovery.DuePartition]bool{p: true}
	e.sqs.park(releaseDLQ, releaseQueue, `{"bucket":"2026-03-01T08:00:00Z","shard":3}`, 3, t0.Add(-time.Minute))
	out, _, err = runCLI(t, e, "show", "release")
	if err != nil || !strings.Contains(out, "DUE#2026030108#3") || !strings.Contains(out, "still due") {
		t.Errorf("show release: %v\n%s", err, out)
	}
	out, _, err = runCLI(t, e, "redrive", "release", "--all")
	if err != nil || !strings.Contains(out, "release DLQ: 1 released") || strings.Contains(out, "requeued") {
		t.Errorf("redrive release: %v\n%s", err, out)
	}

	// The campaign DLQ: one campaign step per message, never its recipients.
	e.store.campaigns = map[string]domain.CampaignStatus{"c1": domain.CampaignCancelled}
	mScan := e.sqs.park(campaignDLQ, campaignQ, `{"kind":"scan","campaignId":"c1","segment":2,"segments":4,"page":3,"after":"user-secret-42"}`, 3, t0.Add(-time.Minute))
	mBad := e.sqs.park(campaignDLQ, campaignQ, `{"kind":"lot","campaignId":"c1"}`, 3, t0.Add(-time.Minute))
	for _, args := range [][]string{{"show", "campaign"}, {"show", "campaign", "--json"}} {
		out, _, err = runCLI(t, e, args...)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{mScan, "c1", "scan", "cancelled", mBad, "malformed"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: output lacks %q:\n%s", args, want, out)
			}
		}
		if strings.Contains(out, "user-secret-42") || strings.Contains(out, "private text") {
			t.Errorf("%v: output leaks a recipient or the campaign's data:\n%s", args, out)
		}
	}
	out, _, err = runCLI(t, e, "show", "campaign")
	if err != nil || !strings.Contains(out, "segment 2 of 4, page 3") || !strings.Contains(out, "c1 (cancelled)") {
		t.Errorf("show campaign: %v\n%s", err, out)
	}
	out, _, err = runCLI(t, e, "redrive", "campaign", "--all", "--dry-run")
	if err != nil || !strings.Contains(out, "campaign DLQ: 1 would resend, 1 would leave") || !strings.Contains(out, "does nothing") ||
		strings.Contains(out, "requeue") || strings.Contains(out, "user-secret-42") {
		t.Errorf("redrive campaign --dry-run: %v\n%s", err, out)
	}
	out, _, err = runCLI(t, e, "redrive", "campaign", "--id", "c1", "--rate", "2/s")
	if err != nil || !strings.Contains(out, "campaign DLQ: 1 resent") || !strings.Contains(out, "resent        message "+mScan) {
		t.Errorf("redrive campaign: %v\n%s", err, out)
	}
	if out, _, err := runCLI(t, e, "purge", "campaign", "--yes"); err != nil || !strings.Contains(out, "purged the campaign DLQ") {
		t.Errorf("purge campaign: %v %s", err, out)
	}
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{"": 0, "10": 10, "10/s": 10, "0.5/s": 0.5} {
		if got, err := parseRate(in); err != nil || got != want {
			t.Errorf("parseRate(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"0", "-1/s", "x/s", "10/m"} {
		if _, err := parseRate(in); err == nil {
			t.Errorf("parseRate(%q): no error", in)
		}
	}
}

func TestRelayReplanner(t *testing.T) {
	rec := func(_ context.Context, id string) (events.DynamoDBEventRecord, error) {
		if id == "gone" {
			return events.DynamoDBEventRecord{}, fmt.Errorf("notification %s: %w", id, domain.ErrNotFound)
		}
		return events.DynamoDBEventRecord{EventName: "INSERT", Change: events.DynamoDBStreamRecord{SequenceNumber: "replan-" + id}}, nil
	}
	var got []string
	handle := func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		seq := ev.Records[0].Change.SequenceNumber
		got = append(got, seq)
		if seq == "replan-bad" {
			return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: seq}}}, nil
		}
		return events.DynamoDBEventResponse{}, nil
	}
	r := RelayReplanner{Handle: handle, Record: rec}
	if err := r.Replan(context.Background(), "ok"); err != nil {
		t.Errorf("ok: %v", err)
	}
	if err := r.Replan(context.Background(), "bad"); err == nil {
		t.Error("a record the relay reports failed must be an error")
	}
	if err := r.Replan(context.Background(), "gone"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("gone: %v", err)
	}
	if strings.Join(got, ",") != "replan-ok,replan-bad" {
		t.Errorf("relay invoked with %v", got)
	}
}

// The feedback DLQ (SES events the feedback function failed on) is listed,
// shown by SES event type and ids, never an address, and purged; a redrive
// says why there is none.
func TestFeedbackDLQ(t *testing.T) {
	e := newEnv()
	ses := `{"eventType":"Bounce","mail":{"messageId":"0100-ses-1","destination":["secret.fb@example.com"]},"bounce":{"bounceType":"Permanent"}}`
	body, _ := json.Marshal(map[string]any{"Records": []map[string]any{{"EventSource": "aws:sns", "Sns": map[string]any{"MessageId": "sns-1", "Message": ses}}}})
	e.sqs.park(feedbackDLQ, "", string(body), 3, t0.Add(-time.Hour))

	out, _, err := runCLI(t, e, "list")
	if err != nil || !regexp.MustCompile(`(?m)^feedback\s+-\s+1\s`).MatchString(out) {
		t.Errorf("list: %v\n%s", err, out)
	}
	out, _, err = runCLI(t, e, "show", "feedback")
	if err != nil || !strings.Contains(out, "Bounce of SES message 0100-ses-1 (SNS message sns-1)") {
		t.Errorf("show feedback: %v\n%s", err, out)
	}
	if strings.Contains(out, "secret.fb@example.com") {
		t.Errorf("show feedback leaks the address:\n%s", out)
	}
	if _, _, err := runCLI(t, e, "redrive", "feedback", "--all"); !errors.Is(err, ErrNoRedrive) {
		t.Errorf("redrive feedback: %v, want ErrNoRedrive", err)
	}
	if out, _, err := runCLI(t, e, "purge", "feedback", "--yes"); err != nil || !strings.Contains(out, "purged the feedback DLQ") {
		t.Errorf("purge feedback: %v %s", err, out)
	}
}

// TestLiveDLQ: the live queue's DLQ is listed, its messages shown by kind
// (inbox changes: how many and of which kinds; a broadcast page: the
// announcement and shard; a connection to close) without user or
// connection ids, purged, and not redriven (its posts are stale).
func TestLiveDLQ(t *testing.T) {
	e := newEnv()
	for _, b := range []string{
		`{"events":[{"userId":"u-private-1","kind":"inbox.created","id":"n1"},{"userId":"u-private-2","kind":"inbox.updated"}]}`,
		`{"broadcast":{"id":"a00000000000000000000000001","shard":3,"after":"u-private-3"}}`,
		`{"close":{"connectionId":"ConnPrivate0A=","until":"2026-03-01T12:00:30Z","attempt":2}}`,
		`{"close":{"userId":"u-private-4","connectionId":"ConnPrivate0B=","until":"2026-03-01T12:00:30Z","attempt":1}}`,
		`not json`,
	} {
		e.sqs.park(liveDLQ, "", b, 3, t0.Add(-time.Minute))
	}
	out, _, err := runCLI(t, e, "list")
	if err != nil || !regexp.MustCompile(`(?m)^live\s+-\s+5\s`).MatchString(out) {
		t.Errorf("list: %v\n%s", err, out)
	}
	out, _, err = runCLI(t, e, "show", "live")
	for _, want := range []string{"2 inbox changes (inbox.created, inbox.updated)", "announcement a00000000000000000000000001, shard 3", "close an evicted connection (2 calls made)", "evict and close a connection (1 calls made)", "malformed body"} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("show live: %v, want %q in\n%s", err, want, out)
		}
	}
	for _, private := range []string{"u-private", "ConnPrivate"} {
		if strings.Contains(out, private) {
			t.Errorf("show live prints %s:\n%s", private, out)
		}
	}
	if _, _, err := runCLI(t, e, "redrive", "live", "--all"); !errors.Is(err, ErrLiveNotRedriven) {
		t.Errorf("redrive live: %v, want ErrLiveNotRedriven", err)
	}
	if out, _, err := runCLI(t, e, "purge", "live", "--yes"); err != nil || !strings.Contains(out, "purged the live DLQ") {
		t.Errorf("purge live: %v %s", err, out)
	}
}
