package ops

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/ops"
)

// TestReleaseDLQRedrive: a release message the scheduler gave up on (parked
// in the ReleaseDLQ, as SQS's redrive does after three receives) is listed,
// shown with its partition still due, and redriven to the release queue: the
// scheduler releases the partition and the deferred email is sent once.
// (This package's scheduler ticks hourly, so nothing else releases it.)
func TestReleaseDLQRedrive(t *testing.T) {
	st := stacktest.Stack(t)
	ctx := context.Background()
	addr := "release-" + stacktest.UniqueID("r") + "@example.com"
	sendAt := st.Clock.Now().Add(2 * time.Second).Truncate(time.Second).Add(time.Second)
	id := stacktest.Notify(t, map[string]any{
		"type": "invoice.payment_failed", "channels": []string{"email"},
		"recipient": map[string]any{"userId": stacktest.UniqueID("u"), "email": addr},
		"data":      map[string]any{"invoiceUrl": "https://example.com/i/78"},
		"sendAt":    sendAt.UTC().Format(time.RFC3339),
	})
	d := delivery(t, id, domain.ChannelEmail, "the delivery deferred", status(domain.StatusDeferred, domain.ReasonScheduled))
	part := dynamo.DuePartitionOf(d.DueAt, id, domain.ChannelEmail)
	body, _ := json.Marshal(part)
	if _, err := sqs.NewFromConfig(st.AWS).SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(st.Resources.Queues["ReleaseDLQ"].URL), MessageBody: aws.String(string(body)),
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(sendAt.Add(time.Second))) // due now, for the CLI's clock too

	if q := depth(t, "release"); q.Depth != 1 || q.Queue != "herald-ReleaseDLQ" {
		t.Fatalf("list: %+v", q)
	}
	var parked []ops.Parked
	heraldJSON(t, &parked, "show", "release")
	if len(parked) != 1 || parked[0].Partition == nil || *parked[0].Partition != part || parked[0].StillDue == nil || !*parked[0].StillDue {
		t.Fatalf("show: %+v", parked)
	}
	out, err := herald(t, "show", "release")
	if err != nil || !strings.Contains(out, dynamo.DuePartitionKey(part)) || !strings.Contains(out, "still due") {
		t.Errorf("show (text): %v\n%s", err, out)
	}

	var res ops.RedriveResult
	heraldJSON(t, &res, "redrive", "release", "--all")
	if len(res.Items) != 1 || res.Items[0].Action != ops.ActionRelease || !res.Items[0].Done || res.Items[0].Partition != dynamo.DuePartitionKey(part) {
		t.Fatalf("redrive: %+v", res)
	}
	stacktest.Eventually(t, 30*time.Second, "the released email", func() bool {
		return len(stacktest.EmailsTo(t, addr)) > 0
	})
	delivery(t, id, domain.ChannelEmail, "the delivery sent", status(domain.StatusSent, ""))
	time.Sleep(time.Second)
	if n := len(stacktest.EmailsTo(t, addr)); n != 1 {
		t.Errorf("%d emails, want exactly 1", n)
	}
	if q := depth(t, "release"); q.Depth != 0 {
		t.Errorf("release DLQ not empty: %+v", q)
	}
}
