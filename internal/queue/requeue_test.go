package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/heraldhq/herald/internal/queue"
)

// TestRequeueOnTheEmulator: a message received twice is re-sent to its own
// queue with a delay; the copy is hidden for the delay, then arrives with
// the same body and a fresh receive count of 1.
func TestRequeueOnTheEmulator(t *testing.T) {
	e, _ := workQueues(t)
	client := e.SQS()
	ctx := context.Background()
	info := e.Resources.Queues["SmsLowQueue"]
	const body = `{"notificationId":"rq","channel":"sms"}`
	receive := func(wait int32) []types.Message {
		t.Helper()
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(info.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: wait,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount}})
		if err != nil {
			t.Fatal(err)
		}
		return out.Messages
	}
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(info.URL), MessageBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
	nc := client
	v := queue.NewVisibility(nc)
	first := receive(1)
	if len(first) != 1 {
		t.Fatalf("received %d, want 1", len(first))
	}
	if err := v.SetVisibility(ctx, info.ARN, aws.ToString(first[0].ReceiptHandle), 0); err != nil {
		t.Fatal(err)
	}
	second := receive(1)
	if len(second) != 1 || second[0].Attributes["ApproximateReceiveCount"] != "2" {
		t.Fatalf("second receive %+v, want the message with receive count 2", second)
	}

	if err := queue.NewRequeuer(nc, v).Requeue(ctx, info.ARN, body, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(info.URL), ReceiptHandle: second[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	if early := receive(0); len(early) != 0 {
		t.Fatalf("the copy arrived before its delay: %+v", early)
	}
	var copyMsg []types.Message
	for time.Since(sent) < 6*time.Second && len(copyMsg) == 0 {
		copyMsg = receive(1)
	}
	if len(copyMsg) != 1 || aws.ToString(copyMsg[0].Body) != body || copyMsg[0].Attributes["ApproximateReceiveCount"] != "1" {
		t.Fatalf("copy %+v, want the same body with receive count 1", copyMsg)
	}
	if waited := time.Since(sent); waited < 1500*time.Millisecond {
		t.Errorf("copy visible after %s, want about its 2 s delay", waited)
	}
	_, _ = client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(info.URL), ReceiptHandle: copyMsg[0].ReceiptHandle})
}
