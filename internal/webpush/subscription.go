package webpush

import (
	"crypto/ecdh"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// Sizes fixed by RFC 8291.
const (
	// PublicKeySize is the length of an uncompressed P-256 point: 0x04 || X || Y.
	PublicKeySize = 65
	// AuthSecretSize is the length of the subscription's authentication secret.
	AuthSecretSize = 16
)

// ErrInvalidSubscription is matched (errors.Is) by every subscription
// validation failure. The more specific sentinels below name the bad field.
var ErrInvalidSubscription = errors.New("webpush: invalid subscription")

// Field-specific validation sentinels; each also matches ErrInvalidSubscription.
var (
	ErrInvalidEndpoint = fmt.Errorf("%w: endpoint", ErrInvalidSubscription)
	ErrInvalidP256dh   = fmt.Errorf("%w: keys.p256dh", ErrInvalidSubscription)
	ErrInvalidAuth     = fmt.Errorf("%w: keys.auth", ErrInvalidSubscription)
)

// SubscriptionError says which field of a subscription is unusable and why.
// It unwraps to ErrInvalidEndpoint, ErrInvalidP256dh or ErrInvalidAuth, and so
// to ErrInvalidSubscription. The offending value is deliberately not included.
type SubscriptionError struct {
	// Field is the JSON path of the bad field: "endpoint", "keys.p256dh" or
	// "keys.auth".
	Field  string
	Reason string
	kind   error
}

func (e *SubscriptionError) Error() string {
	return fmt.Sprintf("webpush: invalid subscription: %s: %s", e.Field, e.Reason)
}

func (e *SubscriptionError) Unwrap() error { return e.kind }

func endpointError(reason string) error {
	return &SubscriptionError{Field: "endpoint", Reason: reason, kind: ErrInvalidEndpoint}
}

func p256dhError(reason string) error {
	return &SubscriptionError{Field: "keys.p256dh", Reason: reason, kind: ErrInvalidP256dh}
}

func authError(reason string) error {
	return &SubscriptionError{Field: "keys.auth", Reason: reason, kind: ErrInvalidAuth}
}

// Subscription is a browser's PushSubscription: where to POST, and the keys
// the payload is encrypted to. Its JSON form is the one
// PushSubscription.toJSON() produces:
//
//	{"endpoint": "https://…", "keys": {"p256dh": "…", "auth": "…"}}
//
// Other members (such as "expirationTime") are ignored.
type Subscription struct {
	// Endpoint is the push resource URL. Treat it as a secret: anyone holding
	// it can send to the browser unless VAPID restricts the subscription.
	Endpoint string
	// P256dh is the user agent's ECDH public key, an uncompressed P-256 point
	// in base64 (any common flavour).
	P256dh string
	// Auth is the 16-byte authentication secret in base64.
	Auth string
}

type subscriptionJSON struct {
	Endpoint string `json:"endpoint"`
	Keys     struct {
		P256dh string `json:"p256dh"`
		Auth   string `json:"auth"`
	} `json:"keys"`
}

// MarshalJSON writes the browser's PushSubscription shape.
func (s Subscription) MarshalJSON() ([]byte, error) {
	var w subscriptionJSON
	w.Endpoint = s.Endpoint
	w.Keys.P256dh = s.P256dh
	w.Keys.Auth = s.Auth
	return json.Marshal(w)
}

// UnmarshalJSON reads the browser's PushSubscription shape. It does not
// validate; use ParseSubscription or ValidateSubscription for that.
func (s *Subscription) UnmarshalJSON(data []byte) error {
	var w subscriptionJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*s = Subscription{Endpoint: w.Endpoint, P256dh: w.Keys.P256dh, Auth: w.Keys.Auth}
	return nil
}

// String shows only the endpoint's origin, keeping the capability URL and the
// keys out of logs.
func (s Subscription) String() string {
	return "Subscription{" + endpointOrigin(s.Endpoint) + "}"
}

// LogValue keeps the capability URL and the keys out of structured logs.
func (s Subscription) LogValue() slog.Value {
	return slog.GroupValue(slog.String("origin", endpointOrigin(s.Endpoint)))
}

// ValidationOptions says which push services an endpoint may name.
type ValidationOptions struct {
	// Hosts is the allow-list of push services; the zero value is
	// DefaultPushServices.
	Hosts HostList
	// AllowInsecureLoopback admits loopback endpoints (localhost, 127.0.0.1,
	// [::1] in canonical form; still only those on Hosts), over http too, so
	// the local push service can run without TLS. Production keeps it false:
	// RFC 8030 requires https, and no endpoint may aim Herald at itself.
	AllowInsecureLoopback bool
}

// ParseSubscription decodes a PushSubscription JSON document and validates it.
func ParseSubscription(data []byte, opts ValidationOptions) (Subscription, error) {
	var s Subscription
	if err := json.Unmarshal(data, &s); err != nil {
		return Subscription{}, fmt.Errorf("%w: not PushSubscription JSON: %v", ErrInvalidSubscription, err)
	}
	if err := ValidateSubscription(s, opts); err != nil {
		return Subscription{}, err
	}
	return s, nil
}

// ValidateSubscription checks that a subscription can be sent to: the
// endpoint is an absolute https URL (or loopback http when allowed) on a push
// service of the allow-list, with no user information, p256dh is
// a point on P-256 and auth is 16 bytes. The error is a *SubscriptionError.
func ValidateSubscription(s Subscription, opts ValidationOptions) error {
	if _, err := parseEndpoint(s.Endpoint, opts); err != nil {
		return err
	}
	_, _, err := s.decodeKeys()
	return err
}

// parseEndpoint validates the endpoint URL.
func parseEndpoint(endpoint string, opts ValidationOptions) (*url.URL, error) {
	if endpoint == "" {
		return nil, endpointError("missing")
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, endpointError("not a URL")
	}
	if !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return nil, endpointError("not an absolute URL")
	}
	if u.User != nil {
		return nil, endpointError("must not carry user information")
	}
	if err := opts.Hosts.allows(u, opts.AllowInsecureLoopback); err != nil {
		return nil, err
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !opts.AllowInsecureLoopback || !isLoopbackHost(u.Hostname()) {
			return nil, endpointError("must use https")
		}
	default:
		return nil, endpointError("must use https")
	}
	return u, nil
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	addr, err := netip.ParseAddr(host)
	return err == nil && addr.IsLoopback()
}

