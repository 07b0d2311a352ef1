package webpush

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/mail"
	"net/url"
	"strings"
	"time"
)

// VAPID token lifetimes (RFC 8292 §2: "exp" MUST NOT be more than 24 hours
// from the time of the request).
const (
	DefaultVAPIDTTL = 12 * time.Hour
	MaxVAPIDTTL     = 24 * time.Hour
)

// jwtHeaderES256 is the fixed, pre-encoded JOSE header {"typ":"JWT","alg":"ES256"}.
const jwtHeaderES256 = "eyJ0eXAiOiJKV1QiLCJhbGciOiJFUzI1NiJ9"

// ErrInvalidVAPID is matched by every VAPID verification failure; the more
// specific sentinels below say which check failed.
var ErrInvalidVAPID = errors.New("webpush: invalid VAPID authorization")

// VAPID verification sentinels; each also matches ErrInvalidVAPID. A push
// service answers all of them with 401, except ErrVAPIDKeyMismatch (403).
var (
	ErrVAPIDMissing     = fmt.Errorf("%w: missing or not a vapid scheme header", ErrInvalidVAPID)
	ErrVAPIDMalformed   = fmt.Errorf("%w: malformed token or key", ErrInvalidVAPID)
	ErrVAPIDSignature   = fmt.Errorf("%w: signature does not verify", ErrInvalidVAPID)
	ErrVAPIDAudience    = fmt.Errorf("%w: aud is not the push service's origin", ErrInvalidVAPID)
	ErrVAPIDExpired     = fmt.Errorf("%w: token expired", ErrInvalidVAPID)
	ErrVAPIDTooLong     = fmt.Errorf("%w: exp more than 24 hours ahead", ErrInvalidVAPID)
	ErrVAPIDSubject     = fmt.Errorf("%w: sub missing or not a mailto: or https: contact", ErrInvalidVAPID)
	ErrVAPIDKeyMismatch = fmt.Errorf("%w: key differs from the subscription's applicationServerKey", ErrInvalidVAPID)
)

// ErrInvalidContact reports a VAPID contact that is neither an e-mail address,
// a mailto: URI nor an https: URL.
var ErrInvalidContact = errors.New("webpush: invalid VAPID contact")

// VAPIDClaims is the JWT claim set RFC 8292 defines.
type VAPIDClaims struct {
	// Audience is the origin of the push resource, e.g. https://fcm.googleapis.com.
	Audience string `json:"aud"`
	// Expiry is the NumericDate (Unix seconds) after which the token is void.
	Expiry int64 `json:"exp"`
	// Subject is how the push service operator reaches the sender.
	Subject string `json:"sub"`
}

// NormalizeContact turns the configured contact into a VAPID "sub" with the
// scheme exactly once: "ops@example.com" becomes "mailto:ops@example.com",
// while "mailto:ops@example.com" and "https://example.com/contact" are kept as
// they are. (webpush-go prefixes "mailto:" unconditionally, producing
// "mailto:mailto:…", which some push services reject.)
func NormalizeContact(contact string) (string, error) {
	contact = strings.TrimSpace(contact)
	if contact == "" {
		return "", fmt.Errorf("%w: empty", ErrInvalidContact)
	}
	if u, err := url.Parse(contact); err == nil {
		switch strings.ToLower(u.Scheme) {
		case "https":
			if u.Host == "" {
				return "", fmt.Errorf("%w: https contact without a host", ErrInvalidContact)
			}
			return contact, nil
		case "mailto":
			if !validMailbox(u.Opaque) {
				return "", fmt.Errorf("%w: mailto: contact without a valid address", ErrInvalidContact)
			}
			return "mailto:" + u.Opaque, nil
		}
	}
	if !validMailbox(contact) {
		return "", fmt.Errorf("%w: want an e-mail address, mailto: URI or https: URL", ErrInvalidContact)
	}
	return "mailto:" + contact, nil
}

// validMailbox accepts a bare addr-spec such as ops@example.com, which also
// rejects a doubled "mailto:mailto:…" (a colon is not allowed in the local part).
func validMailbox(s string) bool {
	if s == "" || strings.ContainsAny(s, "<> ") {
		return false
	}
	addr, err := mail.ParseAddress(s)
	return err == nil && addr.Name == "" && addr.Address == s
}

