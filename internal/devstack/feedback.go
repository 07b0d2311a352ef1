package devstack

import (
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
)

// FeedbackHandler is the feedback function's handler.
type FeedbackHandler func(context.Context, events.SNSEvent) error

// SESEvent plays SES event publishing and SNS for the feedback function:
// sesEvent is the JSON SES would publish for the configuration set (e.g. an
// {"eventType":"Bounce",…} record); it is wrapped in an SNS notification from
// the feedback topic and the function is invoked with it, as the SNS
// subscription would. The error is the function's (Lambda would retry it).
func (s *Stack) SESEvent(ctx context.Context, sesEvent []byte) error {
	topic := "arn:aws:sns:" + LocalRegion + ":" + LocalAccountID + ":" + s.Resources.values["ref:FeedbackTopic"]
	ev := events.SNSEvent{Records: []events.SNSEventRecord{{
		EventVersion: "1.0", EventSource: "aws:sns", EventSubscriptionArn: topic + ":" + newRequestID(),
		SNS: events.SNSEntity{
			Type: "Notification", MessageID: newRequestID(), TopicArn: topic, Message: string(sesEvent),
			Timestamp: s.Clock.Now().UTC(), SignatureVersion: "1",
		},
	}}}
	return s.invoke("FeedbackFunction")(ctx, s.feedbackTimeout, func(ctx context.Context) error {
		return s.feedback(ctx, ev)
	})
}

// sesEventsRoute serves POST /_dev/ses-events with an SES event JSON body:
// 202 when the feedback function handled it, 500 with the error when it
// failed (in AWS, Lambda would retry the event).
func (s *Stack) sesEventsRoute(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 256<<10))
	if err != nil || !json.Valid(body) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "body must be one SES event (JSON), as SES publishes it to SNS"})
		return
	}
	if s.feedback == nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "the template has no FeedbackFunction"})
		return
	}
	if err := s.SESEvent(r.Context(), body); err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	w.WriteHeader(http.StatusAccepted)
}
