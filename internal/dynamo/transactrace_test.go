package dynamo_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
)

// racingTransactions cancels the next `races` transactions as DynamoDB does
// when another transaction or write is under way on one of their items: a
// TransactionCanceledException whose reasons are TransactionConflict (the
// contended item: every lot's transaction updates the campaign's META) and
// None, with nothing written.
type racingTransactions struct {
	dynamo.API
	races atomic.Int32
}

func (r *racingTransactions) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if r.races.Add(-1) >= 0 {
		reasons := make([]types.CancellationReason, len(in.TransactItems))
		for i := range reasons {
			reasons[i].Code = aws.String("None")
		}
		reasons[len(reasons)-1].Code = aws.String("TransactionConflict")
		return nil, &types.TransactionCanceledException{Message: aws.String("Transaction cancelled, please refer cancellation reasons for specific reasons [None, TransactionConflict]"), CancellationReasons: reasons}
	}
	return r.API.TransactWriteItems(ctx, in, opts...)
}

// TestLotWritesSurviveATransactionRace: a lot's first record, its
// reconcile and a scan page whose transaction loses a race on the
// campaign's META (TransactionConflict, nothing written) are written by a
// retry, not taken for a duplicate (ErrConflict made the lot step and the
// reconcile stop: a topic send's lot was never counted and the campaign
// stayed running, issue 39); one that keeps losing is an error to retry,
// never ErrConflict.
func TestLotWritesSurviveATransactionRace(t *testing.T) {
	e := stacktest.Emulators(t)
	racing := &racingTransactions{API: e.DynamoDB()}
	clock := newClock(t0)
	s := stacktest.NewStores(dynamo.New(racing, e.Resources.Table, dynamo.WithClock(clock.Now)))
	ctx := context.Background()
	c := draft("c"+uniq(t), clock.Now())
	c.Topic = "thread:race"
	if _, err := s.CreateCampaign(ctx, c, nil, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartCampaign(ctx, c.ID, "svc"); err != nil {
		t.Fatal(err)
	}
	page := domain.ScanChunkKey(3, 0)
	racing.races.Store(1)
	if err := s.RecordScanPage(ctx, c, page, 3, []string{"a", "b"}, ""); err != nil {
		t.Fatalf("scan page after a race: %v, want it stored", err)
	}
	if _, ok, err := s.GetScanPage(ctx, c.ID, page); !ok || err != nil {
		t.Fatalf("scan page not stored after a race: %v, %v", ok, err)
	}

	lot := &domain.CampaignLot{Chunk: page, Total: 2, Pending: []string{"a", "b"}, Counts: domain.CampaignCounts{Notified: 2}}
	racing.races.Store(1)
	if err := s.RecordLot(ctx, c.ID, lot); err != nil {
		t.Fatalf("record lot after a race: %v, want it recorded", err)
	}
	got, err := s.GetLot(ctx, c.ID, page)
	if err != nil || got.Version != 1 || len(got.Pending) != 2 {
		t.Fatalf("lot after a race: %+v, %v; want version 1 with 2 pending", got, err)
	}
	next := &domain.CampaignLot{Chunk: page, Total: 2, Counts: domain.CampaignCounts{Notified: 2, Sent: 2}}
	racing.races.Store(1)
	if err := s.ReconcileLot(ctx, c.ID, got, next); err != nil {
		t.Fatalf("reconcile after a race: %v, want it counted", err)
	}
	if cur := mustCampaign(t, s, c.ID); cur.Counts.Notified != 2 || cur.Counts.Sent != 2 || cur.LotsSettled != 1 || cur.Chunks != 1 {
		t.Fatalf("campaign %+v: want 2 notified, 2 sent, 1 lot settled of 1 chunk, each counted once", cur)
	}

	// Losing every try: an error SQS retries, not a duplicate.
	other := &domain.CampaignLot{Chunk: domain.ScanChunkKey(4, 0), Total: 1, Pending: []string{"c"}, Counts: domain.CampaignCounts{Notified: 1}}
	racing.races.Store(1000)
	defer racing.races.Store(0)
	if err := s.RecordLot(ctx, c.ID, other); err == nil || errors.Is(err, domain.ErrConflict) {
		t.Fatalf("record lot losing every race: %v, want an error that is not ErrConflict", err)
	}
	if err := s.ReconcileLot(ctx, c.ID, next, &domain.CampaignLot{Chunk: page, Total: 2, Counts: next.Counts}); err == nil || errors.Is(err, domain.ErrConflict) {
		t.Fatalf("reconcile losing every race: %v, want an error that is not ErrConflict", err)
	}
	if err := s.RecordScanPage(ctx, c, domain.ScanChunkKey(4, 0), 4, []string{"c"}, ""); err == nil || errors.Is(err, domain.ErrConflict) {
		t.Fatalf("scan page losing every race: %v, want an error that is not ErrConflict", err)
	}
}

// TestOtherTransactionsSurviveARace: a campaign's create, a topic mute and a
// device's save whose transaction loses a race (TransactionConflict, nothing
// written) are written by a retry: the race is not their failed condition
// (a mute answered 404 not_subscribed, a create "exists already", a device
// "owner changed").
func TestOtherTransactionsSurviveARace(t *testing.T) {
	e := stacktest.Emulators(t)
	racing := &racingTransactions{API: e.DynamoDB()}
	clock := newClock(t0)
	s := stacktest.NewStores(dynamo.New(racing, e.Resources.Table, dynamo.WithClock(clock.Now)))
	ctx := context.Background()
	user, topic := "u"+uniq(t), "thread:"+uniq(t)

	racing.races.Store(1)
	c := draft("c"+uniq(t), clock.Now())
	if _, err := s.CreateCampaign(ctx, c, nil, ""); err != nil {
		t.Errorf("create campaign after a race: %v", err)
	}
	if _, err := s.SubscribeToTopic(ctx, topic, []string{user}); err != nil {
		t.Fatal(err)
	}
	racing.races.Store(1)
	if sub, err := s.SetTopicMuted(ctx, user, topic, true); err != nil || !sub.Muted {
		t.Errorf("mute after a race: %+v, %v; want muted", sub, err)
	}
	racing.races.Store(1)
	if err := s.SaveDevice(ctx, user, "", domain.Device{ID: "d" + uniq(t), Platform: domain.PlatformAPNs, Token: "t" + uniq(t), App: "e2e"}); err != nil {
		t.Errorf("save device after a race: %v", err)
	}
}
