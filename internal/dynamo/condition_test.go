package dynamo_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
)

// oldItemlessStore fails every conditional write without returning the old
// item, the case the store covers by reading the item back (DynamoDB Local
// always returns it, so only a fake reaches that path), and serves reads
// from items.
type oldItemlessStore struct {
	dynamo.API
	items map[string]map[string]types.AttributeValue // by pk|sk
	reads int
}

func (f *oldItemlessStore) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return nil, &types.ConditionalCheckFailedException{Message: new(string)}
}

func (f *oldItemlessStore) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return nil, &types.ConditionalCheckFailedException{Message: new(string)}
}

func (f *oldItemlessStore) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	f.reads++
	k := in.Key["pk"].(*types.AttributeValueMemberS).Value + "|" + in.Key["sk"].(*types.AttributeValueMemberS).Value
	return &dynamodb.GetItemOutput{Item: f.items[k]}, nil
}

func TestConditionFailuresWithoutTheOldItemReadItBack(t *testing.T) {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	window := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	f := &oldItemlessStore{items: map[string]map[string]types.AttributeValue{
		"N#n1|N": {"pk": s("N#n1"), "sk": s("N"), "id": s("n1"), "caller": s("svc"), "status": s("cancelled"), "requestHash": s("stored")},
		"N#n1|D#sms": {"pk": s("N#n1"), "sk": s("D#sms"), "notificationId": s("n1"), "channel": s("sms"), "status": s("queued"),
			"attempts": &types.AttributeValueMemberN{Value: "2"}},
		"RL#u1#email|W#2026-03-02T12:00:00.000000000Z": {"notificationIds": &types.AttributeValueMemberSS{Value: []string{"n1"}}},
	}}
	store := stacktest.NewStores(dynamo.New(f, "t"))
	ctx := context.Background()
	tests := []struct {
		name  string
		run   func() error
		reads int
	}{
		{"create notification replays the stored one", func() error {
			got, err := store.CreateNotification(ctx, &domain.Notification{ID: "n1", RequestHash: "mine"})
			if !errors.Is(err, domain.ErrConflict) || got == nil || got.RequestHash != "stored" {
				return errors.New("want ErrConflict with the stored notification")
			}
			return nil
		}, 1},
		{"create delivery returns the existing one", func() error {
			got, err := store.CreateDelivery(ctx, &domain.Delivery{NotificationID: "n1", Channel: domain.ChannelSMS, Status: domain.StatusPlanned})
			if !errors.Is(err, domain.ErrConflict) || got == nil || got.Attempts != 2 || got.Status != domain.StatusQueued {
				return errors.New("want ErrConflict with the existing delivery")
			}
			return nil
		}, 1},
		{"a counted notification is still within the limit", func() error {
			if ok, err := store.CountDelivery(ctx, "u1", domain.ChannelEmail, window, time.Minute, 1, "n1"); err != nil || !ok {
				return errors.New("want within the limit")
			}
			return nil
		}, 1},
		{"another notification is over it", func() error {
			if ok, err := store.CountDelivery(ctx, "u1", domain.ChannelEmail, window, time.Minute, 1, "n2"); err != nil || ok {
				return errors.New("want over the limit")
			}
			return nil
		}, 1},
		{"cancelling a cancelled notification returns it", func() error {
			if got, err := store.CancelNotification(ctx, "n1", "svc"); err != nil || got.Status != domain.NotificationCancelled {
				return errors.New("want the cancelled notification")
			}
			return nil
		}, 1},
		{"another caller's cancel is not found", func() error {
			if _, err := store.CancelNotification(ctx, "n1", "other"); !errors.Is(err, domain.ErrNotFound) {
				return errors.New("want ErrNotFound")
			}
			return nil
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := f.reads
			if err := tt.run(); err != nil {
				t.Error(err)
			}
			if got := f.reads - before; got != tt.reads {
				t.Errorf("%d reads, want %d", got, tt.reads)
			}
		})
	}
}
