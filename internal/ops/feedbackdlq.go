package ops

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// lambdaErrorCodeAttr is the message attribute Lambda sets on an
// asynchronous invocation's event in its DLQ (with RequestID and
// ErrorMessage; the message may quote data, so it is not shown).
const lambdaErrorCodeAttr = "ErrorCode"

// ErrNoRedrive: the feedback DLQ is inspected and purged, not redriven. Its
// messages are SNS notifications of SES events the feedback function failed
// on; SES does not publish them again, and replaying one needs the function
// fixed first (docs/runbook.md).
var ErrNoRedrive = errors.New("the feedback DLQ is not redriven: `herald dlq show feedback` names the SES events the feedback function failed on; fix the cause (its logs), replay each event with `aws lambda invoke`, then `herald dlq purge feedback --yes` (docs/runbook.md, Feedback DLQ not empty)")

// FeedbackEvent describes a feedback DLQ message: the SES events it carries
// (event type and SES message id only, never an address) and Lambda's error
// code.
type FeedbackEvent struct {
	Events    []FeedbackSESEvent `json:"events"`
	ErrorCode string             `json:"errorCode,omitempty"`
}

// FeedbackSESEvent is one SES event of a parked SNS notification.
type FeedbackSESEvent struct {
	SNSMessageID string `json:"snsMessageId"`
	EventType    string `json:"eventType"`
	SESMessageID string `json:"sesMessageId"`
}

// describeFeedbackMessage reads the SNS event Lambda parked: ids and event
// types only.
func describeFeedbackMessage(m sqstypes.Message, p *Parked) {
	var body struct {
		Records []struct {
			SNS struct {
				MessageID string `json:"MessageId"`
				Message   string `json:"Message"`
			} `json:"Sns"`
		} `json:"Records"`
	}
	f := &FeedbackEvent{}
	if a, ok := m.MessageAttributes[lambdaErrorCodeAttr]; ok {
		f.ErrorCode = aws.ToString(a.StringValue)
	}
	p.Feedback = f
	if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &body); err != nil || len(body.Records) == 0 {
		p.Problem = "not an SNS event: purge it"
		return
	}
	var bad []string
	for _, r := range body.Records {
		var ses struct {
			EventType        string `json:"eventType"`
			NotificationType string `json:"notificationType"`
			Mail             struct {
				MessageID string `json:"messageId"`
			} `json:"mail"`
		}
		if err := json.Unmarshal([]byte(r.SNS.Message), &ses); err != nil {
			bad = append(bad, r.SNS.MessageID)
			continue
		}
		kind := ses.EventType
		if kind == "" {
			kind = ses.NotificationType
		}
		f.Events = append(f.Events, FeedbackSESEvent{SNSMessageID: r.SNS.MessageID, EventType: kind, SESMessageID: ses.Mail.MessageID})
	}
	if len(bad) > 0 {
		p.Problem = "SNS message(s) " + strings.Join(bad, ", ") + " hold no SES event JSON"
	}
}
