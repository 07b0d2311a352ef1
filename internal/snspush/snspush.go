// Package snspush is the SNS mobile push adapter: it registers devices as
// platform endpoints of the platforms' applications (APNs, APNs sandbox,
// FCM), publishes to them and deletes them, translating SNS errors into
// push.MobileError and the registration errors below.
//
// Registration follows SNS's token-management guidance: CreatePlatformEndpoint
// is idempotent for the same token and attributes; with the same token but
// other attributes (another CustomUserData, or an endpoint SNS disabled) it
// fails with InvalidParameter "… Endpoint <arn> already exists with the same
// Token, but different attributes." — that endpoint is then read and set
// (token, user data, Enabled true), so one token never has two endpoints.
package snspush

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/smithy-go"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/push"
	"github.com/heraldhq/herald/internal/sendretry"
)

// API is the part of the SNS client the adapter calls.
type API interface {
	CreatePlatformEndpoint(context.Context, *sns.CreatePlatformEndpointInput, ...func(*sns.Options)) (*sns.CreatePlatformEndpointOutput, error)
	GetEndpointAttributes(context.Context, *sns.GetEndpointAttributesInput, ...func(*sns.Options)) (*sns.GetEndpointAttributesOutput, error)
	SetEndpointAttributes(context.Context, *sns.SetEndpointAttributesInput, ...func(*sns.Options)) (*sns.SetEndpointAttributesOutput, error)
	DeleteEndpoint(context.Context, *sns.DeleteEndpointInput, ...func(*sns.Options)) (*sns.DeleteEndpointOutput, error)
	Publish(context.Context, *sns.PublishInput, ...func(*sns.Options)) (*sns.PublishOutput, error)
}

// Retryer is the SNS client's retry policy: sendretry's (Publish has no
// idempotency token), also retrying SNS's "Throttled" (429).
func Retryer() aws.Retryer { return sendretry.New("Throttled") }

// Applications are the platform application ARNs; an empty one is a
// platform that is off.
type Applications map[domain.Platform]string

// ApplicationsFrom reads APNS_APPLICATION_ARN, APNS_SANDBOX_APPLICATION_ARN
// and FCM_APPLICATION_ARN.
func ApplicationsFrom(getenv func(string) string) Applications {
	return Applications{
		domain.PlatformAPNs:        getenv("APNS_APPLICATION_ARN"),
		domain.PlatformAPNsSandbox: getenv("APNS_SANDBOX_APPLICATION_ARN"),
		domain.PlatformFCM:         getenv("FCM_APPLICATION_ARN"),
	}
}

// Adapter talks to SNS.
type Adapter struct {
	api  API
	apps Applications
}

// New returns an adapter; apps may be nil for publishing only.
func New(api API, apps Applications) *Adapter { return &Adapter{api: api, apps: apps} }

var _ push.Mobile = (*Adapter)(nil)

// Registration errors.
var (
	// ErrPlatformNotConfigured: the platform's application ARN is empty.
	ErrPlatformNotConfigured = errors.New("platform not configured")
	// ErrTokenRejected: SNS refused the token (InvalidParameter).
	ErrTokenRejected = domain.ErrTokenRejected
	// ErrUnavailable: SNS throttled or failed; the caller may retry.
	ErrUnavailable = domain.ErrProviderUnavailable
)

// Configured reports whether platform has an application.
func (a *Adapter) Configured(p domain.Platform) bool { return a.apps[p] != "" }

// conflict matches SNS's answer to a CreatePlatformEndpoint whose token has
// an endpoint with other attributes, and captures that endpoint's ARN.
var conflict = regexp.MustCompile(`Endpoint (arn:[^ ]+) already exists with the same [Tt]oken, but different attributes`)

// Register makes sure the device's token has exactly one endpoint in its
// platform's application, enabled, with customUserData, and returns its ARN.
func (a *Adapter) Register(ctx context.Context, p domain.Platform, token, customUserData string) (string, error) {
	app := a.apps[p]
	if app == "" {
		return "", ErrPlatformNotConfigured
	}
	for attempt := 0; attempt < 2; attempt++ {
		arn, mustSet, err := a.create(ctx, app, token, customUserData)
		if err != nil {
			return "", err
		}
		attrs, err := a.api.GetEndpointAttributes(ctx, &sns.GetEndpointAttributesInput{EndpointArn: aws.String(arn)})
		if isCode(err, "NotFound") {
			continue // deleted between the two calls: create again
		}
		if err != nil {
			return "", registrationError("get endpoint attributes", err)
		}
		cur := attrs.Attributes
		if mustSet || cur["Enabled"] != "true" || cur["Token"] != token || cur["CustomUserData"] != customUserData {
			if err := a.setAttributes(ctx, arn, token, customUserData); err != nil {
				return "", err
			}
		}
		return arn, nil
	}
	return "", fmt.Errorf("register endpoint: deleted while registering: %w", ErrUnavailable)
}

func (a *Adapter) setAttributes(ctx context.Context, arn, token, customUserData string) error {
	_, err := a.api.SetEndpointAttributes(ctx, &sns.SetEndpointAttributesInput{EndpointArn: aws.String(arn),
		Attributes: map[string]string{"Token": token, "CustomUserData": customUserData, "Enabled": "true"}})
	if err != nil {
		return registrationError("set endpoint attributes", err)
	}
	return nil
}

