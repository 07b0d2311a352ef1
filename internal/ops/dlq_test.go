package ops

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/recovery"
	"github.com/heraldhq/herald/internal/storetest"
)

var ctx = context.Background()

func TestTargetFromOutputsAndLookup(t *testing.T) {
	outputs := map[string]string{"TableName": "prod-Table-1", "ApiUrl": "https://x"}
	for _, q := range dlqs {
		outputs[q.LogicalID+"Url"] = "https://sqs.eu-west-1.amazonaws.com/1/prod-" + q.LogicalID + "-AbC"
	}
	outputs["ReleaseQueueUrl"] = "https://sqs.eu-west-1.amazonaws.com/1/prod-ReleaseQueue-AbC"
	outputs["CampaignQueueUrl"] = "https://sqs.eu-west-1.amazonaws.com/1/prod-CampaignQueue-AbC"
	for _, c := range domain.Channels {
		for _, p := range domain.Priorities {
			outputs[WorkQueueLogicalID(c, p)+"Url"] = "https://sqs.eu-west-1.amazonaws.com/1/prod-" + WorkQueueLogicalID(c, p)
		}
	}
	tg, err := TargetFromOutputs(outputs)
	if err != nil {
		t.Fatal(err)
	}
	if tg.Table != "prod-Table-1" || len(tg.DLQs) != 9 || tg.Work["sms-low"] != "https://sqs.eu-west-1.amazonaws.com/1/prod-SmsLowQueue" ||
		tg.Release != "https://sqs.eu-west-1.amazonaws.com/1/prod-ReleaseQueue-AbC" || tg.Campaign != "https://sqs.eu-west-1.amazonaws.com/1/prod-CampaignQueue-AbC" {
		t.Fatalf("target %+v", tg)
	}
	lookups := []struct{ arg, want string }{
		{"email", "email"}, {"RELAY", "relay"}, {"PushDLQ", "push"}, {"prod-SmsDLQ-AbC", "sms"},
		{"https://sqs.eu-west-1.amazonaws.com/1/prod-EmailDLQ-AbC", "email"},
		{"release", "release"}, {"ReleaseDLQ", "release"},
		{"campaign", "campaign"}, {"CampaignDLQ", "campaign"}, {"prod-CampaignDLQ-AbC", "campaign"},
		{"events", "events"}, {"EventsDLQ", "events"},
		{"live", "live"}, {"LiveDLQ", "live"}, {"prod-LiveDLQ-AbC", "live"},
	}
	for _, l := range lookups {
		q, err := tg.DLQ(l.arg)
		if err != nil || q.Name != l.want {
			t.Errorf("DLQ(%q) = %v, %v; want %s", l.arg, q.Name, err, l.want)
		}
	}
	_, err = tg.DLQ("emial")
	var uq *UnknownQueueError
	if !errors.As(err, &uq) || !strings.Contains(err.Error(), "email, sms, push, relay, release, campaign") || !strings.Contains(err.Error(), "prod-EmailDLQ-AbC") {
		t.Errorf("unknown queue error: %v", err)
	}

	delete(outputs, "RelayDLQUrl")
	delete(outputs, "ReleaseQueueUrl")
	delete(outputs, "CampaignQueueUrl")
	delete(outputs, "TableName")
	if _, err := TargetFromOutputs(outputs); err == nil || !strings.Contains(err.Error(), "RelayDLQ") || !strings.Contains(err.Error(), "table name") ||
		!strings.Contains(err.Error(), "ReleaseQueue") || !strings.Contains(err.Error(), "CampaignQueue") {
		t.Errorf("missing outputs: %v", err)
	}
}

func TestTargetFromEnv(t *testing.T) {
	full := map[string]string{"TABLE_NAME": "tbl", "RELEASE_QUEUE_URL": "https://sqs/1/ReleaseQueue", "CAMPAIGN_QUEUE_URL": "https://sqs/1/CampaignQueue"}
	for _, q := range dlqs {
		full[DLQEnvName(q.Name)] = "https://sqs/1/" + q.LogicalID
	}
	for _, c := range domain.Channels {
		for _, p := range domain.Priorities {
			full[strings.ToUpper(string(c))+"_"+strings.ToUpper(string(p))+"_QUEUE_URL"] = "https://sqs/1/" + WorkQueueLogicalID(c, p)
		}
	}
	tests := []struct {
		name    string
		env     map[string]string
		ok      bool
		wantErr string
	}{
		{"nothing set", map[string]string{}, false, ""},
		{"complete", full, true, ""},
		{"partial", map[string]string{"EMAIL_DLQ_URL": "https://sqs/1/e"}, true, "table name"},
		{"campaign queue only", map[string]string{"CAMPAIGN_QUEUE_URL": "https://sqs/1/CampaignQueue"}, true, "CampaignDLQ"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg, ok, err := TargetFromEnv(func(k string) string { return tt.env[k] })
			if ok != tt.ok {
				t.Fatalf("ok = %v", ok)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ok && (tg.Table != "tbl" || tg.DLQs[3].URL != "https://sqs/1/RelayDLQ" || tg.DLQs[4].URL != "https://sqs/1/ReleaseDLQ" || tg.Release != "https://sqs/1/ReleaseQueue" ||
				tg.DLQs[5].URL != "https://sqs/1/CampaignDLQ" || tg.Campaign != "https://sqs/1/CampaignQueue") {
				t.Errorf("target %+v", tg)
			}
		})
	}
}

