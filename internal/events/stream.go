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
		e, ok, err := s.build(ctx, rec)
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

// build makes the event of one record, if it is one: an INSERT created in
// a published state, or a MODIFY whose old image's status differs from the
// new one's (the table's stream is NEW_AND_OLD_IMAGES). A MODIFY without an
// old image (a stream of another view type) cannot tell a transition from
// any other update: it publishes, at least once, and warns.
func (s *Stream) build(ctx context.Context, rec lambdaevents.DynamoDBEventRecord) (Entry, bool, error) {
	modify := rec.EventName == string(lambdaevents.DynamoDBOperationTypeModify)
	if rec.EventName != string(lambdaevents.DynamoDBOperationTypeInsert) && !modify {
		return Entry{}, false, nil
	}
	noOld := modify && len(rec.Change.OldImage) == 0
	d, err := s.Decode.Delivery(rec.Change.NewImage)
	if err != nil {
		return Entry{}, false, err
	}
	if d != nil {
		var old *domain.Delivery
		if modify && !noOld {
			if old, err = s.Decode.Delivery(rec.Change.OldImage); err != nil {
				return Entry{}, false, err
			}
		}
		e, ok, err := DeliveryEntry(s.Mode, old, d)
		s.warnNoOld(ctx, rec, noOld && ok)
		return e, ok, err
	}
	c, err := s.Decode.Campaign(rec.Change.NewImage)
	if err != nil || c == nil {
		return Entry{}, false, err
	}
	var old *domain.Campaign
	if modify && !noOld {
		if old, err = s.Decode.Campaign(rec.Change.OldImage); err != nil {
			return Entry{}, false, err
		}
	}
	e, ok, err := CampaignEntry(s.Mode, old, c)
	s.warnNoOld(ctx, rec, noOld && ok)
	return e, ok, err
}

func (s *Stream) warnNoOld(ctx context.Context, rec lambdaevents.DynamoDBEventRecord, published bool) {
	if published {
		s.Log.WarnContext(ctx, "MODIFY record without an old image: published without knowing whether the status changed (the table's stream must be NEW_AND_OLD_IMAGES)",
			"sequenceNumber", rec.Change.SequenceNumber, "streamViewType", rec.Change.StreamViewType)
	}
}
