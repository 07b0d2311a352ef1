package domain

import "time"

// User is a recipient's profile as stored by the users API.
type User struct {
	ID            string
	Email         string
	Phone         string // E.164
	Locale        string // BCP 47
	Timezone      string // IANA
	QuietHours    *QuietHours
	DigestMinutes int // 0: the default window
	// SuppressedEmail is the address that hard-bounced or complained; email to
	// it is dropped until the profile's email changes.
	SuppressedEmail string
	UpdatedAt       time.Time
}

// QuietHours is a daily window in the user's timezone, "HH:MM" each; the
// window may cross midnight (22:00–08:00).
type QuietHours struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

// PushSubscription is a browser's Web Push subscription.
type PushSubscription struct {
	ID        string
	Endpoint  string
	P256dh    string
	Auth      string
	CreatedAt time.Time
}

// Preferences are a user's overrides: type → channel → enabled.
type Preferences map[string]map[Channel]bool

// Enabled returns the user's override for (type, channel) and whether one exists.
func (p Preferences) Enabled(typ string, c Channel) (enabled, ok bool) {
	byChannel, ok := p[typ]
	if !ok {
		return false, false
	}
	enabled, ok = byChannel[c]
	return enabled, ok
}

// RecipientProfile is everything the relay and workers need about a user, read in one query.
type RecipientProfile struct {
	User        *User // nil when the user has no stored profile
	Preferences Preferences
	// Budget is the user's own notification budget (nil: the catalog's),
	// kept with the preferences.
	Budget            *Budget
	PushSubscriptions []PushSubscription
	// Devices are the user's native app installations (SNS mobile push).
	Devices []Device
	// LastSeenAt is when the user's app last reported presence (zero:
	// never, or not within the presence item's resolution of a minute).
	LastSeenAt time.Time
	// PresentUntil is the end of a live connection's presence lease: the
	// user has the app open (a live connection) until then at least, unless
	// its $disconnect ended the lease (zero: none).
	PresentUntil time.Time
}

// ActiveWithin reports whether the user's app was seen within d before now,
// or is open now (a live connection's lease runs).
func (p *RecipientProfile) ActiveWithin(d time.Duration, now time.Time) bool {
	if now.Before(p.PresentUntil) {
		return true
	}
	return !p.LastSeenAt.IsZero() && now.Sub(p.LastSeenAt) < d
}

// Platform is a native push service a device is reached through (SNS mobile
// push platform applications).
type Platform string

const (
	PlatformAPNs        Platform = "apns"         // Apple, production
	PlatformAPNsSandbox Platform = "apns_sandbox" // Apple, development builds
	PlatformFCM         Platform = "fcm"          // Firebase Cloud Messaging (Android, and iOS through Firebase)
)

// Platforms lists every platform in a stable order.
var Platforms = []Platform{PlatformAPNs, PlatformAPNsSandbox, PlatformFCM}

// Valid reports whether p is a known platform.
func (p Platform) Valid() bool {
	return p == PlatformAPNs || p == PlatformAPNsSandbox || p == PlatformFCM
}

// MaxDevicesPerUser bounds a user's devices: registering one more evicts the
// oldest (its endpoint is deleted), as an app reinstalled many times leaves
// dead tokens behind.
const MaxDevicesPerUser = 10

// MaxPushSubscriptionsPerUser bounds a user's browser subscriptions the
// same way: registering one more evicts the oldest, as browsers that clear
// their data or rotate keys leave subscriptions behind. With the devices'
// bound, a push delivery has at most 20 targets.
const MaxPushSubscriptionsPerUser = 10

// Device is a native app installation reached through SNS mobile push. Its
// ID derives from (platform, token), so registering the same token again
// names the same device.
type Device struct {
	ID          string
	Platform    Platform
	Token       string
	App         string // the caller's label ("ios-main"), optional
	EndpointARN string // the SNS platform endpoint
	CreatedAt   time.Time
}
