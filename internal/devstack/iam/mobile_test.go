package iam

import (
	"context"
	"testing"
)

// The device grants follow the platform application parameters: none when a
// parameter is empty; with one, exactly that application and its endpoints.
func TestMobilePushGrantsFollowTheParameters(t *testing.T) {
	const (
		fcm      = "arn:aws:sns:eu-west-1:123456789012:app/GCM/prod"
		fcmEnd   = "arn:aws:sns:eu-west-1:123456789012:endpoint/GCM/prod/0d6c7f0e"
		otherApp = "arn:aws:sns:eu-west-1:123456789012:app/GCM/other"
		otherEnd = "arn:aws:sns:eu-west-1:123456789012:endpoint/GCM/other/0d6c7f0e"
		apnsEnd  = "arn:aws:sns:eu-west-1:123456789012:endpoint/APNS/prod/0d6c7f0e"
	)
	root := repoRoot(t)
	withFCM, err := Transform(context.Background(), TransformOptions{Root: root, Template: root + "/template.yaml",
		Params: map[string]string{"FcmApplicationArn": fcm},
		Stack:  Stack{Name: "herald", Prefix: "herald-", Region: testRegion, Account: testAccount}})
	if err != nil {
		t.Fatal(err)
	}
	none := transformed(t)
	for _, tc := range []struct {
		fn, action, resource string
		withFCM              Decision
	}{
		{"ApiFunction", "sns:CreatePlatformEndpoint", fcm, Allowed},
		{"ApiFunction", "sns:GetEndpointAttributes", fcmEnd, Allowed},
		{"ApiFunction", "sns:SetEndpointAttributes", fcmEnd, Allowed},
		{"ApiFunction", "sns:DeleteEndpoint", fcmEnd, Allowed},
		{"ApiFunction", "sns:Publish", fcmEnd, ImplicitDeny},
		{"ApiFunction", "sns:CreatePlatformEndpoint", otherApp, ImplicitDeny},
		{"ApiFunction", "sns:SetEndpointAttributes", otherEnd, ImplicitDeny},
		{"PushFunction", "sns:Publish", fcmEnd, Allowed},
		{"PushFunction", "sns:DeleteEndpoint", fcmEnd, Allowed},
		{"PushFunction", "sns:Publish", otherEnd, ImplicitDeny},
		{"PushFunction", "sns:Publish", apnsEnd, ImplicitDeny},
		{"PushFunction", "sns:CreatePlatformEndpoint", fcm, ImplicitDeny},
		{"PushFunction", "sns:SetEndpointAttributes", fcmEnd, ImplicitDeny},
	} {
		for _, c := range []struct {
			name string
			p    *Policies
			want Decision
		}{{"with FcmApplicationArn", withFCM, tc.withFCM}, {"with no application", none, ImplicitDeny}} {
			role, ok := c.p.Role(tc.fn)
			if !ok {
				t.Fatalf("no role for %s", tc.fn)
			}
			if got, _ := role.Evaluate(Request{Action: tc.action, Resource: tc.resource}); got != c.want {
				t.Errorf("%s %s: %s on %s = %v, want %v", c.name, tc.fn, tc.action, tc.resource, got, c.want)
			}
		}
	}
}
