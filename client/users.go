package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// User is a user's profile (PUT replaces it whole).
type User struct {
	UserID   string `json:"userId,omitempty"`
	Email    string `json:"email,omitempty"`
	Phone    string `json:"phone,omitempty"`
	Locale   string `json:"locale,omitempty"`
	Timezone string `json:"timezone,omitempty"`
	// QuietHours is a daily window ("22:00"–"08:00") in Timezone.
	QuietHours    *QuietHours `json:"quietHours,omitempty"`
	DigestMinutes *int        `json:"digestMinutes,omitempty"`
	// EmailSuppressed and UpdatedAt are answered, never sent.
	EmailSuppressed bool       `json:"emailSuppressed,omitempty"`
	UpdatedAt       *time.Time `json:"updatedAt,omitempty"`
	// Devices are the user's native devices (GetUser only; tokens masked).
	// A user known only by devices answers them without UpdatedAt.
	Devices []Device `json:"devices,omitempty"`
}

// Device platforms.
const (
	PlatformAPNs        = "apns"         // Apple, production builds
	PlatformAPNsSandbox = "apns_sandbox" // Apple, development builds
	PlatformFCM         = "fcm"          // Firebase Cloud Messaging
)

// Device is a native app installation reached by mobile push. In a User,
// Token is masked (its first and last four characters).
type Device struct {
	DeviceID  string    `json:"deviceId,omitempty"`
	Platform  string    `json:"platform"`
	Token     string    `json:"token"`
	App       string    `json:"app,omitempty"`
	CreatedAt time.Time `json:"createdAt,omitzero"`
}

// DeviceRef identifies a registered device.
type DeviceRef struct {
	DeviceID string `json:"deviceId"`
	// Created is false when this user had registered the token already
	// (the same device, the same SNS endpoint).
	Created bool `json:"-"`
}

// QuietHours is a daily window in the user's timezone, "HH:MM" each.
type QuietHours struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

type userRequest struct {
	Email         string      `json:"email,omitempty"`
	Phone         string      `json:"phone,omitempty"`
	Locale        string      `json:"locale,omitempty"`
	Timezone      string      `json:"timezone,omitempty"`
	QuietHours    *QuietHours `json:"quietHours,omitempty"`
	DigestMinutes *int        `json:"digestMinutes,omitempty"`
}

func userPath(userID string) string { return "/v1/users/" + url.PathEscape(userID) }

