package ops

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/ops"
)

// TestRedriveAllLooksAtEveryMessage: `herald dlq redrive --all` on a DLQ of
// 40 parked messages looks at all 40, also the 9 another reader (an
// inspection, a console) holds for a few seconds when it starts: it reads
// until the DLQ is empty, not until the first empty receive.
func TestRedriveAllLooksAtEveryMessage(t *testing.T) {
	st := stacktest.Stack(t)
	ctx := context.Background()
	client := sqs.NewFromConfig(st.AWS)
	dlq := st.Resources.Queues["CampaignDLQ"].URL
	prefix := stacktest.UniqueID("c-scan") + "-"
	for i := range 40 {
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(dlq),
			MessageBody: aws.String(fmt.Sprintf(`{"kind":"plan","campaignId":"%s%02d"}`, prefix, i))}); err != nil {
			t.Fatal(err)
		}
	}
	held, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq), MaxNumberOfMessages: 9, VisibilityTimeout: 3})
	if err != nil || len(held.Messages) != 9 {
		t.Fatalf("another reader's receive: %v, %d messages", err, len(held.Messages))
	}
	var res ops.RedriveResult
	heraldJSON(t, &res, "redrive", "campaign", "--all", "--dry-run")
	looked := 0
	for _, it := range res.Items {
		if it.Campaign != nil && strings.HasPrefix(it.Campaign.CampaignID, prefix) {
			looked++
		}
	}
	if looked != 40 || res.Unseen != 0 {
		t.Errorf("looked at %d of the 40 parked messages (unseen %d)", looked, res.Unseen)
	}
	if _, err := herald(t, "purge", "campaign", "--yes"); err != nil {
		t.Fatal(err)
	}
}

// TestLiveDLQListed: herald dlq lists the live queue's DLQ with every other
// DLQ, shows a parked message by kind (never its users), and purges it.
func TestLiveDLQListed(t *testing.T) {
	st := stacktest.Stack(t)
	user := stacktest.UniqueID("u-live-dlq")
	if _, err := sqs.NewFromConfig(st.AWS).SendMessage(context.Background(), &sqs.SendMessageInput{
		QueueUrl:    aws.String(st.Resources.Queues["LiveDLQ"].URL),
		MessageBody: aws.String(`{"events":[{"userId":"` + user + `","kind":"inbox.created","id":"n1"}]}`),
	}); err != nil {
		t.Fatal(err)
	}
	if q := depth(t, "live"); q.Depth != 1 || q.Queue != (ops.DLQ{URL: st.Resources.Queues["LiveDLQ"].URL}).QueueName() {
		t.Errorf("live DLQ listed as %+v, want depth 1", q)
	}
	out, err := herald(t, "show", "live")
	if err != nil || !strings.Contains(out, "post 1 inbox changes (inbox.created)") || strings.Contains(out, user) {
		t.Errorf("show live: %v\n%s", err, out)
	}
	if _, err := herald(t, "purge", "live", "--yes"); err != nil {
		t.Fatal(err)
	}
}
