package events_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/events"
)

func deliveryImage(status string, attempts string) map[string]lambdaevents.DynamoDBAttributeValue {
	s := lambdaevents.NewStringAttribute
	return map[string]lambdaevents.DynamoDBAttributeValue{
		"pk": s("N#n1"), "sk": s("D#email"), "kind": s("delivery"), "notificationId": s("n1"), "channel": s("email"),
		"userId": s("u1"), "priority": s("normal"), "status": s(status), "attempts": lambdaevents.NewNumberAttribute(attempts),
		"updatedAt": s("2026-01-02T03:04:05Z"), "caller": s("billing"), "type": s("invoice.paid"),
		"lastError": s("mailbox a@example.com"),
	}
}

func record(seq, name string, oldImg, newImg map[string]lambdaevents.DynamoDBAttributeValue) lambdaevents.DynamoDBEventRecord {
	return lambdaevents.DynamoDBEventRecord{EventName: name, Change: lambdaevents.DynamoDBStreamRecord{SequenceNumber: seq, OldImage: oldImg, NewImage: newImg}}
}

// The stream handler publishes a delivery's or a campaign's state change
// once, from the record's old and new images alone, and skips every update
// that did not change the status (a running campaign counted, a sent
// delivery updated again).
func TestStreamPublishesStatusChangesOnly(t *testing.T) {
	bus := &fakeBus{}
	s := &events.Stream{Mode: events.ModeAll,
		Decode:    events.Decoder{Delivery: dynamo.DecodeStreamDelivery, Campaign: dynamo.DecodeStreamCampaign},
		Publisher: &events.Publisher{Bus: bus, DLQ: &fakeDLQ{}, Sleep: func(context.Context, time.Duration) error { return nil }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))},
		Log:       slog.New(slog.NewTextHandler(io.Discard, nil))}
	campaignOld := map[string]lambdaevents.DynamoDBAttributeValue{"pk": lambdaevents.NewStringAttribute("C#c1"), "sk": lambdaevents.NewStringAttribute("META"),
		"id": lambdaevents.NewStringAttribute("c1"), "caller": lambdaevents.NewStringAttribute("mk"), "type": lambdaevents.NewStringAttribute("promo"),
		"status": lambdaevents.NewStringAttribute("draft"), "createdAt": lambdaevents.NewStringAttribute("2026-01-02T03:04:05Z"),
		"chunks": lambdaevents.NewNumberAttribute("1"), "recipients": lambdaevents.NewNumberAttribute("3")}
	campaignNew := map[string]lambdaevents.DynamoDBAttributeValue{}
	for k, v := range campaignOld {
		campaignNew[k] = v
	}
	campaignNew["status"] = lambdaevents.NewStringAttribute("running")
	campaignCounted := map[string]lambdaevents.DynamoDBAttributeValue{}
	for k, v := range campaignNew {
		campaignCounted[k] = v
	}
	campaignCounted["notified"] = lambdaevents.NewNumberAttribute("2")
	failed := s.Handle(context.Background(), []lambdaevents.DynamoDBEventRecord{
		record("1", "MODIFY", deliveryImage("sending", "1"), deliveryImage("sent", "1")),   // event
		record("2", "MODIFY", deliveryImage("sent", "1"), deliveryImage("sent", "1")),      // no change
		record("3", "INSERT", nil, deliveryImage("skipped", "0")),                          // created skipped: event
		record("4", "MODIFY", deliveryImage("queued", "0"), deliveryImage("sending", "1")), // not an event status
		record("5", "MODIFY", campaignOld, campaignNew),                                    // campaign started
		record("6", "REMOVE", deliveryImage("sent", "1"), nil),                             // TTL expiry
		record("7", "MODIFY", campaignNew, campaignCounted),                                // running, counted: no event
		record("8", "MODIFY", deliveryImage("sent", "1"), deliveryImage("sent", "2")),      // sent, updated again: no event
	})
	if len(failed) != 0 {
		t.Fatalf("failed %v", failed)
	}
	if len(bus.published) != 3 || len(bus.calls) != 1 {
		t.Fatalf("published %v in %d calls", bus.published, len(bus.calls))
	}
}

func TestStreamModeNoneDoesNothing(t *testing.T) {
	bus := &fakeBus{}
	s := &events.Stream{Mode: events.ModeNone, Publisher: &events.Publisher{Bus: bus}}
	if f := s.Handle(context.Background(), []lambdaevents.DynamoDBEventRecord{record("1", "INSERT", nil, deliveryImage("skipped", "0"))}); f != nil || len(bus.calls) != 0 {
		t.Errorf("mode none published: %v %v", f, bus.calls)
	}
}

// A MODIFY without an old image (a stream of another view type than the
// template's NEW_AND_OLD_IMAGES) cannot tell a transition: it publishes (at
// least once) rather than lose a state.
func TestStreamWithoutOldImagePublishesAtLeastOnce(t *testing.T) {
	bus := &fakeBus{}
	s := &events.Stream{Mode: events.ModeAll,
		Decode:    events.Decoder{Delivery: dynamo.DecodeStreamDelivery, Campaign: dynamo.DecodeStreamCampaign},
		Publisher: &events.Publisher{Bus: bus, DLQ: &fakeDLQ{}, Sleep: func(context.Context, time.Duration) error { return nil }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))},
		Log:       slog.New(slog.NewTextHandler(io.Discard, nil))}
	if failed := s.Handle(context.Background(), []lambdaevents.DynamoDBEventRecord{
		record("1", "MODIFY", nil, deliveryImage("sent", "1")),
		record("2", "MODIFY", nil, deliveryImage("sending", "1")), // not an event status either way
	}); len(failed) != 0 {
		t.Fatalf("failed %v", failed)
	}
	if len(bus.published) != 1 {
		t.Fatalf("published %v, want the sent event", bus.published)
	}
}