// decodeKeys returns the user agent's public key and auth secret.
func (s Subscription) decodeKeys() (*ecdh.PublicKey, []byte, error) {
	if s.P256dh == "" {
		return nil, nil, p256dhError("missing")
	}
	point, err := decodeBase64Any(s.P256dh)
	if err != nil {
		return nil, nil, p256dhError("not base64")
	}
	if len(point) != PublicKeySize {
		return nil, nil, p256dhError(fmt.Sprintf("decodes to %d bytes, want %d", len(point), PublicKeySize))
	}
	uaPublic, err := ecdh.P256().NewPublicKey(point)
	if err != nil {
		return nil, nil, p256dhError("not an uncompressed point on P-256")
	}
	if s.Auth == "" {
		return nil, nil, authError("missing")
	}
	auth, err := decodeBase64Any(s.Auth)
	if err != nil {
		return nil, nil, authError("not base64")
	}
	if len(auth) != AuthSecretSize {
		return nil, nil, authError(fmt.Sprintf("decodes to %d bytes, want %d", len(auth), AuthSecretSize))
	}
	return uaPublic, auth, nil
}

// endpointOrigin is what may appear in logs and errors about an endpoint.
func endpointOrigin(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return "invalid-endpoint"
	}
	return origin(u)
}

// origin returns scheme://host[:port] in the form RFC 6454 serialises it,
// which is what VAPID's "aud" claim must hold: lower case, default port
// omitted.
func origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if port != "" || strings.Contains(host, ":") {
		if port == "" {
			return scheme + "://[" + host + "]"
		}
		return scheme + "://" + net.JoinHostPort(host, port)
	}
	return scheme + "://" + host
}
