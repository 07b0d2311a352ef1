package webpush

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
)

// ErrInvalidVAPIDKeys reports VAPID keys that are malformed or do not form a
// pair. The message never contains the key material.
var ErrInvalidVAPIDKeys = errors.New("webpush: invalid VAPID keys")

// VAPIDKeys is the application server's P-256 key pair in the textual form
// that is stored in configuration and handed to browsers: the public key as
// the 65-byte uncompressed point and the private key as the 32-byte scalar,
// both base64url without padding.
//
// The browser's pushManager.subscribe takes PublicKey as
// applicationServerKey; PrivateKey must stay secret.
type VAPIDKeys struct {
	PublicKey  string
	PrivateKey string
}

// String redacts the private key so that a stray %v in a log line cannot leak
// it.
func (k VAPIDKeys) String() string {
	return fmt.Sprintf("VAPIDKeys{PublicKey: %s, PrivateKey: [redacted]}", k.PublicKey)
}

// GoString redacts the private key for %#v as well.
func (k VAPIDKeys) GoString() string { return k.String() }

// GenerateVAPIDKeys creates a new random VAPID key pair.
func GenerateVAPIDKeys() (VAPIDKeys, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return VAPIDKeys{}, fmt.Errorf("webpush: generating VAPID key: %w", err)
	}
	scalar, err := priv.Bytes()
	if err != nil {
		return VAPIDKeys{}, fmt.Errorf("webpush: encoding VAPID private key: %w", err)
	}
	point, err := priv.PublicKey.Bytes()
	if err != nil {
		return VAPIDKeys{}, fmt.Errorf("webpush: encoding VAPID public key: %w", err)
	}
	return VAPIDKeys{PublicKey: encodeBase64URL(point), PrivateKey: encodeBase64URL(scalar)}, nil
}

// ParseVAPIDKeys checks that public and private are a valid P-256 pair and
// returns them in canonical form (base64url, no padding). Configuration
// mistakes such as keys from two different pairs surface here, at start-up,
// rather than as 403s from every push service.
func ParseVAPIDKeys(public, private string) (VAPIDKeys, error) {
	priv, err := parseVAPIDPrivateKey(public, private)
	if err != nil {
		return VAPIDKeys{}, err
	}
	scalar, err := priv.Bytes()
	if err != nil {
		return VAPIDKeys{}, fmt.Errorf("%w: %v", ErrInvalidVAPIDKeys, err)
	}
	point, err := priv.PublicKey.Bytes()
	if err != nil {
		return VAPIDKeys{}, fmt.Errorf("%w: %v", ErrInvalidVAPIDKeys, err)
	}
	return VAPIDKeys{PublicKey: encodeBase64URL(point), PrivateKey: encodeBase64URL(scalar)}, nil
}

// parseVAPIDPrivateKey decodes and cross-checks a key pair, returning the
// signing key.
func parseVAPIDPrivateKey(public, private string) (*ecdsa.PrivateKey, error) {
	point, err := decodeBase64Any(public)
	if err != nil {
		return nil, fmt.Errorf("%w: public key is not base64", ErrInvalidVAPIDKeys)
	}
	if _, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), point); err != nil {
		return nil, fmt.Errorf("%w: public key is not an uncompressed P-256 point", ErrInvalidVAPIDKeys)
	}
	scalar, err := decodeBase64Any(private)
	if err != nil {
		return nil, fmt.Errorf("%w: private key is not base64", ErrInvalidVAPIDKeys)
	}
	priv, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), scalar)
	if err != nil {
		return nil, fmt.Errorf("%w: private key is not a 32-byte P-256 scalar", ErrInvalidVAPIDKeys)
	}
	derived, err := priv.PublicKey.Bytes()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidVAPIDKeys, err)
	}
	if !bytes.Equal(derived, point) {
		return nil, fmt.Errorf("%w: public key does not belong to the private key", ErrInvalidVAPIDKeys)
	}
	return priv, nil
}
