// Package unsubscribe signs and verifies the tokens of one-click unsubscribe
// links (RFC 8058): a token names a user and a notification type, expires,
// and is authenticated with HMAC-SHA256 under a secret only Herald holds
// (Secrets Manager in AWS, configuration locally). It is pure: no I/O.
//
// The email worker puts the link in List-Unsubscribe; the API's
// /v1/unsubscribe route verifies the token and turns that type's email
// preference off. The token carries no address, so the URL leaks no PII
// beyond the user id.
package unsubscribe

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// MinSecretBytes is the shortest accepted secret.
const MinSecretBytes = 32

// DefaultTTL is how long a link works: mail stays in inboxes for months,
// and mailbox providers call the link whenever the user clicks.
const DefaultTTL = 90 * 24 * time.Hour

// Errors returned by Verify.
var (
	ErrInvalid = errors.New("unsubscribe token invalid")
	ErrExpired = errors.New("unsubscribe token expired")
)

// Claims is what a token says.
type Claims struct {
	UserID    string
	Type      string
	ExpiresAt time.Time
}

// payload is the signed JSON.
type payload struct {
	Version int    `json:"v"`
	UserID  string `json:"u"`
	Type    string `json:"t"`
	Expires int64  `json:"e"`
}

const version = 1

// Signer signs and verifies tokens. It is safe for concurrent use.
type Signer struct {
	key []byte
	ttl time.Duration
	now func() time.Time
}

// NewSigner returns a signer over secret; ttl 0 means DefaultTTL, now nil
// means time.Now.
func NewSigner(secret []byte, ttl time.Duration, now func() time.Time) (*Signer, error) {
	if len(secret) < MinSecretBytes {
		return nil, fmt.Errorf("unsubscribe secret: %d bytes, want at least %d", len(secret), MinSecretBytes)
	}
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	if now == nil {
		now = time.Now
	}
	return &Signer{key: append([]byte(nil), secret...), ttl: ttl, now: now}, nil
}

// b64 is unpadded URL-safe base64, strict: a last character whose unused
// low bits are not zero is refused, so each token has one encoding (another
// spelling of the same signature bytes does not verify).
var b64 = base64.RawURLEncoding.Strict()

// Token signs (userID, notificationType) until now + ttl.
func (s *Signer) Token(userID, notificationType string) string {
	raw, _ := json.Marshal(payload{Version: version, UserID: userID, Type: notificationType, Expires: s.now().Add(s.ttl).Unix()})
	body := b64.EncodeToString(raw)
	return body + "." + b64.EncodeToString(s.mac(body))
}

// URL is base with the token as its "token" query parameter.
func (s *Signer) URL(base, userID, notificationType string) string {
	return base + "?token=" + url.QueryEscape(s.Token(userID, notificationType))
}

// Verify checks the signature first, then the expiry.
func (s *Signer) Verify(token string) (Claims, error) {
	body, sig, ok := strings.Cut(token, ".")
	if !ok || body == "" || sig == "" {
		return Claims{}, ErrInvalid
	}
	got, err := b64.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac(body)) {
		return Claims{}, ErrInvalid
	}
	raw, err := b64.DecodeString(body)
	if err != nil {
		return Claims{}, ErrInvalid
	}
	var p payload
	if err := json.Unmarshal(raw, &p); err != nil || p.Version != version || p.UserID == "" || p.Type == "" {
		return Claims{}, ErrInvalid
	}
	c := Claims{UserID: p.UserID, Type: p.Type, ExpiresAt: time.Unix(p.Expires, 0).UTC()}
	if !s.now().Before(c.ExpiresAt) {
		return c, ErrExpired
	}
	return c, nil
}

func (s *Signer) mac(body string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("herald-unsubscribe."))
	m.Write([]byte(body))
	return m.Sum(nil)
}
