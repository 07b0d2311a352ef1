package workers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
)

const settle = 20 * time.Second

// reservation is a normal-priority, non-mandatory notification on channels.
func reservation(user string, channels []string, recipient map[string]any) map[string]any {
	r := map[string]any{"userId": user}
	for k, v := range recipient {
		r[k] = v
	}
	return map[string]any{"type": "reservation.approved", "recipient": r, "channels": channels,
		"data": map[string]any{"reservationUrl": "https://example.com/r/" + user}}
}

func otp(user, phone string) map[string]any {
	return map[string]any{"type": "otp.code", "recipient": map[string]any{"userId": user, "phone": phone},
		"data": map[string]any{"code": "246810"}}
}

func delivery(t testing.TB, id string, ch domain.Channel) *domain.Delivery {
	t.Helper()
	d, err := stacktest.Store(t).GetDelivery(context.Background(), id, ch)
	if err != nil {
		t.Fatalf("get delivery %s/%s: %v", id, ch, err)
	}
	return d
}

// waitStatus waits until the delivery reaches status and returns it.
func waitStatus(t testing.TB, id string, ch domain.Channel, status domain.Status) *domain.Delivery {
	t.Helper()
	var d *domain.Delivery
	stacktest.Eventually(t, settle, fmt.Sprintf("delivery %s/%s %s", id, ch, status), func() bool {
		var err error
		d, err = stacktest.Store(t).GetDelivery(context.Background(), id, ch)
		return err == nil && d.Status == status
	})
	return d
}

func wantOutcome(t testing.TB, d *domain.Delivery, status domain.Status, reason domain.Reason, attempts int) {
	t.Helper()
	if d.Status != status || d.Reason != reason || d.Attempts != attempts {
		t.Fatalf("delivery %s/%s = %s/%q after %d attempts, want %s/%q after %d", d.NotificationID, d.Channel, d.Status, d.Reason, d.Attempts, status, reason, attempts)
	}
}

// inject sets a fault through the dev route and turns it off after the test.
func inject(t testing.TB, ch domain.Channel, mode string, times int) {
	t.Helper()
	body := map[string]any{"channel": ch, "mode": mode}
	if times > 0 {
		body["times"] = times
	}
	if resp := stacktest.Do(t, http.MethodPost, "/_dev/faults", body); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("POST /_dev/faults = %d %s", resp.StatusCode, resp.Body)
	}
	t.Cleanup(func() { stacktest.Do(t, http.MethodPost, "/_dev/faults", map[string]any{"channel": ch, "mode": "off"}) })
}

// queued creates a notification whose delivery on ch waits, deferred, an
// hour ahead, then marks it queued without sending a work message: the test
// sends the work messages itself.
func queued(t testing.TB, user string, ch domain.Channel, recipient map[string]any) string {
	t.Helper()
	body := reservation(user, []string{string(ch)}, recipient)
	body["sendAt"] = stacktest.Stack(t).Clock.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	id := stacktest.Notify(t, body)
	waitStatus(t, id, ch, domain.StatusDeferred)
	if _, err := stacktest.Store(t).Transition(context.Background(), id, ch, domain.Change{To: domain.StatusQueued, From: []domain.Status{domain.StatusDeferred}}); err != nil {
		t.Fatal(err)
	}
	return id
}

func workMessage(id string, ch domain.Channel) string {
	b, _ := json.Marshal(domain.WorkMessage{NotificationID: id, Channel: ch})
	return string(b)
}

func dlqContains(t testing.TB, dlqID, needle string) bool {
	for _, b := range stacktest.PeekQueue(t, dlqID) {
		if strings.Contains(b, needle) {
			return true
		}
	}
	return false
}

// queueIdle reports whether a queue has no visible, in-flight or delayed message.
func queueIdle(t testing.TB, queueID string) bool {
	t.Helper()
	st := stacktest.Stack(t)
	depths, err := st.QueueDepths(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range depths {
		if q.LogicalID == queueID {
			return q.Visible+q.InFlight+q.Delayed == 0
		}
	}
	t.Fatalf("no queue %s", queueID)
	return false
}

// updateNotification changes stored notification attributes directly (no
// route changes expiresAt; the worker only reads the item).
func updateNotification(t testing.TB, id string, set map[string]string) {
	t.Helper()
	st := stacktest.Stack(t)
	var parts []string
	names := map[string]string{}
	vals := map[string]ddbtypes.AttributeValue{}
	i := 0
	for k, v := range set {
		parts = append(parts, fmt.Sprintf("#a%d = :v%d", i, i))
		names[fmt.Sprintf("#a%d", i)] = k
		vals[fmt.Sprintf(":v%d", i)] = &ddbtypes.AttributeValueMemberS{Value: v}
		i++
	}
	_, err := dynamodb.NewFromConfig(st.AWS).UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(st.Resources.Table),
		Key: map[string]ddbtypes.AttributeValue{
			"pk": &ddbtypes.AttributeValueMemberS{Value: dynamo.NotificationPK(id)}, "sk": &ddbtypes.AttributeValueMemberS{Value: "N"},
		},
		UpdateExpression: aws.String("SET " + strings.Join(parts, ", ")), ExpressionAttributeNames: names, ExpressionAttributeValues: vals,
	})
	if err != nil {
		t.Fatal(err)
	}
}