// PutUser creates or replaces a user's profile (members left empty are
// cleared) and returns what was stored.
func (c *Client) PutUser(ctx context.Context, userID string, u User) (*User, error) {
	body := userRequest{Email: u.Email, Phone: u.Phone, Locale: u.Locale, Timezone: u.Timezone, QuietHours: u.QuietHours, DigestMinutes: u.DigestMinutes}
	var out User
	if _, err := c.do(ctx, call{method: http.MethodPut, path: userPath(userID), body: body, ok: []int{http.StatusOK}, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetUser reads a user's profile; an unknown user is an error matching
// ErrNotFound.
func (c *Client) GetUser(ctx context.Context, userID string) (*User, error) {
	var out User
	if _, err := c.do(ctx, call{method: http.MethodGet, path: userPath(userID), ok: []int{http.StatusOK}, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// PushSubscription is a browser's PushSubscription.toJSON(), as the app's
// backend received it from web/herald-push.js.
type PushSubscription struct {
	Endpoint       string   `json:"endpoint"`
	ExpirationTime *float64 `json:"expirationTime,omitempty"`
	Keys           struct {
		P256dh string `json:"p256dh"`
		Auth   string `json:"auth"`
	} `json:"keys"`
}

// SubscriptionRef identifies a stored push subscription.
type SubscriptionRef struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"createdAt"`
	// Created is false when the endpoint was registered already (its keys
	// were replaced).
	Created bool `json:"-"`
}

// CreatePushSubscription registers a browser's subscription for the user.
// Registering the same endpoint again replaces its keys.
func (c *Client) CreatePushSubscription(ctx context.Context, userID string, s PushSubscription) (*SubscriptionRef, error) {
	var out SubscriptionRef
	res, err := c.do(ctx, call{method: http.MethodPost, path: userPath(userID) + "/push-subscriptions", body: s,
		ok: []int{http.StatusCreated, http.StatusOK}, out: &out})
	if err != nil {
		return nil, err
	}
	out.Created = res.status == http.StatusCreated
	return &out, nil
}

// DeletePushSubscription removes a subscription. When a retry follows an
// attempt whose answer was lost, the retry's 404 counts as success.
func (c *Client) DeletePushSubscription(ctx context.Context, userID, subscriptionID string) error {
	_, err := c.do(ctx, call{method: http.MethodDelete, path: userPath(userID) + "/push-subscriptions/" + url.PathEscape(subscriptionID),
		ok: []int{http.StatusNoContent}})
	if e, ok := errorsAs(err); ok && e.Status == http.StatusNotFound && e.Attempts > 1 {
		return nil
	}
	return err
}

type deviceRequest struct {
	Platform string `json:"platform"`
	Token    string `json:"token"`
	App      string `json:"app,omitempty"`
}

// RegisterDevice registers a native app's push token for the user (platform
// PlatformAPNs, PlatformAPNsSandbox or PlatformFCM; app an optional label).
// The same token again answers the same device, so an app may register at
// every launch; a token another user had moves to this one. A platform the
// stack has no application for is an error with code
// "platform_not_configured".
func (c *Client) RegisterDevice(ctx context.Context, userID string, d Device) (*DeviceRef, error) {
	var out DeviceRef
	res, err := c.do(ctx, call{method: http.MethodPost, path: userPath(userID) + "/devices",
		body: deviceRequest{Platform: d.Platform, Token: d.Token, App: d.App}, ok: []int{http.StatusCreated, http.StatusOK}, out: &out})
	if err != nil {
		return nil, err
	}
	out.Created = res.status == http.StatusCreated
	return &out, nil
}

// ListDevices reads the user's devices, oldest first, tokens masked (none:
// an empty list, with or without a profile).
func (c *Client) ListDevices(ctx context.Context, userID string) ([]Device, error) {
	var out struct {
		Devices []Device `json:"devices"`
	}
	if _, err := c.do(ctx, call{method: http.MethodGet, path: userPath(userID) + "/devices", ok: []int{http.StatusOK}, out: &out}); err != nil {
		return nil, err
	}
	return out.Devices, nil
}

// DeleteDevice removes a device and its SNS endpoint. When a retry follows
// an attempt whose answer was lost, the retry's 404 counts as success.
func (c *Client) DeleteDevice(ctx context.Context, userID, deviceID string) error {
	_, err := c.do(ctx, call{method: http.MethodDelete, path: userPath(userID) + "/devices/" + url.PathEscape(deviceID),
		ok: []int{http.StatusNoContent}})
	if e, ok := errorsAs(err); ok && e.Status == http.StatusNotFound && e.Attempts > 1 {
		return nil
	}
	return err
}

// PreferenceCell is one type × channel of the effective matrix.
type PreferenceCell struct {
	Enabled bool `json:"enabled"`
	// Source is "default", "user" or "mandatory".
	Source string `json:"source"`
}

// Preferences is the effective matrix: type → channel → cell.
type Preferences struct {
	UserID      string                               `json:"userId"`
	Preferences map[string]map[string]PreferenceCell `json:"preferences"`
}

// GetPreferences reads the user's effective preference matrix.
func (c *Client) GetPreferences(ctx context.Context, userID string) (*Preferences, error) {
	var out Preferences
	if _, err := c.do(ctx, call{method: http.MethodGet, path: userPath(userID) + "/preferences", ok: []int{http.StatusOK}, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// Enable, Disable and Inherit are override values for UpdatePreferences.
var (
	Enable  = ptr(true)
	Disable = ptr(false)
	// Inherit removes the user's override.
	Inherit *bool
)

func ptr[T any](v T) *T { return &v }

// UpdatePreferences merges overrides (type → channel → Enable, Disable or
// Inherit) into the user's and returns the effective matrix.
func (c *Client) UpdatePreferences(ctx context.Context, userID string, overrides map[string]map[string]*bool) (*Preferences, error) {
	var out Preferences
	if _, err := c.do(ctx, call{method: http.MethodPut, path: userPath(userID) + "/preferences",
		body: map[string]any{"preferences": overrides}, ok: []int{http.StatusOK}, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}
