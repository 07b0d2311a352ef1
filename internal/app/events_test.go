package app

import (
	"bytes"
	"crypto/md5"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/recovery"
)

// TestSampleEventsRoundTrip decodes each sample event for `sam local invoke`
// into the aws-lambda-go type its function takes, re-encodes it and checks
// nothing was lost or invented: the samples are what Lambda sends.
func TestSampleEventsRoundTrip(t *testing.T) {
	samples := map[string]func() any{
		"api-create-notification.json":   func() any { return new(events.APIGatewayV2HTTPRequest) },
		"relay-stream-insert.json":       func() any { return new(events.DynamoDBEvent) },
		"relayhigh-stream-insert.json":   func() any { return new(events.DynamoDBEvent) },
		"email-work-message.json":        func() any { return new(events.SQSEvent) },
		"sms-work-message.json":          func() any { return new(events.SQSEvent) },
		"push-work-message.json":         func() any { return new(events.SQSEvent) },
		"scheduler-tick.json":            func() any { return new(events.EventBridgeEvent) },
		"scheduler-release-message.json": func() any { return new(events.SQSEvent) },
		"campaign-plan-message.json":     func() any { return new(events.SQSEvent) },
		"feedback-ses-bounce.json":       func() any { return new(events.SNSEvent) },
		"live-connect.json":              func() any { return new(events.APIGatewayWebsocketProxyRequest) },
		"liveauthorizer-connect.json":    func() any { return new(events.APIGatewayCustomAuthorizerRequestTypeRequest) },
		"livepost-message.json":          func() any { return new(events.SQSEvent) },
	}
	files, _ := filepath.Glob("../../events/*.json")
	if len(files) != len(samples) {
		t.Errorf("events/ has %d samples, the test knows %d", len(files), len(samples))
	}
	for name, typ := range samples {
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("../../events", name))
			if err != nil {
				t.Fatal(err)
			}
			v := typ()
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(v); err != nil {
				t.Fatalf("decode into %T: %v", v, err)
			}
			again, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			var a, b any
			_ = json.Unmarshal(raw, &a)
			_ = json.Unmarshal(again, &b)
			if !reflect.DeepEqual(prune(a), prune(b)) {
				t.Errorf("round trip changed the event:\n in: %s\nout: %s", raw, again)
			}
		})
	}
}

// TestSampleWorkMessages: each work-message sample is a valid work message
// for its channel with the recipient's userId, as the relay sends it, so
// `sam local invoke` takes the production read path (one BatchGetItem for
// notification, delivery, profile and preferences) rather than the fallback
// for messages written before userId existed; md5OfBody is the body's.
func TestSampleWorkMessages(t *testing.T) {
	for _, c := range []domain.Channel{domain.ChannelEmail, domain.ChannelSMS, domain.ChannelPush} {
		t.Run(string(c), func(t *testing.T) {
			ev := sqsSample(t, string(c)+"-work-message.json")
			for _, r := range ev.Records {
				wm, err := domain.DecodeWorkMessage(r.Body, c)
				if err != nil {
					t.Fatalf("body %q: %v", r.Body, err)
				}
				if wm.UserID == "" || wm.NotificationID == "" {
					t.Errorf("body %q: want notificationId and userId", r.Body)
				}
				if sum := fmt.Sprintf("%x", md5.Sum([]byte(r.Body))); r.Md5OfBody != sum {
					t.Errorf("md5OfBody %s, the body's is %s", r.Md5OfBody, sum)
				}
			}
		})
	}
}

// TestSampleStepMessages: the scheduler's release sample and the campaign
// function's sample carry bodies their production decoders accept (a
// malformed one would only show the DLQ path), with md5OfBody the body's.
func TestSampleStepMessages(t *testing.T) {
	samples := map[string]func(body string) error{
		"scheduler-release-message.json": func(b string) error { _, err := recovery.DecodeReleaseMessage(b); return err },
		"campaign-plan-message.json":     func(b string) error { _, err := domain.DecodeCampaignMessage(b); return err },
	}
	for name, decode := range samples {
		t.Run(name, func(t *testing.T) {
			ev := sqsSample(t, name)
			for _, r := range ev.Records {
				if err := decode(r.Body); err != nil {
					t.Errorf("body %q: %v", r.Body, err)
				}
				if sum := fmt.Sprintf("%x", md5.Sum([]byte(r.Body))); r.Md5OfBody != sum {
					t.Errorf("md5OfBody %s, the body's is %s", r.Md5OfBody, sum)
				}
			}
		})
	}
}

// prune drops empty values, which the event types omit or add as zero values.
func prune(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			if p := prune(x); p != nil {
				out[k] = p
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		if len(v) == 0 {
			return nil
		}
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = prune(x)
		}
		return out
	case string:
		if v == "" {
			return nil
		}
	case bool:
		if !v {
			return nil
		}
	case float64:
		if v == 0 {
			return nil
		}
	case nil:
		return nil
	}
	return v
}

// sqsSample reads events/<name> as an SQS event with at least one record.
func sqsSample(t *testing.T, name string) events.SQSEvent {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("../../events", name))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(raw, &ev); err != nil || len(ev.Records) == 0 {
		t.Fatalf("decode %s: %v (%d records)", name, err, len(ev.Records))
	}
	return ev
}