// email is one message in the SES emulator, with its custom headers.
type email struct {
	MessageID   string `json:"messageId"`
	Subject     string `json:"subject"`
	Destination struct {
		To []string `json:"to"`
	} `json:"destination"`
	Headers []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"headers"`
}

func (e email) header(name string) string {
	for _, h := range e.Headers {
		if strings.EqualFold(h.Name, name) {
			return h.Value
		}
	}
	return ""
}

func emailsTo(t testing.TB, addr string) []email {
	t.Helper()
	var store struct{ Emails []email }
	stacktest.Do(t, http.MethodGet, "/_dev/emails", nil).JSON(t, &store)
	var out []email
	for _, e := range store.Emails {
		for _, to := range e.Destination.To {
			if strings.EqualFold(to, addr) {
				out = append(out, e)
			}
		}
	}
	return out
}

// sms is one message captured at /_dev/sms.
type sms struct {
	To, Text, Type, MessageID string
}

func smsTo(t testing.TB, number string) []sms {
	t.Helper()
	var all []sms
	stacktest.Do(t, http.MethodGet, "/_dev/sms", nil).JSON(t, &all)
	var out []sms
	for _, m := range all {
		if m.To == number {
			out = append(out, m)
		}
	}
	return out
}

// uniquePhone is a valid E.164 number unique to this run.
func uniquePhone() string {
	return fmt.Sprintf("+1555%07d", time.Now().UnixNano()%10_000_000)
}

// subscription is a browser-like subscription of the local push service,
// registered for a user through the public API.
type subscription struct {
	SinkID string // the push service's id (its /_dev/push listing)
	ID     string // Herald's id (the user's profile)
}

// pushSubscription makes a subscription at the local push service and
// registers it as a browser would: POST /v1/users/{id}/push-subscriptions
// with its PushSubscription JSON.
func pushSubscription(t testing.TB, user string) subscription {
	t.Helper()
	resp := stacktest.Do(t, http.MethodPost, "/_dev/push-subscriptions", nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /_dev/push-subscriptions = %d %s", resp.StatusCode, resp.Body)
	}
	var created struct {
		ID, Endpoint string
		Keys         map[string]string
	}
	resp.JSON(t, &created)
	reg := stacktest.Do(t, http.MethodPost, "/v1/users/"+user+"/push-subscriptions",
		map[string]any{"endpoint": created.Endpoint, "expirationTime": nil, "keys": created.Keys})
	if reg.StatusCode != http.StatusCreated {
		t.Fatalf("POST /v1/users/%s/push-subscriptions = %d %s", user, reg.StatusCode, reg.Body)
	}
	var registered struct{ ID string }
	reg.JSON(t, &registered)
	return subscription{SinkID: created.ID, ID: registered.ID}
}

// pushMessage is one decrypted push listed at /_dev/push.
type pushMessage struct {
	SubscriptionID string `json:"subscriptionId"`
	Payload        struct {
		ID, Title, Body, URL string
	} `json:"payload"`
	TTL      int    `json:"ttl"`
	Urgency  string `json:"urgency"`
	Topic    string `json:"topic"`
	VAPIDSub string `json:"vapidSub"`
}

func pushesTo(t testing.TB, subscriptionID string) []pushMessage {
	t.Helper()
	var out []pushMessage
	stacktest.Do(t, http.MethodGet, "/_dev/push?subscriptionId="+subscriptionID, nil).JSON(t, &out)
	return out
}

// sesEvent posts an SES event for a notification to the feedback function.
func sesEvent(t testing.TB, eventType, notificationID, addr, extra string) *stacktest.Response {
	t.Helper()
	ev := fmt.Sprintf(`{"eventType":%q,"mail":{"timestamp":"2026-03-01T00:00:00.000Z","source":"notifications@example.com","messageId":"ses-%s","destination":[%q],"tags":{"notificationId":[%q],"type":["reservation_approved"]}}%s}`,
		eventType, notificationID, addr, notificationID, extra)
	return stacktest.Do(t, http.MethodPost, "/_dev/ses-events", ev)
}

// TestPeekQueueLeavesMessagesVisible: stacktest.PeekQueue reads a queue's
// messages without hiding them, so a second peek (and any consumer) sees
// them at once, not after the queue's visibility timeout.
func TestPeekQueueLeavesMessagesVisible(t *testing.T) {
	st := stacktest.Stack(t)
	ctx := context.Background()
	q := sqs.NewFromConfig(st.AWS)
	url := aws.String(st.Resources.Queues["CampaignDLQ"].URL)
	body := `{"peek":"` + stacktest.UniqueID("peek") + `"}`
	if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url, MessageBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if !slices.Contains(stacktest.PeekQueue(t, "CampaignDLQ"), body) {
			t.Fatalf("peek %d does not see the message (hidden by the previous peek?)", i+1)
		}
	}
	out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range out.Messages {
		if aws.ToString(m.Body) == body {
			found = true
			_, _ = q.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle})
		}
	}
	if !found {
		t.Error("a consumer does not receive the peeked message at once")
	}
}
