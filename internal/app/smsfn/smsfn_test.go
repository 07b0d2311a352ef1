package smsfn

import (
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/app"
)

// The provider parameters are checked before anything is wired: End User
// Messaging as the primary needs its origination identity.
func TestNewChecksThePrimaryProvider(t *testing.T) {
	for _, tc := range []struct {
		primary, identity, want string
	}{
		{"sms-voice", "", "needs SMS_VOICE_ORIGINATION_IDENTITY"},
		{"pinpoint", "arn:aws:sms-voice:us-east-1:111122223333:pool/pool-1", `SMS_PRIMARY_PROVIDER "pinpoint"`},
	} {
		env := map[string]string{"TABLE_NAME": "t", "SMS_PRIMARY_PROVIDER": tc.primary, "SMS_VOICE_ORIGINATION_IDENTITY": tc.identity}
		_, err := New(app.Deps{Getenv: func(k string) string { return env[k] }, Now: time.Now})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.primary, err, tc.want)
		}
	}
}
