// Package awsbus adapts the events publisher to AWS: EventBridge PutEvents
// for the bus and SQS for the events DLQ.
package awsbus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/heraldhq/herald/internal/events"
)

// PutEventsAPI is the EventBridge call the bus makes.
type PutEventsAPI interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, opts ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

// Bus puts entries on one event bus.
type Bus struct {
	API     PutEventsAPI
	BusName string
}

var _ events.Bus = (*Bus)(nil)

// EntryError is one entry's failure as PutEvents reports it.
type EntryError struct{ Code, Message string }

func (e *EntryError) Error() string { return "PutEvents entry: " + e.Code + ": " + e.Message }

// Put sends one PutEvents request; each entry's ErrorCode becomes its error.
func (b *Bus) Put(ctx context.Context, entries []events.Entry) ([]error, error) {
	in := &eventbridge.PutEventsInput{Entries: make([]ebtypes.PutEventsRequestEntry, len(entries))}
	for i, e := range entries {
		in.Entries[i] = ebtypes.PutEventsRequestEntry{
			EventBusName: aws.String(b.BusName), Source: aws.String(e.Source), DetailType: aws.String(e.DetailType),
			Detail: aws.String(string(e.Detail)), Time: aws.Time(e.Time),
		}
	}
	out, err := b.API.PutEvents(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("put events on %s: %w", b.BusName, err)
	}
	errs := make([]error, len(entries))
	if out.FailedEntryCount == 0 {
		return errs, nil
	}
	if len(out.Entries) != len(entries) {
		return nil, fmt.Errorf("put events on %s: %d failed, %d results for %d entries", b.BusName, out.FailedEntryCount, len(out.Entries), len(entries))
	}
	for i, r := range out.Entries {
		if r.ErrorCode != nil {
			errs[i] = &EntryError{Code: aws.ToString(r.ErrorCode), Message: aws.ToString(r.ErrorMessage)}
		}
	}
	return errs, nil
}

// SendMessageBatchAPI is the SQS call the DLQ makes.
type SendMessageBatchAPI interface {
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

// DLQ parks entries in the events DLQ, one message per entry (its JSON).
type DLQ struct {
	API      SendMessageBatchAPI
	QueueURL string
}

var _ events.Parker = (*DLQ)(nil)

// Park sends the entries ten per call; any entry not accepted fails it.
func (d *DLQ) Park(ctx context.Context, entries []events.Entry) error {
	var errs []error
	for start := 0; start < len(entries); start += 10 {
		batch := entries[start:min(start+10, len(entries))]
		in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(d.QueueURL)}
		for i, e := range batch {
			body, err := json.Marshal(e)
			if err != nil {
				return fmt.Errorf("park event %s: %w", e.ID, err)
			}
			in.Entries = append(in.Entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(string(body))})
		}
		out, err := d.API.SendMessageBatch(ctx, in)
		if err != nil {
			errs = append(errs, fmt.Errorf("park %d events: %w", len(batch), err))
			continue
		}
		for _, f := range out.Failed {
			errs = append(errs, fmt.Errorf("park event: %s: %s", aws.ToString(f.Code), aws.ToString(f.Message)))
		}
	}
	return errors.Join(errs...)
}

// DecodeParked reads a parked entry back from an events DLQ message body.
func DecodeParked(body string) (events.Entry, error) {
	var e events.Entry
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		return e, fmt.Errorf("events DLQ message: %w", err)
	}
	if e.Source == "" || e.DetailType == "" || len(e.Detail) == 0 {
		return e, errors.New("events DLQ message: not a parked event")
	}
	return e, nil
}
