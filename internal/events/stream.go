package events

import (
	"context"
	"log/slog"

	lambdaevents "github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/domain"
)

// Decoder reads a stream image as a delivery or a campaign; each returns
// (nil, nil) for an item of another kind.
type Decoder struct {
	Delivery func(map[string]lambdaevents.DynamoDBAttributeValue) (*domain.Delivery, error)
	Campaign func(map[string]lambdaevents.DynamoDBAttributeValue) (*domain.Campaign, error)
}

// Stream publishes the events of stream records (the bulk relay hands it
// every record that is not a new notification).
type Stream struct {
	Mode      Mode
	Decode    Decoder
	Publisher *Publisher
	Log       *slog.Logger
}

// Handle builds the events of recs and publishes them. It returns the
// indexes of the records to retry: only those whose events could neither be
// published nor parked (the table stays the outbox). A record whose image
// does not decode is logged and skipped: a retry cannot make it decode.
func (s *Stream) Handle(ctx context.Context, recs []lambdaevents.DynamoDBEventRecord) []int {
	if s == nil || s.Mode == ModeNone || len(recs) == 0 {
		return nil
	}
	var entries []Entry
	var from []int
	for i, rec := range recs {
		e, ok, err := s.build(rec)
		if err != nil {
			s.Log.ErrorContext(ctx, "event record not decoded", "sequenceNumber", rec.Change.SequenceNumber, "eventId", rec.EventID, "error", err)
			continue
		}
		if ok {
			entries = append(entries, e)
			from = append(from, i)
		}
	}
	if len(entries) == 0 {
		return nil
	}
	res, err := s.Publisher.Publish(ctx, entries)
	s.Log.DebugContext(ctx, "events published", "published", res.Published, "retried", res.Retried, "parked", res.Parked)
	if err != nil {
		return from
	}
	return nil
}

// build makes the event of one record, if it is one.
func (s *Stream) build(rec lambdaevents.DynamoDBEventRecord) (Entry, bool, error) {
	if rec.EventName != string(lambdaevents.DynamoDBOperationTypeInsert) && rec.EventName != string(lambdaevents.DynamoDBOperationTypeModify) {
		return Entry{}, false, nil
	}
	d, err := s.Decode.Delivery(rec.Change.NewImage)
	if err != nil {
		return Entry{}, false, err
	}
	if d != nil {
		var old *domain.Delivery
		if rec.EventName == string(lambdaevents.DynamoDBOperationTypeModify) {
			if old, err = s.Decode.Delivery(rec.Change.OldImage); err != nil {
				return Entry{}, false, err
			}
			if old == nil { // no old image: cannot tell a change, publish (at least once)
				old = &domain.Delivery{}
			}
		}
		return DeliveryEntry(s.Mode, old, d)
	}
	c, err := s.Decode.Campaign(rec.Change.NewImage)
	if err != nil || c == nil {
		return Entry{}, false, err
	}
	var old *domain.Campaign
	if rec.EventName == string(lambdaevents.DynamoDBOperationTypeModify) {
		if old, err = s.Decode.Campaign(rec.Change.OldImage); err != nil {
			return Entry{}, false, err
		}
	}
	return CampaignEntry(s.Mode, old, c)
}