func TestListReportsDepthAndAgeAndLeavesMessages(t *testing.T) {
	e := newEnv()
	e.parkDelivery("n1", domain.ChannelEmail, domain.PriorityHigh, domain.StatusFailed, domain.ReasonExhausted, 6, "Throttling")
	e.parkDelivery("n2", domain.ChannelEmail, domain.PriorityLow, domain.StatusFailed, domain.ReasonExhausted, 6, "Throttling")
	e.sqs.park(smsDLQ, "", "garbage", 1, t0.Add(-2*time.Hour))
	e.sqs.park(campaignDLQ, campaignQ, `{"kind":"plan","campaignId":"c1"}`, 3, t0.Add(-10*time.Minute))
	qs, err := e.op.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []QueueStatus{
		{Name: "email", Channel: "email", Queue: "herald-EmailDLQ", Depth: 2, OldestAgeSeconds: 1800},
		{Name: "sms", Channel: "sms", Queue: "herald-SmsDLQ", Depth: 1, OldestAgeSeconds: 7200},
		{Name: "push", Channel: "push", Queue: "herald-PushDLQ"},
		{Name: "relay", Queue: "herald-RelayDLQ"},
		{Name: "release", Queue: "herald-ReleaseDLQ"},
		{Name: "campaign", Queue: "herald-CampaignDLQ", Depth: 1, OldestAgeSeconds: 600},
		{Name: "feedback", Queue: "herald-FeedbackDLQ"},
		{Name: "live", Queue: "herald-LiveDLQ"},
	}
	if !reflect.DeepEqual(qs, want) {
		t.Errorf("list\n got %+v\nwant %+v", qs, want)
	}
	if e.sqs.visible(emailDLQ) != 2 || e.sqs.visible(smsDLQ) != 1 {
		t.Error("list must leave the messages visible")
	}
}

func TestShowChannelDLQ(t *testing.T) {
	e := newEnv()
	e.parkDelivery("n1", domain.ChannelEmail, domain.PriorityHigh, domain.StatusFailed, domain.ReasonExhausted, 6, "Throttling")
	e.sqs.park(emailDLQ, emailHigh, `{"notificationId":"gone","channel":"email"}`, 6, t0)
	e.sqs.park(emailDLQ, emailHigh, `not json`, 6, t0)
	e.sqs.park(emailDLQ, emailHigh, `{"notificationId":"n1","channel":"sms"}`, 6, t0)
	q, parked, err := e.op.Show(ctx, "email", 10)
	if err != nil {
		t.Fatal(err)
	}
	if q.Name != "email" || len(parked) != 4 {
		t.Fatalf("got %s with %d messages", q.Name, len(parked))
	}
	p := parked[0]
	if p.NotificationID != "n1" || p.Type != "invoice.payment_failed" || p.Channel != "email" || p.Priority != "high" ||
		p.Status != "failed" || p.Reason != "exhausted" || p.Attempts != 6 || p.LastError != "Throttling" || p.Receives != 6 ||
		!p.SentAt.Equal(t0.Add(-30*time.Minute)) || p.AcceptedAt.IsZero() || p.Problem != "" {
		t.Errorf("parked %+v", p)
	}
	for i, want := range []string{"no longer stored", "malformed", "malformed"} {
		if !strings.Contains(parked[i+1].Problem, want) {
			t.Errorf("message %d problem %q, want %q", i+1, parked[i+1].Problem, want)
		}
	}
	// Left in place, each inspection counted once.
	if e.sqs.visible(emailDLQ) != 4 || e.sqs.receivesOf(emailDLQ)[0] != 7 {
		t.Errorf("visible %d, receives %v", e.sqs.visible(emailDLQ), e.sqs.receivesOf(emailDLQ))
	}
	// Limit.
	if _, parked, _ := e.op.Show(ctx, "email", 2); len(parked) != 2 {
		t.Errorf("limit 2 showed %d", len(parked))
	}
	if _, _, err := e.op.Show(ctx, "push", 10); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty DLQ: %v", err)
	}
	if _, _, err := e.op.Show(ctx, "nope", 10); err == nil {
		t.Error("unknown queue: no error")
	}
}

