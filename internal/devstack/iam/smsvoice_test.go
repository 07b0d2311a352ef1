package iam

import (
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/pinpointsmsvoicev2"
)

// TestSMSVoiceGrant: SmsFunction's role, from the template through the real
// SAM transform, as End User Messaging SMS authorizes SendTextMessage (the
// origination identity and the configuration set): with the parameters set
// it may send from that identity with that configuration set only; with
// them empty (the default) it may not call SendTextMessage at all.
func TestSMSVoiceGrant(t *testing.T) {
	const (
		identity = "arn:aws:sms-voice:us-east-1:000000000000:pool/pool-0123456789abcdef0123456789abcdef"
		other    = "arn:aws:sms-voice:us-east-1:000000000000:pool/pool-ffffffffffffffffffffffffffffffff"
	)
	role := func(params map[string]string) *Role {
		return functionRole(t, filepath.Join(repoRoot(t), "template.yaml"), "SmsFunction", params)
	}
	allowed := func(r *Role, from, configurationSet string) bool {
		in := &pinpointsmsvoicev2.SendTextMessageInput{DestinationPhoneNumber: aws.String("+15555550100"), OriginationIdentity: aws.String(from)}
		if configurationSet != "" {
			in.ConfigurationSetName = aws.String(configurationSet)
		}
		reqs, err := Describe("Pinpoint SMS Voice V2", "SendTextMessage", in, testRegion, testAccount)
		if err != nil {
			t.Fatal(err)
		}
		for _, req := range reqs {
			if d, _ := r.Evaluate(req); d != Allowed {
				return false
			}
		}
		return true
	}
	on := role(map[string]string{"SmsVoiceOriginationIdentity": identity, "SmsVoiceConfigurationSet": "herald-sms"})
	for _, tc := range []struct {
		from, configurationSet string
		want                   bool
	}{
		{identity, "herald-sms", true},
		{identity, "", true},
		{other, "herald-sms", false},
		{identity, "other", false},
	} {
		if got := allowed(on, tc.from, tc.configurationSet); got != tc.want {
			t.Errorf("SendTextMessage from %s with %q: allowed %v, want %v", tc.from, tc.configurationSet, got, tc.want)
		}
	}
	if allowed(role(nil), identity, "") {
		t.Error("with SmsVoiceOriginationIdentity empty, SmsFunction may still call SendTextMessage")
	}
}
