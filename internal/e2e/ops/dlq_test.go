package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/ops"
	"github.com/heraldhq/herald/internal/policy"
)

// parkExhausted creates a real notification for addr, held back by sendAt,
// then gives its email delivery the history the worker writes when retries
// run out (three transient failures, failed: exhausted) and parks its work
// message in the email DLQ, as SQS's redrive does after maxReceiveCount.
func parkExhausted(t *testing.T, addr string) string {
	t.Helper()
	st := stacktest.Stack(t)
	ctx := context.Background()
	id := stacktest.Notify(t, map[string]any{
		"type": "invoice.payment_failed", "channels": []string{"email"},
		"recipient": map[string]any{"userId": stacktest.UniqueID("u"), "email": addr},
		"data":      map[string]any{"invoiceUrl": "https://example.com/i/77"},
		"sendAt":    st.Clock.Now().Add(time.Hour).UTC().Format(time.RFC3339),
	})
	delivery(t, id, domain.ChannelEmail, "the delivery deferred", status(domain.StatusDeferred, domain.ReasonScheduled))
	s := stacktest.Store(t)
	now := st.Clock.Now()
	steps := []domain.Change{{To: domain.StatusPlanned, From: []domain.Status{domain.StatusDeferred}}}
	for range 3 {
		steps = append(steps,
			domain.Change{To: domain.StatusSending, From: []domain.Status{domain.StatusPlanned, domain.StatusRetrying}, LeaseUntil: now.Add(time.Minute), IncrementAttempts: true},
			domain.Change{To: domain.StatusRetrying, From: []domain.Status{domain.StatusSending}, LastError: "Throttling"})
	}
	steps[len(steps)-1] = domain.Change{To: domain.StatusFailed, From: []domain.Status{domain.StatusSending}, Reason: domain.ReasonExhausted, LastError: "Throttling"}
	for _, c := range steps {
		if _, err := s.Transition(ctx, id, domain.ChannelEmail, c); err != nil {
			t.Fatalf("transition to %s: %v", c.To, err)
		}
	}
	_, err := sqs.NewFromConfig(st.AWS).SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(st.Resources.Queues["EmailDLQ"].URL), MessageBody: aws.String(`{"notificationId":"` + id + `","channel":"email"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func depth(t *testing.T, name string) ops.QueueStatus {
	t.Helper()
	var qs []ops.QueueStatus
	heraldJSON(t, &qs, "list")
	for _, q := range qs {
		if q.Name == name {
			return q
		}
	}
	t.Fatalf("no %s DLQ in %+v", name, qs)
	return ops.QueueStatus{}
}

// TestDLQRedriveDeliversOnce is the acceptance scenario: a delivery
// parked in the email DLQ is listed, shown with its notification and last
// error, and redriven: sent exactly once, DLQ empty.
func TestDLQRedriveDeliversOnce(t *testing.T) {
	addr := "dlq-" + stacktest.UniqueID("r") + "@example.com"
	id := parkExhausted(t, addr)

	if q := depth(t, "email"); q.Depth != 1 || q.Channel != "email" || q.Queue != "herald-EmailDLQ" {
		t.Fatalf("list: %+v", q)
	}
	var parked []ops.Parked
	heraldJSON(t, &parked, "show", "email")
	if len(parked) != 1 {
		t.Fatalf("show: %+v", parked)
	}
	p := parked[0]
	if p.NotificationID != id || p.LastError != "Throttling" || p.Status != "failed" || p.Reason != "exhausted" ||
		p.Attempts != 3 || p.Type != "invoice.payment_failed" || p.Priority != "high" || p.SentAt.IsZero() {
		t.Errorf("show: %+v", p)
	}
	out, err := herald(t, "show", "email")
	if err != nil || !strings.Contains(out, id) || !strings.Contains(out, "Throttling") || strings.Contains(out, addr) {
		t.Errorf("show (text): %v\n%s", err, out)
	}
	if q := depth(t, "email"); q.Depth != 1 {
		t.Fatalf("show must leave the message in the DLQ: %+v", q)
	}

	var res ops.RedriveResult
	heraldJSON(t, &res, "redrive", "email", "--all")
	if res.Task != nil {
		t.Errorf("the local SQS has no message move tasks, yet a task was reported: %+v", res.Task)
	}
	if len(res.Items) != 1 || res.Items[0].Action != ops.ActionRequeue || !res.Items[0].Done {
		t.Fatalf("redrive: %+v", res)
	}
	var mails []stacktest.Email
	stacktest.Eventually(t, 20*time.Second, "the redriven email", func() bool {
		mails = stacktest.EmailsTo(t, addr)
		return len(mails) > 0
	})
	d := delivery(t, id, domain.ChannelEmail, "the delivery sent", status(domain.StatusSent, ""))
	if d.Attempts != 4 {
		t.Errorf("attempts %d, want 4 (three before the DLQ, one after)", d.Attempts)
	}
	time.Sleep(time.Second)
	if n := len(stacktest.EmailsTo(t, addr)); n != 1 {
		t.Errorf("%d emails, want exactly 1", n)
	}
	if q := depth(t, "email"); q.Depth != 0 {
		t.Errorf("DLQ not empty: %+v", q)
	}
	if out, err := herald(t, "redrive", "email", "--all"); err != nil || !strings.Contains(out, "is empty") {
		t.Errorf("redrive of the empty DLQ: %v %s", err, out)
	}
}

// TestDLQRedriveOfCancelledNotification: the redriven message reaches the
// worker, whose recheck drops it.
func TestDLQRedriveOfCancelledNotification(t *testing.T) {
	st := stacktest.Stack(t)
	addr := "dlq-" + stacktest.UniqueID("c") + "@example.com"
	id := parkExhausted(t, addr)
	// Cancel as DELETE /v1/notifications/{id} does: the notification's status.
	_, err := dynamodb.NewFromConfig(st.AWS).UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName:                aws.String(st.Resources.Table),
		Key:                      map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: dynamo.NotificationPK(id)}, "sk": &ddbtypes.AttributeValueMemberS{Value: "N"}},
		UpdateExpression:         aws.String("SET #s = :c"),
		ExpressionAttributeNames: map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":c": &ddbtypes.AttributeValueMemberS{Value: string(domain.NotificationCancelled)},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := herald(t, "redrive", "email", "--id", id)
	if err != nil || !strings.Contains(out, "requeued") {
		t.Fatalf("redrive: %v\n%s", err, out)
	}
	delivery(t, id, domain.ChannelEmail, "the delivery dropped: cancelled", status(domain.StatusDropped, domain.ReasonCancelled))
	time.Sleep(500 * time.Millisecond)
	if n := len(stacktest.EmailsTo(t, addr)); n != 0 {
		t.Errorf("%d emails for a cancelled notification", n)
	}
	if q := depth(t, "email"); q.Depth != 0 {
		t.Errorf("DLQ not empty: %+v", q)
	}
}

// TestRelayDLQRedrive: the relay fails on a notification every time (its
// user's profile item is corrupt), so the mapping gives up and parks
// Lambda's on-failure record (shard and sequence numbers only) in the relay
// DLQ. `herald dlq show relay` names the notification from the relay's
// failure note and, once the profile is fixed, `redrive relay` re-runs the
// relay's planning: the email goes out once. Neither command calls DynamoDB
// Streams (the stream's shards have their two readers already).
func TestRelayDLQRedrive(t *testing.T) {
	st := stacktest.Stack(t)
	ctx := context.Background()
	db := dynamodb.NewFromConfig(st.AWS)
	user := stacktest.UniqueID("u")
	addr := "relay-" + stacktest.UniqueID("r") + "@example.com"
	profile := map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: dynamo.UserPK(user)}, "sk": &ddbtypes.AttributeValueMemberS{Value: "PROFILE"}}
	corrupt := map[string]ddbtypes.AttributeValue{"kind": &ddbtypes.AttributeValueMemberS{Value: "user"}, "email": &ddbtypes.AttributeValueMemberBOOL{Value: true}}
	maps.Copy(corrupt, profile)
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(st.Resources.Table), Item: corrupt}); err != nil {
		t.Fatal(err)
	}
	id := stacktest.Notify(t, map[string]any{
		"type": "reservation.approved", "channels": []string{"email"},
		"recipient": map[string]any{"userId": user}, "data": map[string]any{"reservationUrl": "https://example.com/r/78"},
	})
	stacktest.Eventually(t, 60*time.Second, "the relay's on-failure record in the relay DLQ", func() bool { return depth(t, "relay").Depth == 1 })

	calls := devstack.NewCalls()
	var parked []ops.Parked
	out, err := heraldCounted(t, calls, "show", "relay", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(out), &parked); err != nil {
		t.Fatalf("show relay --json: %v\n%s", err, out)
	}
	if len(parked) != 1 || !slices.Equal(parked[0].NotificationIDs, []string{id}) || parked[0].Condition != "RetryAttemptsExhausted" || parked[0].Batch == nil {
		t.Fatalf("show relay: %+v", parked)
	}
	if _, ds, err := stacktest.Store(t).GetNotificationWithDeliveries(ctx, id); err != nil || len(ds) != 0 {
		t.Fatalf("deliveries before the redrive: %+v, %v", ds, err)
	}

	// The fix: a valid profile with an address.
	if _, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(st.Resources.Table), Key: profile}); err != nil {
		t.Fatal(err)
	}
	if err := stacktest.Store(t).PutUser(ctx, &domain.User{ID: user, Email: addr}); err != nil {
		t.Fatal(err)
	}
	out, err = heraldCounted(t, calls, "redrive", "relay", "--all")
	if err != nil || !strings.Contains(out, "replanned") {
		t.Fatalf("redrive relay: %v\n%s", err, out)
	}
	stacktest.Eventually(t, 20*time.Second, "the email planned by the redrive", func() bool { return len(stacktest.EmailsTo(t, addr)) > 0 })
	delivery(t, id, domain.ChannelEmail, "the delivery sent", status(domain.StatusSent, ""))
	if q := depth(t, "relay"); q.Depth != 0 {
		t.Errorf("relay DLQ not empty: %+v", q)
	}
	used := calls.Snapshot()
	if used["DynamoDB.Query"] == 0 || used["SQS.ReceiveMessage"] == 0 {
		t.Errorf("the commands' calls were not counted: %v", used)
	}
	for op := range used {
		if strings.HasPrefix(op, "DynamoDB Streams.") {
			t.Errorf("herald dlq called %s %d times: the stream has its two readers already", op, used[op])
		}
	}
	// Re-planning again is harmless: nothing new is sent.
	if out, err := herald(t, "redrive", "relay", "--id", id); err != nil || !strings.Contains(out, "replanned") {
		t.Errorf("second re-plan: %v\n%s", err, out)
	}
	time.Sleep(time.Second)
	if n := len(stacktest.EmailsTo(t, addr)); n != 1 {
		t.Errorf("%d emails, want 1", n)
	}
}

// TestRelayRedriveUsesTheDeployedLimits: this stack's relay sends emails
// without a rate limit (EmailRateLimit 0, not the default five a minute). A
// relay redrive re-plans with the deployed relay's configuration, so a user
// who already has five emails counted in this minute still gets the
// re-planned one; a relay built with the defaults would skip it as
// rate_limited.
func TestRelayRedriveUsesTheDeployedLimits(t *testing.T) {
	st := stacktest.Stack(t)
	ctx := context.Background()
	user := stacktest.UniqueID("u")
	addr := "limits-" + stacktest.UniqueID("r") + "@example.com"
	// No address yet: the relay records skipped: no_contact.
	id := stacktest.Notify(t, map[string]any{
		"type": "reservation.approved", "channels": []string{"email"},
		"recipient": map[string]any{"userId": user}, "data": map[string]any{"reservationUrl": "https://example.com/r/1"},
	})
	delivery(t, id, domain.ChannelEmail, "the delivery skipped", status(domain.StatusSkipped, domain.ReasonNoContact))
	// Undo the relay's work and fix the cause; fill the user's default-sized
	// email window (this minute and the next, should the minute turn).
	_, err := dynamodb.NewFromConfig(st.AWS).DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(st.Resources.Table),
		Key:       map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: dynamo.NotificationPK(id)}, "sk": &ddbtypes.AttributeValueMemberS{Value: "D#email"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := stacktest.Store(t)
	if err := s.PutUser(ctx, &domain.User{ID: user, Email: addr}); err != nil {
		t.Fatal(err)
	}
	def := policy.DefaultLimits()
	for _, w := range []time.Time{def.WindowStart(time.Now()), def.WindowStart(time.Now()).Add(def.Window)} {
		for i := range def.For(domain.ChannelEmail) {
			if ok, err := s.CountDelivery(ctx, user, domain.ChannelEmail, w, def.Window, def.For(domain.ChannelEmail), fmt.Sprintf("earlier-%d", i)); err != nil || !ok {
				t.Fatalf("count earlier email %d: %v, %v", i, ok, err)
			}
		}
	}

	if out, err := herald(t, "redrive", "relay", "--id", id); err != nil || !strings.Contains(out, "replanned") {
		t.Fatalf("redrive relay: %v\n%s", err, out)
	}
	if d := delivery(t, id, domain.ChannelEmail, "the re-planned delivery settled", func(d domain.Delivery) bool {
		return d.Status == domain.StatusSent || d.Status == domain.StatusSkipped
	}); d.Status != domain.StatusSent {
		t.Fatalf("re-planned delivery %s (%s), want sent: the redrive's relay did not plan with the deployed limits", d.Status, d.Reason)
	}
	stacktest.Eventually(t, 20*time.Second, "the email", func() bool { return len(stacktest.EmailsTo(t, addr)) == 1 })
}