func onFailureBody(start, end string) string {
	return fmt.Sprintf(`{"requestContext":{"requestId":"r","condition":"RetryAttemptsExhausted","approximateInvokeCount":6},"version":"1.0","timestamp":"2026-03-01T11:00:00Z",`+
		`"DDBStreamBatchInfo":{"shardId":"shard-1","startSequenceNumber":%q,"endSequenceNumber":%q,"batchSize":2,`+
		`"approximateArrivalOfFirstRecord":"2026-03-01T12:00:00Z","approximateArrivalOfLastRecord":"2026-03-01T12:00:00Z","streamArn":"arn:aws:dynamodb:us-east-1:0:table/t/stream/s"}}`, start, end)
}

// relayNotes are the failure notes the relay left around the parked batch
// (sequence numbers 2..5, arriving at t0): one before and one after it, an
// event record's, and an undecodable notification's (no id: its key names it).
func relayNotes() *fakeNotes {
	return &fakeNotes{notes: []recovery.RelayFailure{
		note(1, t0, "N#before", "N", "before"),
		note(2, t0, "N#a", "N", "a"),
		note(3, t0, "N#a", "D#email", ""),
		note(5, t0, "N#b", "N", ""),
		note(6, t0, "N#after", "N", "after"),
		note(3, t0.Add(-72*time.Hour), "N#old", "N", "old"), // an older day's
	}}
}

func TestShowRelayDLQResolvesNotifications(t *testing.T) {
	tests := []struct {
		name        string
		notes       *fakeNotes
		body        string
		ids         []string
		wantProblem string
	}{
		{"notes of the range", relayNotes(), onFailureBody(fmt.Sprintf("%021d", 2), fmt.Sprintf("%021d", 5)), []string{"a", "b"}, "N#a/D#email"},
		{"one record", relayNotes(), onFailureBody(fmt.Sprintf("%021d", 6), fmt.Sprintf("%021d", 6)), []string{"after"}, ""},
		{"no note", relayNotes(), onFailureBody(fmt.Sprintf("%021d", 7), fmt.Sprintf("%021d", 9)), nil, "no relay failure note"},
		{"notes unreadable", &fakeNotes{err: errors.New("throttled")}, onFailureBody("1", "2"), nil, "throttled"},
		{"not an on-failure record", relayNotes(), `{"hello":1}`, nil, "not a Lambda on-failure record"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv()
			e.op.Failures = tt.notes
			e.sqs.park(relayDLQ, "", tt.body, 0, t0)
			_, parked, err := e.op.Show(ctx, "relay", 10)
			if err != nil {
				t.Fatal(err)
			}
			p := parked[0]
			if !reflect.DeepEqual(p.NotificationIDs, tt.ids) || !strings.Contains(p.Problem, tt.wantProblem) || (tt.wantProblem == "") != (p.Problem == "") {
				t.Errorf("ids %v problem %q; want %v %q", p.NotificationIDs, p.Problem, tt.ids, tt.wantProblem)
			}
			if len(tt.ids) > 0 && (p.Condition != "RetryAttemptsExhausted" || p.Batch.ShardID != "shard-1") {
				t.Errorf("record %+v", p)
			}
		})
	}
}

func TestRedriveMessageByMessage(t *testing.T) {
	tests := []struct {
		name   string
		status domain.Status
		reason domain.Reason
		action Action
		// after is the delivery status once redriven.
		after domain.Status
	}{
		{"exhausted is reset and sent again", domain.StatusFailed, domain.ReasonExhausted, ActionRequeue, domain.StatusQueued},
		{"retrying is reset", domain.StatusRetrying, "", ActionRequeue, domain.StatusQueued},
		{"permanent failure is not reset", domain.StatusFailed, domain.ReasonRejected, ActionMove, domain.StatusFailed},
		{"sent is a duplicate", domain.StatusSent, "", ActionMove, domain.StatusSent},
		{"cancelled drop stays dropped", domain.StatusDropped, domain.ReasonCancelled, ActionMove, domain.StatusDropped},
		{"queued is moved", domain.StatusQueued, "", ActionMove, domain.StatusQueued},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv()
			e.parkDelivery("n1", domain.ChannelEmail, domain.PriorityHigh, tt.status, tt.reason, 6, "Throttling")
			res, err := e.op.Redrive(ctx, "email", RedriveOptions{All: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Items) != 1 || res.Items[0].Action != tt.action || !res.Items[0].Done || res.Task != nil {
				t.Fatalf("result %+v", res)
			}
			if got := e.store.delivery("n1", domain.ChannelEmail).Status; got != tt.after {
				t.Errorf("delivery %s, want %s", got, tt.after)
			}
			if got := e.sqs.bodies(emailHigh); len(got) != 1 || got[0] != `{"notificationId":"n1","channel":"email"}` {
				t.Errorf("email-high holds %v", got)
			}
			if n := len(e.sqs.bodies(emailDLQ)); n != 0 {
				t.Errorf("DLQ still holds %d", n)
			}
		})
	}
}

