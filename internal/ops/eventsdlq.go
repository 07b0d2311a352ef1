package ops

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/heraldhq/herald/internal/events"
	"github.com/heraldhq/herald/internal/events/awsbus"
)

// ParkedEvent is an events DLQ message as the commands print it: the
// event's id, detail type and the state it reports (never its whole detail).
type ParkedEvent struct {
	EventID        string `json:"eventId"`
	DetailType     string `json:"detailType"`
	NotificationID string `json:"notificationId,omitempty"`
	CampaignID     string `json:"campaignId,omitempty"`
	Channel        string `json:"channel,omitempty"`
	Status         string `json:"status,omitempty"`
}

const malformedEvent = "malformed body: not a parked event"

func parkedEventOf(e events.Entry) *ParkedEvent {
	var d struct{ NotificationID, CampaignID, Channel, Status string }
	_ = json.Unmarshal(e.Detail, &d)
	return &ParkedEvent{EventID: e.ID, DetailType: e.DetailType, NotificationID: d.NotificationID, CampaignID: d.CampaignID, Channel: d.Channel, Status: d.Status}
}

func describeEventMessage(m sqstypes.Message, out *Parked) {
	e, err := awsbus.DecodeParked(aws.ToString(m.Body))
	if err != nil {
		out.Problem = malformedEvent
		return
	}
	out.Event = parkedEventOf(e)
}

// redriveEvents publishes parked events on the bus again, one by one at the
// given rate, selected by message id, event id or notification id, or all;
// a published event leaves the DLQ. Consumers deduplicate on the event id,
// so publishing one twice is harmless.
func (o *Operator) redriveEvents(ctx context.Context, q DLQ, opts RedriveOptions, res RedriveResult) (RedriveResult, error) {
	if o.Events == nil {
		return res, fmt.Errorf("no event bus in the deployment description (EventBusName output, EVENT_BUS_NAME)")
	}
	return o.redriveParked(ctx, q, opts, res, parkedRedrive{
		ids: "message, event or notification",
		keys: func(m sqstypes.Message) []string {
			keys := []string{aws.ToString(m.MessageId)}
			if e, err := awsbus.DecodeParked(aws.ToString(m.Body)); err == nil {
				p := parkedEventOf(e)
				keys = append(keys, p.EventID, p.NotificationID, p.CampaignID)
			}
			return keys
		},
		plan: func(ctx context.Context, m sqstypes.Message) (RedriveItem, func(*RedriveItem) bool, error) {
			it := RedriveItem{MessageID: aws.ToString(m.MessageId)}
			e, err := awsbus.DecodeParked(aws.ToString(m.Body))
			if err != nil {
				it.Action, it.Note = ActionLeave, malformedEvent+" (purge it once read)"
				return it, nil, nil
			}
			it.Event = parkedEventOf(e)
			it.Action, it.Note = ActionResend, "published on the event bus again (consumers deduplicate on eventId)"
			return it, func(it *RedriveItem) bool { return o.publishParked(ctx, q, m, e, it) }, nil
		},
	})
}

// publishParked puts one parked event on the bus and deletes its message;
// it reports whether the message left the DLQ.
func (o *Operator) publishParked(ctx context.Context, q DLQ, m sqstypes.Message, e events.Entry, it *RedriveItem) bool {
	errs, err := o.Events.Put(ctx, []events.Entry{e})
	if err == nil && len(errs) > 0 && errs[0] != nil {
		err = errs[0]
	}
	if err != nil {
		it.Error = "publish: " + err.Error()
		return false
	}
	it.Done = true
	if _, err := o.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.URL), ReceiptHandle: m.ReceiptHandle}); err != nil {
		it.Note += "; the DLQ copy could not be deleted (" + err.Error() + "): a later redrive publishes it again, which consumers deduplicate"
		return false
	}
	return true
}
