package snspush_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/smithy-go"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/devstack/smssink"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/push"
	"github.com/heraldhq/herald/internal/snspush"
)

const (
	apnsApp = "arn:aws:sns:us-east-1:000000000000:app/APNS/herald-test"
	fcmApp  = "arn:aws:sns:us-east-1:000000000000:app/GCM/herald-test"
)

var token = strings.Repeat("ab", 32)

// env is the adapter against the local SNS emulation through the real SDK.
func env(t *testing.T) (*snspush.Adapter, *smssink.Sink) {
	t.Helper()
	sink := smssink.New(nil)
	for _, a := range []string{apnsApp, fcmApp} {
		if err := sink.AddPlatformApplication(a); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(sink.APIHandler())
	t.Cleanup(srv.Close)
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", ""), HTTPClient: srv.Client(),
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 1 })
		}}
	client := sns.NewFromConfig(cfg, func(o *sns.Options) { o.BaseEndpoint = aws.String(srv.URL) })
	return snspush.New(client, snspush.Applications{domain.PlatformAPNs: apnsApp, domain.PlatformFCM: fcmApp}), sink
}

func TestRegisterIsIdempotentAndResolvesTheConflict(t *testing.T) {
	a, sink := env(t)
	ctx := context.Background()
	if a.Configured(domain.PlatformAPNsSandbox) {
		t.Error("apns_sandbox has no application but reports configured")
	}
	if _, err := a.Register(ctx, domain.PlatformAPNsSandbox, token, "x"); !errors.Is(err, snspush.ErrPlatformNotConfigured) {
		t.Errorf("unconfigured platform: %v", err)
	}
	first, err := a.Register(ctx, domain.PlatformAPNs, token, `{"userId":"u1"}`)
	if err != nil {
		t.Fatal(err)
	}
	again, err := a.Register(ctx, domain.PlatformAPNs, token, `{"userId":"u1"}`)
	if err != nil || again != first {
		t.Fatalf("same token and data: %s, %v; want %s", again, err, first)
	}
	// Another user's data: SNS answers its conflict; the endpoint is set.
	moved, err := a.Register(ctx, domain.PlatformAPNs, token, `{"userId":"u2"}`)
	if err != nil || moved != first {
		t.Fatalf("conflict: %s, %v; want the existing endpoint %s", moved, err, first)
	}
	if got := sink.EndpointAttributes(first)["CustomUserData"]; got != `{"userId":"u2"}` {
		t.Errorf("CustomUserData %q after the conflict", got)
	}
	// Disabled by a refused token: registering again re-enables it.
	sink.DisableEndpoint(first)
	if arn, err := a.Register(ctx, domain.PlatformAPNs, token, `{"userId":"u2"}`); err != nil || arn != first {
		t.Fatalf("re-register a disabled endpoint: %s, %v", arn, err)
	}
	if got := sink.EndpointAttributes(first)["Enabled"]; got != "true" {
		t.Errorf("Enabled %q after re-registering", got)
	}
	if n := len(sink.Endpoints(apnsApp)); n != 1 {
		t.Errorf("%d endpoints for one token, want 1", n)
	}
	// SNS refuses a token: ErrTokenRejected, without the token in the error.
	_, err = a.Register(ctx, domain.PlatformAPNs, "not-hex", "x")
	if !errors.Is(err, domain.ErrTokenRejected) || strings.Contains(err.Error(), "not-hex") {
		t.Errorf("refused token: %v", err)
	}
}

func TestPublishAndClassify(t *testing.T) {
	a, sink := env(t)
	ctx := context.Background()
	arn, err := a.Register(ctx, domain.PlatformFCM, "fcm-token-1", `{"userId":"u1","deviceId":"d1"}`)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := push.BuildMobile(domain.PlatformFCM, push.MobileContent{Payload: catalog.PushPayload{ID: "n1", Title: "Hi", Body: "there", URL: "https://example.com/x"},
		Type: "comment.mentioned", Priority: domain.PriorityHigh, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if id, err := a.Publish(ctx, arn, msg); err != nil || id == "" {
		t.Fatalf("publish: %q, %v", id, err)
	}
	got := sink.MobileMessages()
	if len(got) != 1 || got[0].Platform != "fcm" || got[0].DeviceID != "d1" || got[0].UserID != "u1" {
		t.Fatalf("captured %+v", got)
	}
	var payload map[string]any
	if err := json.Unmarshal(got[0].Payload, &payload); err != nil || payload["fcmV1Message"] == nil {
		t.Errorf("payload %s: %v", got[0].Payload, err)
	}
	// A disabled endpoint is gone; so is a deleted one.
	sink.DisableEndpoint(arn)
	var me *push.MobileError
	if _, err := a.Publish(ctx, arn, msg); !errors.As(err, &me) || me.Kind != push.MobileGone || me.Code != "EndpointDisabled" {
		t.Errorf("disabled: %v", err)
	}
	if err := a.DeleteEndpoint(ctx, arn); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteEndpoint(ctx, arn); err != nil {
		t.Errorf("deleting again: %v (SNS's DeleteEndpoint is idempotent)", err)
	}
	if _, err := a.Publish(ctx, arn, msg); !errors.As(err, &me) || me.Kind != push.MobileGone {
		t.Errorf("deleted: %v", err)
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		code, message string
		kind          push.MobileErrorKind
		alert         bool
	}{
		{"EndpointDisabled", "Endpoint is disabled", push.MobileGone, false},
		{"InvalidParameter", "Invalid parameter: TargetArn Reason: No endpoint found for the target arn specified", push.MobileGone, false},
		{"InvalidParameter", "Invalid parameter: Message too long", push.MobileRejected, false},
		// The platform application or the account cannot send: no
		// device's fault, so the delivery waits (retried, parked) and the
		// operator is alerted; the device is kept.
		{"PlatformApplicationDisabled", "Platform application is disabled", push.MobileTransient, true},
		{"AuthorizationError", "User is not authorized to perform: SNS:Publish", push.MobileTransient, true},
		{"InvalidSecurity", "The credential signature isn't valid", push.MobileTransient, true},
		{"KMSDisabled", "key is disabled", push.MobileTransient, true},
		{"KMSAccessDenied", "access denied", push.MobileTransient, true},
		{"KMSThrottling", "Rate exceeded", push.MobileTransient, false},
		{"Throttled", "Rate exceeded", push.MobileTransient, false},
		{"Throttling", "Rate exceeded", push.MobileTransient, false},
		{"InternalError", "oops", push.MobileTransient, false},
	} {
		err := snspush.Classify(&smithy.GenericAPIError{Code: tc.code, Message: tc.message})
		var me *push.MobileError
		if !errors.As(err, &me) || me.Kind != tc.kind || me.Alert != tc.alert {
			t.Errorf("%s %q: %+v, want kind %d alert %v", tc.code, tc.message, me, tc.kind, tc.alert)
		}
	}
	var me *push.MobileError
	if err := snspush.Classify(errors.New("connection reset")); !errors.As(err, &me) || me.Kind != push.MobileTransient {
		t.Errorf("transport error: %v", err)
	}
}