func TestRedriveSelectionDryRunAndLeftovers(t *testing.T) {
	e := newEnv()
	e.parkDelivery("n1", domain.ChannelEmail, domain.PriorityHigh, domain.StatusFailed, domain.ReasonExhausted, 6, "Throttling")
	e.parkDelivery("n2", domain.ChannelEmail, domain.PriorityLow, domain.StatusFailed, domain.ReasonExhausted, 6, "Throttling")
	e.sqs.park(emailDLQ, emailHigh, "garbage", 6, t0)

	// Dry run: a plan, no change.
	res, err := e.op.Redrive(ctx, "email", RedriveOptions{All: true, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Count(ActionRequeue) != 2 || res.Count(ActionLeave) != 1 || len(e.store.transitions) != 0 || len(e.sqs.bodies(emailDLQ)) != 3 || e.sqs.visible(emailDLQ) != 3 {
		t.Fatalf("dry run changed something or planned wrong: %+v, transitions %v", res, e.store.transitions)
	}

	// --id selects one; the others stay visible in the DLQ.
	res, err = e.op.Redrive(ctx, "email", RedriveOptions{IDs: []string{"n2"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 || res.Items[0].NotificationID != "n2" || !res.Items[0].Done || res.Items[0].Priority != "low" {
		t.Fatalf("result %+v", res)
	}
	if len(e.sqs.bodies(emailLow)) != 1 || len(e.sqs.bodies(emailHigh)) != 0 || e.sqs.visible(emailDLQ) != 2 {
		t.Errorf("low %v high %v dlq visible %d", e.sqs.bodies(emailLow), e.sqs.bodies(emailHigh), e.sqs.visible(emailDLQ))
	}

	// An id that is not parked is an error naming it.
	if _, err := e.op.Redrive(ctx, "email", RedriveOptions{IDs: []string{"n1", "zzz"}}); !errors.Is(err, ErrNotInDLQ) || !strings.Contains(err.Error(), "zzz") {
		t.Errorf("missing id: %v", err)
	}
	// The malformed message is left (nothing to send it back to).
	res, err = e.op.Redrive(ctx, "email", RedriveOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Count(ActionLeave) != 1 || !strings.Contains(res.Items[0].Note, "malformed") || len(e.sqs.bodies(emailDLQ)) != 1 || e.sqs.visible(emailDLQ) != 1 {
		t.Errorf("leftover %+v, DLQ %v", res, e.sqs.bodies(emailDLQ))
	}
}

func TestRedriveArgumentErrors(t *testing.T) {
	e := newEnv()
	e.parkDelivery("n1", domain.ChannelEmail, domain.PriorityHigh, domain.StatusFailed, domain.ReasonExhausted, 6, "x")
	for _, opts := range []RedriveOptions{{}, {All: true, IDs: []string{"n1"}}, {All: true, Rate: -1}} {
		if _, err := e.op.Redrive(ctx, "email", opts); err == nil {
			t.Errorf("%+v: no error", opts)
		}
	}
	if _, err := e.op.Redrive(ctx, "sms", RedriveOptions{All: true}); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty DLQ: %v", err)
	}
}

func TestRedriveSendFailureRestoresDelivery(t *testing.T) {
	e := newEnv()
	e.parkDelivery("n1", domain.ChannelEmail, domain.PriorityHigh, domain.StatusFailed, domain.ReasonExhausted, 6, "Throttling")
	e.sqs.failSend = &smithy.GenericAPIError{Code: "AccessDenied"}
	res, err := e.op.Redrive(ctx, "email", RedriveOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if f := res.Failed(); len(f) != 1 || !strings.Contains(f[0].Error, "AccessDenied") {
		t.Fatalf("failed items %+v", f)
	}
	d := e.store.delivery("n1", domain.ChannelEmail)
	if d.Status != domain.StatusFailed || d.Reason != domain.ReasonExhausted || d.LastError != "Throttling" {
		t.Errorf("delivery not restored: %+v", d)
	}
	if e.sqs.visible(emailDLQ) != 1 {
		t.Error("message must stay in the DLQ, visible")
	}
}

func TestRedriveRate(t *testing.T) {
	e := newEnv()
	for i := range 5 {
		e.parkDelivery(fmt.Sprintf("n%d", i), domain.ChannelEmail, domain.PriorityHigh, domain.StatusFailed, domain.ReasonExhausted, 6, "x")
	}
	if _, err := e.op.Redrive(ctx, "email", RedriveOptions{All: true, Rate: 2}); err != nil {
		t.Fatal(err)
	}
	// Five messages at 2/s: the first at once, then one every 500 ms.
	if e.clock.slept != 2*time.Second {
		t.Errorf("slept %s, want 2s", e.clock.slept)
	}
}

func TestRedriveWithMoveTask(t *testing.T) {
	e := newEnv()
	e.sqs.moveTasks = true
	e.parkDelivery("n1", domain.ChannelEmail, domain.PriorityHigh, domain.StatusFailed, domain.ReasonExhausted, 6, "Throttling")
	e.parkDelivery("n2", domain.ChannelEmail, domain.PriorityLow, domain.StatusSent, "", 1, "")
	var progress []MoveTask
	res, err := e.op.Redrive(ctx, "email", RedriveOptions{All: true, Rate: 3, OnTask: func(m MoveTask) { progress = append(progress, m) }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Task == nil || res.Task.Status != "COMPLETED" || res.Task.Moved != 2 || len(progress) == 0 {
		t.Fatalf("task %+v, progress %v", res.Task, progress)
	}
	if aws.ToInt32(e.sqs.tasks[0].MaxNumberOfMessagesPerSecond) != 3 {
		t.Errorf("rate not passed to SQS: %v", e.sqs.tasks[0].MaxNumberOfMessagesPerSecond)
	}
	if e.store.delivery("n1", domain.ChannelEmail).Status != domain.StatusQueued || e.store.delivery("n2", domain.ChannelEmail).Status != domain.StatusSent {
		t.Errorf("transitions %v", e.store.transitions)
	}
	if len(e.sqs.bodies(emailHigh)) != 1 || len(e.sqs.bodies(emailLow)) != 1 || len(e.sqs.bodies(emailDLQ)) != 0 {
		t.Error("messages not moved to their source queues")
	}
	if res.Count(ActionRequeue) != 1 || res.Count(ActionMove) != 1 {
		t.Errorf("items %+v", res.Items)
	}

	// One task per queue at a time.
	e.parkDelivery("n3", domain.ChannelEmail, domain.PriorityHigh, domain.StatusFailed, domain.ReasonExhausted, 6, "x")
	e.sqs.runTask = true
	if _, err := e.op.Redrive(ctx, "email", RedriveOptions{All: true}); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("running task: %v", err)
	}
	if e.store.delivery("n3", domain.ChannelEmail).Status != domain.StatusFailed {
		t.Error("nothing may change while another task runs")
	}
}

func TestRedriveRelay(t *testing.T) {
	seq := func(n int) string { return fmt.Sprintf("%021d", n) }
	tests := []struct {
		name        string
		opts        RedriveOptions
		fail        map[string]error
		noNotes     bool
		wantCalls   []string
		wantDLQ     int
		wantErrItem bool
	}{
		{"every notification of the batch", RedriveOptions{All: true}, nil, false, []string{"a", "b"}, 0, false},
		{"a failure keeps the record", RedriveOptions{All: true}, map[string]error{"b": errors.New("throttled")}, false, []string{"a", "b"}, 1, true},
		{"a notification gone is nothing to plan", RedriveOptions{All: true}, map[string]error{"a": fmt.Errorf("x: %w", domain.ErrNotFound)}, false, []string{"a", "b"}, 0, false},
		{"one id of the batch: the record stays", RedriveOptions{IDs: []string{"b"}}, nil, false, []string{"b"}, 1, false},
		{"ids not in the DLQ are planned from the table", RedriveOptions{IDs: []string{"zzz"}}, nil, false, []string{"zzz"}, 1, false},
		{"a batch without notes is left", RedriveOptions{All: true}, nil, true, nil, 1, false},
		{"dry run", RedriveOptions{All: true, DryRun: true}, nil, false, nil, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv()
			e.op.Failures = relayNotes()
			if tt.noNotes {
				e.op.Failures = &fakeNotes{}
			}
			e.replan.fail = tt.fail
			e.sqs.park(relayDLQ, "", onFailureBody(seq(2), seq(5)), 0, t0)
			res, err := e.op.Redrive(ctx, "relay", tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(e.replan.calls, tt.wantCalls) {
				t.Errorf("replanned %v, want %v", e.replan.calls, tt.wantCalls)
			}
			if n := len(e.sqs.bodies(relayDLQ)); n != tt.wantDLQ || e.sqs.visible(relayDLQ) != n {
				t.Errorf("relay DLQ holds %d (visible %d), want %d", n, e.sqs.visible(relayDLQ), tt.wantDLQ)
			}
			if (len(res.Failed()) > 0) != tt.wantErrItem {
				t.Errorf("items %+v", res.Items)
			}
		})
	}
}

func TestPurge(t *testing.T) {
	e := newEnv()
	e.parkDelivery("n1", domain.ChannelEmail, domain.PriorityHigh, domain.StatusFailed, domain.ReasonExhausted, 6, "x")
	if _, n, err := e.op.Purge(ctx, "email"); err != nil || n != 1 || len(e.sqs.bodies(emailDLQ)) != 0 {
		t.Errorf("purge: %d, %v", n, err)
	}
	if _, _, err := e.op.Purge(ctx, "email"); !errors.Is(err, ErrEmpty) {
		t.Errorf("purge of an empty DLQ: %v", err)
	}
}

// TestReleaseDLQ: a release DLQ message names a due partition; show tells
// whether it still holds due deliveries, redrive sends it back to the
// release queue (selected by message id or all) and leaves a malformed one.
func TestReleaseDLQ(t *testing.T) {
	e := newEnv()
	due := recovery.DuePartition{Bucket: time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC), Shard: 7}
	done := recovery.DuePartition{Bucket: due.Bucket, Shard: 21}
	e.store.due = map[recovery.DuePartition]bool{due: true}
	body := func(p recovery.DuePartition) string {
		return fmt.Sprintf(`{"bucket":%q,"shard":%d}`, p.Bucket.Format(time.RFC3339), p.Shard)
	}
	mDue := e.sqs.park(releaseDLQ, releaseQueue, body(due), 3, t0.Add(-5*time.Minute))
	mDone := e.sqs.park(releaseDLQ, releaseQueue, body(done), 3, t0.Add(-4*time.Minute))
	mBad := e.sqs.park(releaseDLQ, releaseQueue, `{"bucket":"x"}`, 3, t0.Add(-3*time.Minute))

	q, parked, err := e.op.Show(ctx, "release", 10)
	if err != nil || q.Name != ReleaseDLQName || len(parked) != 3 {
		t.Fatalf("show: %v %v %+v", err, q, parked)
	}
	byID := map[string]Parked{}
	for _, p := range parked {
		byID[p.MessageID] = p
	}
	if p := byID[mDue]; p.Partition == nil || *p.Partition != due || p.StillDue == nil || !*p.StillDue || p.Receives != 3 {
		t.Errorf("due partition: %+v", p)
	}
	if p := byID[mDone]; p.Partition == nil || *p.Partition != done || p.StillDue == nil || *p.StillDue {
		t.Errorf("released partition: %+v", p)
	}
	if p := byID[mBad]; p.Partition != nil || !strings.Contains(p.Problem, "malformed") {
		t.Errorf("malformed: %+v", p)
	}

	res, err := e.op.Redrive(ctx, "release", RedriveOptions{All: true, DryRun: true})
	if err != nil || res.Count(ActionRelease) != 2 || res.Count(ActionLeave) != 1 || len(e.sqs.bodies(releaseQueue)) != 0 {
		t.Fatalf("dry run: %v %+v, release queue %v", err, res.Items, e.sqs.bodies(releaseQueue))
	}
	if _, err := e.op.Redrive(ctx, "release", RedriveOptions{IDs: []string{"m-nope"}}); !errors.Is(err, ErrNotInDLQ) {
		t.Errorf("unknown message id: %v, want ErrNotInDLQ", err)
	}
	res, err = e.op.Redrive(ctx, "release", RedriveOptions{IDs: []string{mDue}})
	if err != nil || res.Count(ActionRelease) != 1 || res.Items[0].Partition != "DUE#2026030108#7" || !res.Items[0].Done {
		t.Fatalf("redrive by id: %v %+v", err, res.Items)
	}
	if got := e.sqs.bodies(releaseQueue); !reflect.DeepEqual(got, []string{body(due)}) {
		t.Errorf("release queue after redrive by id: %v", got)
	}
	res, err = e.op.Redrive(ctx, "release", RedriveOptions{All: true})
	if err != nil || res.Count(ActionRelease) != 1 || res.Count(ActionLeave) != 1 {
		t.Fatalf("redrive all: %v %+v", err, res.Items)
	}
	if got := e.sqs.bodies(releaseQueue); !reflect.DeepEqual(got, []string{body(due), body(done)}) {
		t.Errorf("release queue: %v", got)
	}
	if got := e.sqs.bodies(releaseDLQ); !reflect.DeepEqual(got, []string{`{"bucket":"x"}`}) {
		t.Errorf("left in the DLQ: %v, want only the malformed message", got)
	}
}

// TestCampaignDLQ: a campaign DLQ message is one step of a campaign; show
// names the campaign, the step and its place and the campaign's status,
// redrive sends steps back to the campaign queue unchanged (selected by
// message id, campaign id or all; a finished campaign's step is sent too, with
// a note) and leaves a malformed one.
func TestCampaignDLQ(t *testing.T) {
	e := newEnv()
	e.store.campaigns = map[string]domain.CampaignStatus{"c-run": domain.CampaignRunning, "c-done": domain.CampaignDone, "c-cancel": domain.CampaignCancelled}
	const (
		plan      = `{"kind":"plan","campaignId":"c-run"}`
		lot       = `{"kind":"lot","campaignId":"c-run","chunk":"0007"}`
		scan      = `{"kind":"scan","campaignId":"c-done","segment":0,"segments":4,"page":2,"after":"u-private-99"}`
		reconcile = `{"kind":"reconcile","campaignId":"c-cancel","chunk":"0001"}`
		gone      = `{"kind":"plan","campaignId":"c-gone"}`
		bad       = `{"kind":"lot","campaignId":"c-run"}`
	)
	ids := map[string]string{}
	for i, b := range []string{plan, lot, scan, reconcile, gone, bad} {
		ids[b] = e.sqs.park(campaignDLQ, campaignQ, b, 3, t0.Add(time.Duration(i-10)*time.Minute))
	}

	q, parked, err := e.op.Show(ctx, "campaign", 10)
	if err != nil || q.Name != CampaignDLQName || len(parked) != 6 {
		t.Fatalf("show: %v %v %+v", err, q, parked)
	}
	if e.store.campaignReads != 4 {
		t.Errorf("show read campaigns %d times, want once per campaign (4)", e.store.campaignReads)
	}
	byID := map[string]Parked{}
	for _, p := range parked {
		byID[p.MessageID] = p
	}
	seg := 0
	wantSteps := []struct {
		body    string
		step    *CampaignStep
		problem string
	}{
		{plan, &CampaignStep{CampaignID: "c-run", Kind: "plan", CampaignStatus: "running"}, ""},
		{lot, &CampaignStep{CampaignID: "c-run", Kind: "lot", Chunk: "0007", CampaignStatus: "running"}, ""},
		{scan, &CampaignStep{CampaignID: "c-done", Kind: "scan", Segment: &seg, Segments: 4, Page: 2, CampaignStatus: "done"}, ""},
		{reconcile, &CampaignStep{CampaignID: "c-cancel", Kind: "reconcile", Chunk: "0001", CampaignStatus: "cancelled"}, ""},
		{gone, &CampaignStep{CampaignID: "c-gone", Kind: "plan"}, "no longer stored"},
		{bad, nil, "malformed"},
	}
	for _, w := range wantSteps {
		p := byID[ids[w.body]]
		if !reflect.DeepEqual(p.Campaign, w.step) || (w.problem == "") != (p.Problem == "") || !strings.Contains(p.Problem, w.problem) || p.Receives != 3 {
			t.Errorf("%s: campaign %+v problem %q, want %+v %q", w.body, p.Campaign, p.Problem, w.step, w.problem)
		}
	}
	if got := (CampaignStep{Segment: &seg, Segments: 4, Page: 2}).Place(); got != "segment 0 of 4, page 2" {
		t.Errorf("scan place %q", got)
	}

	res, err := e.op.Redrive(ctx, "campaign", RedriveOptions{All: true, DryRun: true})
	if err != nil || res.Count(ActionResend) != 5 || res.Count(ActionLeave) != 1 || len(e.sqs.bodies(campaignQ)) != 0 {
		t.Fatalf("dry run: %v %+v, campaign queue %v", err, res.Items, e.sqs.bodies(campaignQ))
	}
	notes := map[string]string{}
	for _, it := range res.Items {
		notes[it.MessageID] = it.Note
	}
	for body, want := range map[string]string{plan: "runs again", scan: "campaign done: the step does nothing", reconcile: "campaign cancelled: the step does nothing",
		gone: "no longer stored", bad: "purge"} {
		if !strings.Contains(notes[ids[body]], want) {
			t.Errorf("note for %s: %q, want %q", body, notes[ids[body]], want)
		}
	}
	if _, err := e.op.Redrive(ctx, "campaign", RedriveOptions{IDs: []string{"m-nope"}}); !errors.Is(err, ErrNotInDLQ) {
		t.Errorf("unknown id: %v, want ErrNotInDLQ", err)
	}

	// By campaign id: both of c-run's steps, bodies unchanged; by message id: one.
	res, err = e.op.Redrive(ctx, "campaign", RedriveOptions{IDs: []string{"c-run", ids[scan]}})
	if err != nil || res.Count(ActionResend) != 3 || res.Count(ActionLeave) != 0 {
		t.Fatalf("redrive by id: %v %+v", err, res.Items)
	}
	for _, it := range res.Items {
		if !it.Done || it.Campaign == nil {
			t.Errorf("item %+v", it)
		}
	}
	if got := e.sqs.bodies(campaignQ); !reflect.DeepEqual(got, []string{plan, lot, scan}) {
		t.Errorf("campaign queue after redrive by id: %v", got)
	}

	// All, paced: the rest go back, the malformed body stays.
	res, err = e.op.Redrive(ctx, "campaign", RedriveOptions{All: true, Rate: 2})
	if err != nil || res.Count(ActionResend) != 2 || res.Count(ActionLeave) != 1 {
		t.Fatalf("redrive all: %v %+v", err, res.Items)
	}
	if e.clock.slept < 500*time.Millisecond {
		t.Errorf("two sends at 2/s slept %v, want ≥ 500ms", e.clock.slept)
	}
	if got := e.sqs.bodies(campaignQ); !reflect.DeepEqual(got, []string{plan, lot, scan, reconcile, gone}) {
		t.Errorf("campaign queue: %v", got)
	}
	if got := e.sqs.bodies(campaignDLQ); !reflect.DeepEqual(got, []string{bad}) {
		t.Errorf("left in the DLQ: %v, want only the malformed message", got)
	}
	if _, n, err := e.op.Purge(ctx, "campaign"); err != nil || n != 1 {
		t.Errorf("purge: %d %v", n, err)
	}
}

// TestCampaignDLQTableError: a table error while reading a campaign's status
// stops show and redrive, and nothing is sent.
func TestCampaignDLQTableError(t *testing.T) {
	e := newEnv()
	e.store.failCampaign = errors.New("ProvisionedThroughputExceeded")
	e.sqs.park(campaignDLQ, campaignQ, `{"kind":"plan","campaignId":"c1"}`, 3, t0)
	if _, _, err := e.op.Show(ctx, "campaign", 10); err == nil || !strings.Contains(err.Error(), "ProvisionedThroughputExceeded") {
		t.Errorf("show: %v", err)
	}
	if _, err := e.op.Redrive(ctx, "campaign", RedriveOptions{All: true}); err == nil {
		t.Error("redrive: no error")
	}
	if len(e.sqs.bodies(campaignQ)) != 0 || len(e.sqs.bodies(campaignDLQ)) != 1 || e.sqs.visible(campaignDLQ) != 1 {
		t.Errorf("campaign queue %v, DLQ %v (visible %d)", e.sqs.bodies(campaignQ), e.sqs.bodies(campaignDLQ), e.sqs.visible(campaignDLQ))
	}
}

// A channel sent at once has no delivery item until a worker's claim: its
// parked message (say, the table was unavailable for every receive) is a
// never-claimed queued delivery, moved back for the worker to claim; a
// channel the notification does not name is left.
func TestRedriveNeverClaimedChannel(t *testing.T) {
	e := newEnv()
	e.parkDelivery("n1", domain.ChannelEmail, domain.PriorityHigh, domain.StatusQueued, "", 0, "")
	e.store.deliveries = storetest.NewMemDeliveries(nil) // no item: never claimed
	e.store.notifications["n1"].Channels = []domain.Channel{domain.ChannelEmail}
	res, err := e.op.Redrive(ctx, "email", RedriveOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 || res.Items[0].Action != ActionMove || !res.Items[0].Done || res.Items[0].Status != "queued" {
		t.Fatalf("result %+v, want the never-claimed delivery moved back as queued", res)
	}
	if got := e.sqs.bodies(emailHigh); len(got) != 1 {
		t.Errorf("email-high holds %v, want the message", got)
	}
	e2 := newEnv()
	e2.parkDelivery("n2", domain.ChannelEmail, domain.PriorityHigh, domain.StatusQueued, "", 0, "")
	e2.store.deliveries = storetest.NewMemDeliveries(nil)
	e2.store.notifications["n2"].Channels = []domain.Channel{domain.ChannelPush}
	res, err = e2.op.Redrive(ctx, "email", RedriveOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 || res.Items[0].Action != ActionLeave || !strings.Contains(res.Items[0].Note, "has no email delivery") {
		t.Errorf("result %+v, want an unplanned channel left", res)
	}
}

// TestRedriveAllReadsUntilEmpty: --all looks at every message the DLQ
// holds, also those another reader holds for a while when it starts (an
// inspection, an operator's console): an empty receive does not end it
// while fewer messages were seen than the DLQ held; it waits for them (at
// most the hold an inspection takes), for every kind of DLQ.
func TestRedriveAllReadsUntilEmpty(t *testing.T) {
	for _, name := range []string{"campaign", "email"} {
		t.Run(name, func(t *testing.T) {
			e := newEnv()
			q, _ := e.op.Target.DLQ(name)
			for i := range 40 {
				e.sqs.park(q.URL, campaignQ, fmt.Sprintf(`{"kind":"plan","campaignId":"c-%02d"}`, i), 3, t0.Add(-time.Hour))
			}
			// Another reader holds 9 of them for 20 seconds.
			if _, err := e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.URL), MaxNumberOfMessages: 9, VisibilityTimeout: 20}); err != nil {
				t.Fatal(err)
			}
			res, err := e.op.Redrive(ctx, name, RedriveOptions{All: true, DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Items) != 40 || res.Unseen != 0 {
				t.Errorf("looked at %d of 40 (unseen %d)", len(res.Items), res.Unseen)
			}
			// Held longer than an inspection's hold: the run ends, and says
			// how many it did not see.
			e.clock.Sleep(ctx, time.Minute)
			if _, err := e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.URL), MaxNumberOfMessages: 9, VisibilityTimeout: 3600}); err != nil {
				t.Fatal(err)
			}
			res, err = e.op.Redrive(ctx, name, RedriveOptions{All: true, DryRun: true})
			if err != nil || len(res.Items) != 31 || res.Unseen != 9 {
				t.Errorf("9 held for an hour: %v, looked at %d, unseen %d; want 31 and 9", err, len(res.Items), res.Unseen)
			}
		})
	}
}
