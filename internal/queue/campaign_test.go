package queue_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/queue"
)

// TestCampaignQueueOnFauxqs sends every kind of campaign step through the
// real client to the campaign queue the function's environment names: ten
// per SendMessageBatch, each body decoding strictly to what was sent; a
// delayed reconcile is not visible at once.
func TestCampaignQueueOnFauxqs(t *testing.T) {
	e := stacktest.Emulators(t)
	url := e.FunctionEnv(t, "CampaignFunction")(queue.CampaignQueueEnv)
	if url == "" {
		t.Fatal("CampaignFunction has no " + queue.CampaignQueueEnv)
	}
	client := e.SQS()
	counting := &countingSQS{API: client}
	q := queue.NewCampaignQueue(counting, url)
	ctx := context.Background()

	msgs := []domain.CampaignMessage{{Kind: domain.CampaignPlan, CampaignID: "c1", After: domain.ChunkKey(3)}}
	for seg := range 4 {
		msgs = append(msgs, domain.CampaignMessage{Kind: domain.CampaignScan, CampaignID: "c1", Segment: seg, Segments: 4})
	}
	msgs = append(msgs, domain.CampaignMessage{Kind: domain.CampaignScan, CampaignID: "c1", Segment: 3, Segments: 4, Page: 2, After: "user-9"})
	for i := range 17 {
		msgs = append(msgs, domain.CampaignMessage{Kind: domain.CampaignLotStep, CampaignID: "c1", Chunk: domain.ChunkKey(int64(i))})
	}
	if err := q.SendCampaign(ctx, msgs, 0); err != nil {
		t.Fatal(err)
	}
	if b := slices.Sorted(slices.Values(counting.batches)); !slices.Equal(b, []int{3, 10, 10}) {
		t.Errorf("batches %v, want 10, 10, 3", counting.batches)
	}
	var got []domain.CampaignMessage
	for _, m := range drain(t, client, url, len(msgs)) {
		cm, err := domain.DecodeCampaignMessage(aws.ToString(m.Body))
		if err != nil {
			t.Fatalf("body %s: %v", aws.ToString(m.Body), err)
		}
		got = append(got, cm)
	}
	if len(got) != len(msgs) {
		t.Fatalf("received %d messages, want %d", len(got), len(msgs))
	}
	for _, m := range msgs {
		if !slices.Contains(got, m) {
			t.Errorf("%+v not received", m)
		}
	}

	reconcile := domain.CampaignMessage{Kind: domain.CampaignReconcile, CampaignID: "c1", Chunk: domain.InlineChunk}
	if err := q.SendCampaign(ctx, []domain.CampaignMessage{reconcile}, 4*time.Second); err != nil {
		t.Fatal(err)
	}
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 0 {
		t.Fatalf("a reconcile delayed 4 s was received at once: %v", aws.ToString(out.Messages[0].Body))
	}
	delayed := drain(t, client, url, 1)
	if cm, err := domain.DecodeCampaignMessage(aws.ToString(delayed[0].Body)); err != nil || cm != reconcile {
		t.Fatalf("delayed %+v, %v; want %+v", cm, err, reconcile)
	}
}