// create calls CreatePlatformEndpoint; on the attribute conflict it returns
// the existing endpoint with mustSet.
func (a *Adapter) create(ctx context.Context, app, token, customUserData string) (arn string, mustSet bool, err error) {
	out, err := a.api.CreatePlatformEndpoint(ctx, &sns.CreatePlatformEndpointInput{
		PlatformApplicationArn: aws.String(app), Token: aws.String(token), CustomUserData: aws.String(customUserData),
	})
	if err == nil {
		return aws.ToString(out.EndpointArn), false, nil
	}
	var api smithy.APIError
	if errors.As(err, &api) && isInvalidParameter(api.ErrorCode()) {
		if m := conflict.FindStringSubmatch(api.ErrorMessage()); m != nil {
			return m[1], true, nil
		}
	}
	return "", false, registrationError("create platform endpoint", err)
}

func registrationError(op string, err error) error {
	var api smithy.APIError
	if errors.As(err, &api) && isInvalidParameter(api.ErrorCode()) {
		return fmt.Errorf("%s: %w: %s", op, ErrTokenRejected, api.ErrorCode()) // the message may quote the token
	}
	return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
}

func isInvalidParameter(code string) bool {
	return code == "InvalidParameter" || code == "InvalidParameterException" || code == "InvalidParameterValue"
}

func isCode(err error, codes ...string) bool {
	var api smithy.APIError
	if !errors.As(err, &api) {
		return false
	}
	for _, c := range codes {
		if api.ErrorCode() == c || api.ErrorCode() == c+"Exception" {
			return true
		}
	}
	return false
}

// DeleteEndpoint implements push.Mobile and the device routes; deleting an
// endpoint that does not exist succeeds (SNS's DeleteEndpoint is idempotent).
func (a *Adapter) DeleteEndpoint(ctx context.Context, arn string) error {
	_, err := a.api.DeleteEndpoint(ctx, &sns.DeleteEndpointInput{EndpointArn: aws.String(arn)})
	if err != nil && !isCode(err, "NotFound") {
		return fmt.Errorf("delete endpoint: %w", err)
	}
	return nil
}

// Publish implements push.Mobile: one Publish to the endpoint with
// MessageStructure json.
func (a *Adapter) Publish(ctx context.Context, arn string, m push.MobileMessage) (string, error) {
	attrs := make(map[string]types.MessageAttributeValue, len(m.Attributes))
	for k, v := range m.Attributes {
		attrs[k] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	out, err := a.api.Publish(ctx, &sns.PublishInput{
		TargetArn: aws.String(arn), Message: aws.String(m.Message), MessageStructure: aws.String("json"), MessageAttributes: attrs,
	})
	if err != nil {
		return "", Classify(err)
	}
	return aws.ToString(out.MessageId), nil
}

// accountCodes are the publish errors of the platform application or the
// account, not of a device: the platform refused the application's
// credentials (PlatformApplicationDisabled), the role may not publish, the
// signature or the topic key (KMS) is refused. Every device of that
// platform fails alike, so they are transient (retried, then parked in the
// DLQ for a redrive) with the operator's alert — the device is kept and the
// delivery never failed: rejected for them.
var accountCodes = map[string]bool{
	"PlatformApplicationDisabled": true, "AuthorizationError": true, "InvalidSecurity": true,
	"KMSAccessDenied": true, "KMSDisabled": true, "KMSInvalidState": true, "KMSNotFound": true, "KMSOptInRequired": true,
}

// Classify turns a Publish error into a *push.MobileError:
//   - EndpointDisabled (the platform refused the token and SNS disabled the
//     endpoint), NotFound, or InvalidParameter naming the target endpoint →
//     gone: the device is removed;
//   - accountCodes (PlatformApplicationDisabled: the application's
//     credentials were refused; AuthorizationError, InvalidSecurity, KMS…)
//     → transient with an alert: the operator must act, the device is kept;
//   - other InvalidParameter → rejected;
//   - Throttled/Throttling, InternalError, any 5xx, transport errors →
//     transient.
func Classify(err error) error {
	var api smithy.APIError
	if !errors.As(err, &api) {
		return &push.MobileError{Kind: push.MobileTransient, Code: "transport", Err: err}
	}
	code := api.ErrorCode()
	msg := api.ErrorMessage()
	wrapped := fmt.Errorf("sns publish: %s", code) // SNS's text may quote the token
	switch {
	case code == "EndpointDisabled" || code == "EndpointDisabledException" || code == "NotFound" || code == "NotFoundException":
		return &push.MobileError{Kind: push.MobileGone, Code: "EndpointDisabled", Err: wrapped}
	case isInvalidParameter(code) && (strings.Contains(msg, "TargetArn") || strings.Contains(msg, "No endpoint found")):
		return &push.MobileError{Kind: push.MobileGone, Code: code, Err: wrapped}
	case accountCodes[strings.TrimSuffix(code, "Exception")]:
		// Not the device's fault: its delivery waits for the operator.
		return &push.MobileError{Kind: push.MobileTransient, Code: code, Alert: true, Err: wrapped}
	case isInvalidParameter(code):
		return &push.MobileError{Kind: push.MobileRejected, Code: code, Err: wrapped}
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() >= 400 && re.HTTPStatusCode() < 500 &&
		re.HTTPStatusCode() != http.StatusTooManyRequests && !strings.Contains(code, "Throttl") {
		return &push.MobileError{Kind: push.MobileRejected, Code: code, Err: wrapped}
	}
	return &push.MobileError{Kind: push.MobileTransient, Code: code, Err: wrapped}
}