// VAPIDConfig configures a VAPIDSigner.
type VAPIDConfig struct {
	Keys VAPIDKeys
	// Contact becomes the "sub" claim via NormalizeContact.
	Contact string
	// TTL is how long each token is valid. Zero means DefaultVAPIDTTL; values
	// above MaxVAPIDTTL are clamped to it.
	TTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// VAPIDSigner produces VAPID Authorization headers. It is immutable after
// construction and safe for concurrent use.
type VAPIDSigner struct {
	key       *ecdsa.PrivateKey
	publicKey string
	subject   string
	ttl       time.Duration
	now       func() time.Time
}

// NewVAPIDSigner validates the keys and contact once so that signing cannot
// fail on configuration later.
func NewVAPIDSigner(cfg VAPIDConfig) (*VAPIDSigner, error) {
	key, err := parseVAPIDPrivateKey(cfg.Keys.PublicKey, cfg.Keys.PrivateKey)
	if err != nil {
		return nil, err
	}
	point, err := key.PublicKey.Bytes()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidVAPIDKeys, err)
	}
	subject, err := NormalizeContact(cfg.Contact)
	if err != nil {
		return nil, err
	}
	ttl := cfg.TTL
	switch {
	case ttl <= 0:
		ttl = DefaultVAPIDTTL
	case ttl > MaxVAPIDTTL:
		ttl = MaxVAPIDTTL
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &VAPIDSigner{key: key, publicKey: encodeBase64URL(point), subject: subject, ttl: ttl, now: now}, nil
}

// Subject is the normalised "sub" claim.
func (s *VAPIDSigner) Subject() string { return s.subject }

// TTL is the effective token lifetime after defaulting and clamping.
func (s *VAPIDSigner) TTL() time.Duration { return s.ttl }

// PublicKey is the base64url application server key ("k" parameter).
func (s *VAPIDSigner) PublicKey() string { return s.publicKey }

// Authorization returns the header value "vapid t=<jwt>, k=<public key>" for
// a request to endpoint; the token's audience is the endpoint's origin.
func (s *VAPIDSigner) Authorization(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return "", endpointError("not an absolute URL")
	}
	return s.authorization(origin(u))
}

// authorization is Authorization for an endpoint origin already derived.
func (s *VAPIDSigner) authorization(audience string) (string, error) {
	token, err := s.Token(audience)
	if err != nil {
		return "", err
	}
	return "vapid t=" + token + ", k=" + s.publicKey, nil
}

// Token signs a JWT for the given audience (an origin such as
// https://updates.push.services.mozilla.com).
func (s *VAPIDSigner) Token(audience string) (string, error) {
	// Unix() truncates, so exp never exceeds now+TTL ≤ now+24h.
	return s.sign(VAPIDClaims{Audience: audience, Expiry: s.now().Add(s.ttl).Unix(), Subject: s.subject})
}

// sign encodes and signs any claim set; tests use it to forge bad tokens.
func (s *VAPIDSigner) sign(claims VAPIDClaims) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("webpush: encoding VAPID claims: %w", err)
	}
	signingInput := jwtHeaderES256 + "." + encodeBase64URL(payload)
	digest := sha256.Sum256([]byte(signingInput))
	r, sig, err := ecdsa.Sign(rand.Reader, s.key, digest[:])
	if err != nil {
		return "", fmt.Errorf("webpush: signing VAPID token: %w", err)
	}
	// JWS ES256 signatures are R || S, each left-padded to 32 bytes (RFC 7518 §3.4).
	var raw [64]byte
	r.FillBytes(raw[:32])
	sig.FillBytes(raw[32:])
	return signingInput + "." + encodeBase64URL(raw[:]), nil
}

