package dynamo

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
)

func TestNotificationIDFromKeys(t *testing.T) {
	tests := []struct {
		pk, sk, id string
		ok         bool
	}{
		{"N#abc", "N", "abc", true},
		{"N#abc", "D#email", "", false},
		{"U#u1", "PROFILE", "", false},
		{"N#", "N", "", false},
	}
	for _, tt := range tests {
		id, ok := NotificationIDFromKeys(tt.pk, tt.sk)
		if id != tt.id && tt.ok || ok != tt.ok {
			t.Errorf("NotificationIDFromKeys(%q, %q) = %q, %v", tt.pk, tt.sk, id, ok)
		}
	}
}

// getItemAPI serves one stored item.
type getItemAPI struct {
	API
	item map[string]types.AttributeValue
}

func (g getItemAPI) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if pk := in.Key["pk"].(*types.AttributeValueMemberS).Value; g.item == nil || pk != g.item["pk"].(*types.AttributeValueMemberS).Value {
		return &dynamodb.GetItemOutput{}, nil
	}
	return &dynamodb.GetItemOutput{Item: g.item}, nil
}

// TestNotificationInsertRecordRoundTrips checks that the relay, decoding the
// synthesized record as it decodes a stream record, gets back the stored
// notification.
func TestNotificationInsertRecordRoundTrips(t *testing.T) {
	created := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	n := &domain.Notification{
		ID: "n1", Caller: "svc", Type: "invoice.payment_failed", Priority: domain.PriorityHigh,
		Recipient: domain.Recipient{UserID: "u1", Email: "u1@example.com"},
		Data:      map[string]any{"invoiceUrl": "https://example.com/i/1", "nested": map[string]any{"list": []any{"a", 1.5, true, nil}}},
		Channels:  []domain.Channel{domain.ChannelEmail}, CreatedAt: created, Status: domain.NotificationAccepted,
	}
	s := New(nil, "t")
	item, err := attributevalue.MarshalMap(s.toNotificationItem(n))
	if err != nil {
		t.Fatal(err)
	}
	item["tags"] = &types.AttributeValueMemberSS{Value: []string{"x"}}
	item["blob"] = &types.AttributeValueMemberB{Value: []byte{1, 2}}
	s = New(getItemAPI{item: item}, "t")
	rec, err := (&Notifications{s}).NotificationInsertRecord(context.Background(), "n1")
	if err != nil {
		t.Fatal(err)
	}
	if rec.EventName != "INSERT" || rec.Change.Keys["pk"].String() != "N#n1" || rec.Change.Keys["sk"].String() != "N" || rec.Change.SequenceNumber != "replan-n1" {
		t.Fatalf("record %+v", rec)
	}
	got, err := DecodeStreamNotification(rec.Change.NewImage)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, n) {
		t.Errorf("decoded\n%+v\nwant\n%+v", got, n)
	}
	if _, err := (&Notifications{s}).NotificationInsertRecord(context.Background(), "missing"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("missing notification: %v", err)
	}
}
