package policy

import (
	"testing"

	"github.com/heraldhq/herald/internal/domain"
)

// Push reaches browsers and native devices alike: a user with devices only
// has a push contact, one with neither has none.
func TestPushContactIsAnySubscriptionOrDevice(t *testing.T) {
	n := &domain.Notification{Recipient: domain.Recipient{UserID: "u1"}}
	for _, tc := range []struct {
		name    string
		profile *domain.RecipientProfile
		want    bool
	}{
		{"nothing", &domain.RecipientProfile{}, false},
		{"a browser", &domain.RecipientProfile{PushSubscriptions: []domain.PushSubscription{{ID: "s1"}}}, true},
		{"a device only", &domain.RecipientProfile{Devices: []domain.Device{{ID: "d1", Platform: domain.PlatformFCM}}}, true},
	} {
		if _, ok := Contact(n, tc.profile, domain.ChannelPush); ok != tc.want {
			t.Errorf("%s: contact %v, want %v", tc.name, ok, tc.want)
		}
	}
}