// VerifyVAPID checks an Authorization header as a push service would: the
// "vapid" scheme, an ES256 JWT signed by the key in "k", "aud" equal to
// endpointOrigin, "exp" in the future but at most 24 hours ahead, and a
// usable "sub". It returns the claims and the sender's public key so the
// caller can compare the key with a restricted subscription's
// applicationServerKey.
func VerifyVAPID(authorizationHeader, endpointOrigin string, now time.Time) (VAPIDClaims, *ecdsa.PublicKey, error) {
	token, keyText, err := parseVAPIDHeader(authorizationHeader)
	if err != nil {
		return VAPIDClaims{}, nil, err
	}
	keyBytes, err := decodeBase64Any(keyText)
	if err != nil {
		return VAPIDClaims{}, nil, fmt.Errorf("%w: k is not base64", ErrVAPIDMalformed)
	}
	publicKey, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), keyBytes)
	if err != nil {
		return VAPIDClaims{}, nil, fmt.Errorf("%w: k is not an uncompressed P-256 point", ErrVAPIDMalformed)
	}

	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return VAPIDClaims{}, nil, fmt.Errorf("%w: token is not a JWS compact serialisation", ErrVAPIDMalformed)
	}
	headerJSON, err := decodeBase64URLStrict(parts[0])
	if err != nil {
		return VAPIDClaims{}, nil, fmt.Errorf("%w: JOSE header is not base64url", ErrVAPIDMalformed)
	}
	var header struct {
		Alg string `json:"alg"`
	}
	if err := json.Unmarshal(headerJSON, &header); err != nil || header.Alg != "ES256" {
		return VAPIDClaims{}, nil, fmt.Errorf("%w: JOSE header must say alg ES256", ErrVAPIDMalformed)
	}
	sig, err := decodeBase64URLStrict(parts[2])
	if err != nil || len(sig) != 64 {
		return VAPIDClaims{}, nil, fmt.Errorf("%w: signature is not 64 bytes of base64url", ErrVAPIDMalformed)
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	r := new(big.Int).SetBytes(sig[:32])
	s := new(big.Int).SetBytes(sig[32:])
	if !ecdsa.Verify(publicKey, digest[:], r, s) {
		return VAPIDClaims{}, nil, ErrVAPIDSignature
	}

	payload, err := decodeBase64URLStrict(parts[1])
	if err != nil {
		return VAPIDClaims{}, nil, fmt.Errorf("%w: claims are not base64url", ErrVAPIDMalformed)
	}
	var raw struct {
		Aud string      `json:"aud"`
		Exp json.Number `json:"exp"`
		Sub string      `json:"sub"`
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return VAPIDClaims{}, nil, fmt.Errorf("%w: claims are not a JSON object", ErrVAPIDMalformed)
	}
	exp, err := raw.Exp.Int64()
	if err != nil {
		return VAPIDClaims{}, nil, fmt.Errorf("%w: exp is missing or not an integer", ErrVAPIDMalformed)
	}
	claims := VAPIDClaims{Audience: raw.Aud, Expiry: exp, Subject: raw.Sub}

	wantAudience, err := canonicalOrigin(endpointOrigin)
	if err != nil {
		return claims, publicKey, err
	}
	if claims.Audience != wantAudience {
		return claims, publicKey, ErrVAPIDAudience
	}
	nowUnix := now.Unix()
	if claims.Expiry <= nowUnix {
		return claims, publicKey, ErrVAPIDExpired
	}
	if claims.Expiry > nowUnix+int64(MaxVAPIDTTL/time.Second) {
		return claims, publicKey, ErrVAPIDTooLong
	}
	if normalized, err := NormalizeContact(claims.Subject); err != nil || !strings.EqualFold(normalized, claims.Subject) {
		return claims, publicKey, ErrVAPIDSubject
	}
	return claims, publicKey, nil
}

// parseVAPIDHeader splits "vapid t=<jwt>, k=<key>" (scheme and parameter
// names case-insensitive, parameters in any order).
func parseVAPIDHeader(h string) (token, key string, err error) {
	scheme, params, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "vapid") {
		return "", "", ErrVAPIDMissing
	}
	for param := range strings.SplitSeq(params, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(param), "=")
		if !ok {
			return "", "", fmt.Errorf("%w: parameter without a value", ErrVAPIDMalformed)
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "t":
			token = strings.TrimSpace(value)
		case "k":
			key = strings.TrimSpace(value)
		}
	}
	if token == "" || key == "" {
		return "", "", fmt.Errorf("%w: t and k are both required", ErrVAPIDMalformed)
	}
	return token, key, nil
}

// decodeBase64URLStrict decodes JWS segments, which RFC 7515 fixes as
// base64url without padding.
func decodeBase64URLStrict(s string) ([]byte, error) {
	if strings.ContainsAny(s, "=+/") {
		return nil, errors.New("not base64url")
	}
	return decodeBase64Any(s)
}

func canonicalOrigin(o string) (string, error) {
	u, err := url.Parse(o)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return "", fmt.Errorf("webpush: endpoint origin %q is not an absolute URL", o)
	}
	return origin(u), nil
}
