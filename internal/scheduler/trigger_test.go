package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/domain"
)

// sample reads one of the sample events `sam local invoke` sends
// (events/, held to aws-lambda-go's types by internal/app's tests).
func sample(t *testing.T, name string) json.RawMessage {
	t.Helper()
	raw, err := os.ReadFile("../../events/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// The schedule's EventBridge event is the tick: it probes the due index and
// reads no release partition.
func TestInvokeScheduledEventIsTheTick(t *testing.T) {
	st := &memStore{deliveries: map[string]*domain.Delivery{}}
	h, _ := newHandler(st, &memPublisher{})
	out, err := h.Invoke(context.Background(), sample(t, "scheduler-tick.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := out.(Summary); !ok {
		t.Errorf("result %T, want the tick's Summary", out)
	}
	if st.probes == 0 || st.queries != 0 {
		t.Errorf("%d probes, %d partition reads: want the tick's probes only", st.probes, st.queries)
	}
}

// An SQS event is a batch of release messages: each releases its partition;
// nothing is probed.
func TestInvokeSQSEventReleases(t *testing.T) {
	var ev events.SQSEvent
	if err := json.Unmarshal(sample(t, "scheduler-release-message.json"), &ev); err != nil {
		t.Fatal(err)
	}
	d := deferred("a", now.Add(-time.Minute))
	body, _ := json.Marshal(partitionOf(d))
	ev.Records[0].Body = string(body)
	raw, _ := json.Marshal(ev)
	st := &memStore{deliveries: map[string]*domain.Delivery{key("a", domain.ChannelEmail): d}}
	pub := &memPublisher{}
	h, _ := newHandler(st, pub)
	out, err := h.Invoke(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	resp, ok := out.(events.SQSEventResponse)
	if !ok || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("result %#v, want an SQS batch response without failures", out)
	}
	if len(pub.sent) != 1 || st.probes != 0 {
		t.Errorf("sent %d, probed %d: want the partition released and no tick", len(pub.sent), st.probes)
	}
}

// Any other event is refused, not guessed to be a tick: another rule's
// EventBridge event (even one whose detail mentions aws:sqs), another
// service's records, a mix, an empty batch, no object at all.
func TestInvokeRefusesUnknownEvents(t *testing.T) {
	for name, raw := range map[string]string{
		"empty object":         `{}`,
		"null":                 `null`,
		"array":                `[]`,
		"not json":             `{`,
		"another rule":         `{"source":"aws.events","detail-type":"Object Created","detail":{}}`,
		"custom event":         `{"source":"app","detail-type":"Scheduled Event","detail":{"note":"\"aws:sqs\""}}`,
		"stream records":       `{"Records":[{"eventSource":"aws:dynamodb","eventName":"INSERT"}]}`,
		"mixed records":        `{"Records":[{"eventSource":"aws:sqs","body":"{}"},{"eventSource":"aws:sns"}]}`,
		"no records":           `{"Records":[]}`,
		"records and a source": `{"Records":[{"eventSource":"aws:sqs","body":"{}"}],"source":"aws.events","detail-type":"Scheduled Event"}`,
		"source alone":         `{"source":"aws.events"}`,
	} {
		t.Run(name, func(t *testing.T) {
			st := &memStore{deliveries: map[string]*domain.Delivery{}}
			h, rel := newHandler(st, &memPublisher{})
			out, err := h.Invoke(context.Background(), json.RawMessage(raw))
			if !errors.Is(err, ErrUnknownTrigger) {
				t.Errorf("Invoke = %#v, %v; want ErrUnknownTrigger", out, err)
			}
			if st.probes != 0 || st.queries != 0 || len(rel.sent) != 0 {
				t.Errorf("%d probes, %d reads, %d releases: an unknown event must run nothing", st.probes, st.queries, len(rel.sent))
			}
		})
	}
}
