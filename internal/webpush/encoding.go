package webpush

import (
	"encoding/base64"
	"strings"
)

// decodeBase64Any decodes the base64 flavours browsers and libraries emit for
// subscription keys: URL-safe or standard alphabet, padded or not. The
// PushSubscription API returns unpadded base64url, but keys that passed
// through other code (btoa, Java, older SDKs) arrive in the other forms, and
// rejecting them would drop valid subscribers.
func decodeBase64Any(s string) ([]byte, error) {
	trimmed := strings.TrimRight(s, "=")
	if strings.ContainsAny(trimmed, "+/") {
		return base64.RawStdEncoding.DecodeString(trimmed)
	}
	return base64.RawURLEncoding.DecodeString(trimmed)
}

// encodeBase64URL is the canonical form this package produces: base64url
// without padding, as the Push API and JWTs use.
func encodeBase64URL(b []byte) string {
	return base64.RawURLEncoding.EncodeToString(b)
}
