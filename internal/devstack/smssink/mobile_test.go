package smssink_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/smithy-go"

	"github.com/heraldhq/herald/internal/devstack/smssink"
)

const gcmApp = "arn:aws:sns:us-east-1:000000000000:app/GCM/sink-test"

func apiCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode() + ": " + api.ErrorMessage()
	}
	return ""
}

func TestMobileEndpointsAndPublishRules(t *testing.T) {
	sink, srv := startSink(t)
	if err := sink.AddPlatformApplication("arn:aws:sns:us-east-1:000000000000:app/WNS/x"); err == nil {
		t.Error("a WNS application was accepted")
	}
	if err := sink.AddPlatformApplication(gcmApp); err != nil {
		t.Fatal(err)
	}
	c := newClient(srv, 1)
	ctx := context.Background()
	if _, err := c.CreatePlatformEndpoint(ctx, &sns.CreatePlatformEndpointInput{PlatformApplicationArn: aws.String(gcmApp + "-nope"), Token: aws.String("t")}); !strings.HasPrefix(apiCode(err), "NotFound") {
		t.Errorf("unknown application: %v", err)
	}
	out, err := c.CreatePlatformEndpoint(ctx, &sns.CreatePlatformEndpointInput{PlatformApplicationArn: aws.String(gcmApp), Token: aws.String("t"), CustomUserData: aws.String(`{"userId":"u1","deviceId":"d1"}`)})
	if err != nil {
		t.Fatal(err)
	}
	arn := aws.ToString(out.EndpointArn)
	if !strings.HasPrefix(arn, "arn:aws:sns:us-east-1:000000000000:endpoint/GCM/sink-test/") {
		t.Errorf("endpoint ARN %s", arn)
	}
	_, err = c.CreatePlatformEndpoint(ctx, &sns.CreatePlatformEndpointInput{PlatformApplicationArn: aws.String(gcmApp), Token: aws.String("t"), CustomUserData: aws.String("other")})
	if want := "InvalidParameter: Invalid parameter: Token Reason: Endpoint " + arn + " already exists with the same Token, but different attributes."; apiCode(err) != want {
		t.Errorf("conflict: %q", apiCode(err))
	}
	publish := func(message string) error {
		_, err := c.Publish(ctx, &sns.PublishInput{TargetArn: aws.String(arn), Message: aws.String(message), MessageStructure: aws.String("json")})
		return err
	}
	for _, tc := range []struct{ message, code string }{
		{`not json`, "InvalidParameter"},
		{`{"APNS":"{}"}`, "InvalidParameter"}, // neither GCM nor default
		{`{"GCM":"not an object","default":"x"}`, "InvalidParameter"},
		{`{"GCM":"{\"x\":\"` + strings.Repeat("a", smssink.MaxMobilePayload) + `\"}","default":"x"}`, "InvalidParameter"},
	} {
		if err := publish(tc.message); !strings.HasPrefix(apiCode(err), tc.code) {
			t.Errorf("publish %.40s…: %v, want %s", tc.message, err, tc.code)
		}
	}
	if err := publish(`{"GCM":"{\"fcmV1Message\":{}}","default":"x"}`); err != nil {
		t.Fatal(err)
	}
	// The dev listing: the payload parsed, the ids from CustomUserData.
	rec := httptest.NewRecorder()
	sink.MobileHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/_dev/mobile-push", nil))
	var listed struct {
		Messages []struct {
			Platform, EndpointArn, DeviceID, UserID string
			Payload                                 map[string]any
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &listed); err != nil || len(listed.Messages) != 1 {
		t.Fatalf("listing %s: %v", rec.Body, err)
	}
	if m := listed.Messages[0]; m.Platform != "fcm" || m.EndpointArn != arn || m.DeviceID != "d1" || m.UserID != "u1" || m.Payload["fcmV1Message"] == nil {
		t.Errorf("listed %+v", m)
	}
	sink.DisableEndpoint(arn)
	if err := publish(`{"GCM":"{}","default":"x"}`); !strings.HasPrefix(apiCode(err), "EndpointDisabled") {
		t.Errorf("disabled: %v", err)
	}
	if _, err := c.DeleteEndpoint(ctx, &sns.DeleteEndpointInput{EndpointArn: aws.String(arn)}); err != nil {
		t.Fatal(err)
	}
	if err := publish(`{"GCM":"{}","default":"x"}`); !strings.Contains(apiCode(err), "No endpoint found for the target arn") {
		t.Errorf("deleted: %v", err)
	}
	if len(sink.Messages()) != 0 {
		t.Error("a mobile publish was listed as an SMS")
	}
}
