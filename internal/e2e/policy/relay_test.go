package policy

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/relay"
)

// countingPublisher forwards to the real queues and counts what it sent.
type countingPublisher struct {
	next relay.Publisher
	mu   sync.Mutex
	sent int
}

func (p *countingPublisher) Publish(ctx context.Context, items []domain.WorkItem) []error {
	errs := p.next.Publish(ctx, items)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, err := range errs {
		if err == nil {
			p.sent++
		}
	}
	return errs
}

// workQueueURLs maps the nine work queues of the local stack by name.
func workQueueURLs(st *devstack.Stack) queue.URLs {
	urls := queue.URLs{}
	for _, c := range domain.Channels {
		for _, p := range domain.Priorities {
			id := strings.ToUpper(string(c)[:1]) + string(c)[1:] + strings.ToUpper(string(p)[:1]) + string(p)[1:] + "Queue"
			urls[domain.QueueName(c, p)] = st.Resources.Queues[id].URL
		}
	}
	return urls
}

// TestStreamRetryOfTheSameBatchSendsNoSecondMessage replays, through the relay
// handler the Lambda main builds, the very stream records the stack's mapping
// already delivered (as a Lambda retry or a bisect would): the deliveries'
// conditional states decide, so no second queue message goes out and the
// user gets each message once.
func TestStreamRetryOfTheSameBatchSendsNoSecondMessage(t *testing.T) {
	st, s := stacktest.Stack(t), stacktest.Store(t)
	user := uniqueUser(t)
	addr := user + "@example.com"
	putUser(t, domain.User{ID: user, Email: addr})
	sub := addPushSubscription(t, user)
	id := stacktest.Notify(t, map[string]any{
		"type": "reservation.approved", "recipient": map[string]any{"userId": user},
		"data": map[string]any{"reservationUrl": "https://example.com/r/1"},
	})
	waitStatus(t, id, domain.ChannelEmail, domain.StatusSent, 15*time.Second)
	waitStatus(t, id, domain.ChannelPush, domain.StatusSent, 15*time.Second)

	recs, err := st.StreamRecords(context.Background(), func(r events.DynamoDBEventRecord) bool {
		pk := r.Change.Keys["pk"]
		return r.EventName == "INSERT" && pk.DataType() == events.DataTypeString && pk.String() == dynamo.NotificationPK(id)
	})
	// The notification's INSERT and its deliveries' (which the mapping's
	// filter drops and the relay must ignore all the same).
	if err != nil || len(recs) != 3 {
		t.Fatalf("stream records of %s: %d, %v", id, len(recs), err)
	}
	pub := &countingPublisher{next: queue.NewPublisher(sqs.NewFromConfig(st.AWS), workQueueURLs(st))}
	h := relay.New(relay.Deps{Store: s, Publisher: pub, Decode: dynamo.DecodeStreamNotification, Catalog: catalog.MustLoad(),
		Now: st.Clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	before := st.Calls.Snapshot()["SQS.SendMessageBatch"]
	for attempt := range 2 {
		resp, err := h.Handle(context.Background(), events.DynamoDBEvent{Records: recs})
		if err != nil || len(resp.BatchItemFailures) > 0 {
			t.Fatalf("replay %d: %v, %v", attempt, resp.BatchItemFailures, err)
		}
	}
	if pub.sent != 0 {
		t.Errorf("the replays sent %d work messages, want 0", pub.sent)
	}
	if after := st.Calls.Snapshot()["SQS.SendMessageBatch"]; after != before {
		t.Errorf("SendMessageBatch calls went from %d to %d during the replays", before, after)
	}
	settle()
	for _, c := range []domain.Channel{domain.ChannelEmail, domain.ChannelPush} {
		if d, _ := delivery(t, id, c); d.Status != domain.StatusSent || d.Attempts != 1 {
			t.Errorf("%s: %s after %d attempts, want sent after 1", c, d.Status, d.Attempts)
		}
	}
	if n := len(stacktest.EmailsTo(t, addr)); n != 1 {
		t.Errorf("%d emails, want 1", n)
	}
	if n := len(pushesTo(t, sub)); n != 1 {
		t.Errorf("%d pushes, want 1", n)
	}
}

// TestPoisonRecordReachesTheRelayDLQ writes a notification item the relay
// cannot decode. The relay reports it failed every time; after the mapping's
// MaximumRetryAttempts its on-failure record lands in the relay DLQ, and the
// relay's failure note for the record's sequence numbers names the item
// (docs/decisions.md), without reading the stream.
func TestPoisonRecordReachesTheRelayDLQ(t *testing.T) {
	st := stacktest.Stack(t)
	ctx := context.Background()
	pk := dynamo.NotificationPK(uniqueUser(t))
	_, err := dynamodb.NewFromConfig(st.AWS).PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(st.Resources.Table),
		Item: map[string]ddbtypes.AttributeValue{
			"pk": &ddbtypes.AttributeValueMemberS{Value: pk}, "sk": &ddbtypes.AttributeValueMemberS{Value: "N"},
			"type": &ddbtypes.AttributeValueMemberS{Value: "reservation.approved"},
			// createdAt must be a string: this item cannot be decoded.
			"createdAt": &ddbtypes.AttributeValueMemberBOOL{Value: true},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	dlq := st.Resources.Queues["RelayDLQ"].URL
	client := sqs.NewFromConfig(st.AWS)
	var info struct {
		RequestContext struct {
			Condition              string `json:"condition"`
			ApproximateInvokeCount int    `json:"approximateInvokeCount"`
		} `json:"requestContext"`
		DDBStreamBatchInfo struct {
			ShardID             string `json:"shardId"`
			StartSequenceNumber string `json:"startSequenceNumber"`
			EndSequenceNumber   string `json:"endSequenceNumber"`
			StreamArn           string `json:"streamArn"`
			BatchSize           int    `json:"batchSize"`
		} `json:"DDBStreamBatchInfo"`
	}
	deadline := time.Now().Add(30 * time.Second)
	for info.DDBStreamBatchInfo.ShardID == "" {
		if time.Now().After(deadline) {
			t.Fatal("no on-failure record in the relay DLQ")
		}
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq), WaitTimeSeconds: 1, MaxNumberOfMessages: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &info); err != nil {
				t.Fatalf("on-failure record %s: %v", aws.ToString(m.Body), err)
			}
			_, _ = client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(dlq), ReceiptHandle: m.ReceiptHandle})
		}
	}
	if info.RequestContext.Condition != "RetryAttemptsExhausted" || info.DDBStreamBatchInfo.BatchSize != 1 {
		t.Errorf("on-failure record %+v", info)
	}

	// The operator's way back from the DLQ record to the notification: the
	// relay's failure note for the record's sequence range, in the table
	// (herald dlq show relay reads it; the stream is not read).
	notes, err := stacktest.Store(t).RelayFailures(ctx, time.Now().Add(-time.Hour), time.Now(),
		info.DDBStreamBatchInfo.StartSequenceNumber, info.DDBStreamBatchInfo.EndSequenceNumber)
	if err != nil || len(notes) != 1 {
		t.Fatalf("failure notes of the DLQ record: %+v, %v", notes, err)
	}
	if notes[0].PK != pk || notes[0].SK != "N" || notes[0].NotificationID != "" {
		t.Errorf("failure note %+v, want the undecodable item %s/N", notes[0], pk)
	}
}
