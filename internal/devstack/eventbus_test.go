package devstack

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/smithy-go"

	"github.com/heraldhq/herald/internal/devstack/eventpattern"
)

// TestEventBusPutEvents: the local bus answers the SDK's PutEvents with
// EventBridge's limits and errors, matches rules and lists what it accepted.
func TestEventBusPutEvents(t *testing.T) {
	bus := &EventBus{Name: "herald", ARN: "arn:aws:events:us-east-1:000000000000:event-bus/herald", faults: NewFaults(nil, time.Now), now: time.Now,
		log:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		rules: []busRule{{name: "Failures", pattern: eventpattern.MustCompile(`{"detail":{"status":["failed"]}}`)}}}
	srv := httptest.NewServer(bus)
	defer srv.Close()
	c := eventbridge.New(eventbridge.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("k", "s", "")})
	entry := func(detail string) ebtypes.PutEventsRequestEntry {
		return ebtypes.PutEventsRequestEntry{EventBusName: aws.String("herald"), Source: aws.String("herald"), DetailType: aws.String("Delivery State Change"), Detail: aws.String(detail)}
	}
	ctx := context.Background()
	out, err := c.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{entry(`{"status":"failed"}`), entry(`{"status":"sent"}`), entry(`not json`)}})
	if err != nil {
		t.Fatal(err)
	}
	if out.FailedEntryCount != 1 || aws.ToString(out.Entries[2].ErrorCode) != "MalformedDetail" || aws.ToString(out.Entries[0].EventId) == "" {
		t.Errorf("result %+v", out)
	}
	evs := bus.Events()
	if len(evs) != 2 || len(evs[0].MatchedRules) != 1 || len(evs[1].MatchedRules) != 0 {
		t.Errorf("events %+v", evs)
	}

	apiCode := func(err error) string {
		var ae smithy.APIError
		if errors.As(err, &ae) {
			return ae.ErrorCode()
		}
		return ""
	}
	eleven := make([]ebtypes.PutEventsRequestEntry, 11)
	for i := range eleven {
		eleven[i] = entry(`{}`)
	}
	if _, err := c.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: eleven}); apiCode(err) != "ValidationException" {
		t.Errorf("11 entries: %v", err)
	}
	big := `{"x":"` + strings.Repeat("a", 130*1024) + `"}`
	if _, err := c.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{entry(big), entry(big)}}); apiCode(err) != "ValidationException" {
		t.Errorf("over 256 KB: %v", err)
	}
	other := entry(`{}`)
	other.EventBusName = aws.String("other")
	if _, err := c.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{other}}); apiCode(err) != "ResourceNotFoundException" {
		t.Errorf("unknown bus: %v", err)
	}

	if err := bus.faults.Set(EventsChannel, FaultTransient, 1); err != nil {
		t.Fatal(err)
	}
	out, err = c.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{entry(`{}`), entry(`{}`)}})
	if err != nil || out.FailedEntryCount != 2 || aws.ToString(out.Entries[0].ErrorCode) != "ThrottlingException" {
		t.Errorf("transient fault: %+v %v", out, err)
	}
	if out, err = c.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{entry(`{}`)}}); err != nil || out.FailedEntryCount != 0 {
		t.Errorf("after the fault: %+v %v", out, err)
	}
}
