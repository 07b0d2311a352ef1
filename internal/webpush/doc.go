// Package webpush sends Web Push messages (RFC 8030) with payloads encrypted
// per RFC 8291 (aes128gcm, RFC 8188) and authenticated with VAPID (RFC 8292).
//
// It is written on the standard library alone because the usual third-party
// sender (webpush-go v1.4.0) has known defects that matter in production: a
// data race on the shared padding buffer, the VAPID "exp" setting ignored,
// and "mailto:" prefixed twice onto contacts that already carry it.
//
// The package also holds the receiving side ([Decrypt], [VerifyVAPID]) so the
// local push service used in development and tests checks exactly what a
// browser's push service would.
//
// Nothing here logs. Errors never contain key material, payloads or full
// endpoint URLs (an endpoint is a capability: whoever holds it can push), only
// the endpoint's origin where a location helps.
package webpush
