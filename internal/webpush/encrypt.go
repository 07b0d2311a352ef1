package webpush

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// Layout of the aes128gcm content coding as Web Push uses it (RFC 8188 §2.1,
// RFC 8291 §4).
const (
	// RecordSize is the rs value written into the header. Push services accept
	// bodies of at most 4096 bytes, and a single record must fit, so 4096 is
	// both the record size and the body limit.
	RecordSize = 4096
	// MaxBodySize is the largest encrypted body push services must accept
	// (RFC 8030 §7.2).
	MaxBodySize = 4096
	// HeaderSize is salt (16) + rs (4) + idlen (1) + keyid (65 bytes, the
	// sender's ephemeral public key).
	HeaderSize = saltSize + 4 + 1 + PublicKeySize
	// MaxPlaintextSize is the largest payload that fits in MaxBodySize:
	// 4096 − 86 (header) − 1 (padding delimiter) − 16 (GCM tag).
	MaxPlaintextSize = MaxBodySize - HeaderSize - 1 - tagSize

	saltSize  = 16
	tagSize   = 16
	keySize   = 16
	nonceSize = 12

	// lastRecordDelimiter ends the plaintext of the final (here: only) record.
	lastRecordDelimiter = 0x02
)

// ErrPayloadTooLarge is matched by *PayloadTooLargeError.
var ErrPayloadTooLarge = errors.New("webpush: payload too large")

// PayloadTooLargeError reports a plaintext longer than MaxPlaintextSize. It is
// permanent: the same payload will never fit.
type PayloadTooLargeError struct {
	Size int
	Max  int
}

func (e *PayloadTooLargeError) Error() string {
	return fmt.Sprintf("webpush: payload of %d bytes exceeds the %d-byte limit", e.Size, e.Max)
}

func (e *PayloadTooLargeError) Is(target error) bool { return target == ErrPayloadTooLarge }

// ErrInvalidCiphertext is returned by Decrypt for any body that is malformed
// or fails authentication. Details follow the sentinel in the message.
var ErrInvalidCiphertext = errors.New("webpush: invalid aes128gcm body")

// EncryptOptions tunes Encrypt. The zero value is what production wants.
type EncryptOptions struct {
	// PadTo pads the plaintext with zeros up to this many bytes (at most
	// MaxPlaintextSize) so the push service cannot learn the payload's
	// length. Zero disables padding.
	PadTo int

	// salt and ephemeralKey replace the random values; only the RFC 8291
	// test vector in this package's tests sets them. Reusing either in
	// production would break the encryption, so they are not exported.
	salt         []byte
	ephemeralKey *ecdh.PrivateKey
}

// Encrypt encrypts plaintext for the subscription with the aes128gcm content
// coding: one record of size RecordSize, a fresh salt and a fresh ephemeral
// ECDH key per call. The result is the complete request body, header
// included.
//
// It is safe for concurrent use: every buffer is allocated per call.
func Encrypt(sub Subscription, plaintext []byte, opts EncryptOptions) ([]byte, error) {
	uaPublic, authSecret, err := sub.decodeKeys()
	if err != nil {
		return nil, err
	}
	return encrypt(uaPublic, authSecret, plaintext, opts)
}

func encrypt(uaPublic *ecdh.PublicKey, authSecret, plaintext []byte, opts EncryptOptions) ([]byte, error) {
	if len(plaintext) > MaxPlaintextSize {
		return nil, &PayloadTooLargeError{Size: len(plaintext), Max: MaxPlaintextSize}
	}
	padding := 0
	if padTo := min(opts.PadTo, MaxPlaintextSize); padTo > len(plaintext) {
		padding = padTo - len(plaintext)
	}

	salt := opts.salt
	if salt == nil {
		salt = make([]byte, saltSize)
		if _, err := rand.Read(salt); err != nil {
			return nil, fmt.Errorf("webpush: generating salt: %w", err)
		}
	} else if len(salt) != saltSize {
		return nil, fmt.Errorf("webpush: salt must be %d bytes", saltSize)
	}
	asPrivate := opts.ephemeralKey
	if asPrivate == nil {
		var err error
		if asPrivate, err = ecdh.P256().GenerateKey(rand.Reader); err != nil {
			return nil, fmt.Errorf("webpush: generating ephemeral key: %w", err)
		}
	}
	asPublic := asPrivate.PublicKey().Bytes()

	ecdhSecret, err := asPrivate.ECDH(uaPublic)
	if err != nil {
		return nil, fmt.Errorf("webpush: ECDH: %w", err)
	}
	aead, nonce, err := contentKeys(ecdhSecret, authSecret, uaPublic.Bytes(), asPublic, salt)
	if err != nil {
		return nil, err
	}

	recordLen := len(plaintext) + 1 + padding
	body := make([]byte, HeaderSize, HeaderSize+recordLen+tagSize)
	copy(body, salt)
	binary.BigEndian.PutUint32(body[saltSize:], RecordSize)
	body[saltSize+4] = PublicKeySize
	copy(body[saltSize+5:], asPublic)
	body = append(body, plaintext...)
	body = append(body, lastRecordDelimiter)
	body = body[:HeaderSize+recordLen] // make() zeroed the padding bytes
	record := body[HeaderSize:]
	sealed := aead.Seal(record[:0], nonce, record, nil)
	return body[:HeaderSize+len(sealed)], nil
}

// Decrypt is the user agent's side of RFC 8291: it opens an aes128gcm body
// with the subscription's private key and auth secret and returns the
// plaintext without padding. Only single-record bodies are accepted, as RFC
// 8291 §4 requires senders to use one record.
func Decrypt(body []byte, subscriberPrivateKey *ecdh.PrivateKey, authSecret []byte) ([]byte, error) {
	if subscriberPrivateKey == nil || subscriberPrivateKey.Curve() != ecdh.P256() {
		return nil, errors.New("webpush: Decrypt needs a P-256 private key")
	}
	if len(authSecret) != AuthSecretSize {
		return nil, fmt.Errorf("webpush: auth secret must be %d bytes", AuthSecretSize)
	}
	if len(body) < saltSize+5 {
		return nil, fmt.Errorf("%w: shorter than the header", ErrInvalidCiphertext)
	}
	salt := body[:saltSize]
	rs := binary.BigEndian.Uint32(body[saltSize:])
	idLen := int(body[saltSize+4])
	if rs < tagSize+2 {
		return nil, fmt.Errorf("%w: record size %d too small", ErrInvalidCiphertext, rs)
	}
	if idLen != PublicKeySize {
		return nil, fmt.Errorf("%w: keyid is %d bytes, want the %d-byte sender public key", ErrInvalidCiphertext, idLen, PublicKeySize)
	}
	if len(body) < saltSize+5+idLen {
		return nil, fmt.Errorf("%w: shorter than the header", ErrInvalidCiphertext)
	}
	asPublicBytes := body[saltSize+5 : saltSize+5+idLen]
	asPublic, err := ecdh.P256().NewPublicKey(asPublicBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: keyid is not a P-256 point", ErrInvalidCiphertext)
	}
	record := body[saltSize+5+idLen:]
	if len(record) < tagSize+1 {
		return nil, fmt.Errorf("%w: record too short", ErrInvalidCiphertext)
	}
	if uint64(len(record)) > uint64(rs) {
		return nil, fmt.Errorf("%w: more than one record", ErrInvalidCiphertext)
	}

	ecdhSecret, err := subscriberPrivateKey.ECDH(asPublic)
	if err != nil {
		return nil, fmt.Errorf("%w: ECDH: %v", ErrInvalidCiphertext, err)
	}
	aead, nonce, err := contentKeys(ecdhSecret, authSecret, subscriberPrivateKey.PublicKey().Bytes(), asPublicBytes, salt)
	if err != nil {
		return nil, err
	}
	plain, err := aead.Open(nil, nonce, record, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: authentication failed", ErrInvalidCiphertext)
	}
	end := len(plain) - 1
	for end >= 0 && plain[end] == 0 {
		end--
	}
	if end < 0 || plain[end] != lastRecordDelimiter {
		return nil, fmt.Errorf("%w: missing last-record padding delimiter", ErrInvalidCiphertext)
	}
	return plain[:end], nil
}

// contentKeys derives the AEAD and nonce for the single record (RFC 8291 §3.4
// then RFC 8188 §2.2–2.3; with one record the sequence number is 0, so the
// nonce is used as derived).
func contentKeys(ecdhSecret, authSecret, uaPublic, asPublic, salt []byte) (cipher.AEAD, []byte, error) {
	keyInfo := make([]byte, 0, len("WebPush: info\x00")+2*PublicKeySize)
	keyInfo = append(keyInfo, "WebPush: info\x00"...)
	keyInfo = append(keyInfo, uaPublic...)
	keyInfo = append(keyInfo, asPublic...)
	ikm, err := hkdf.Key(sha256.New, ecdhSecret, authSecret, string(keyInfo), sha256.Size)
	if err != nil {
		return nil, nil, fmt.Errorf("webpush: deriving IKM: %w", err)
	}
	prk, err := hkdf.Extract(sha256.New, ikm, salt)
	if err != nil {
		return nil, nil, fmt.Errorf("webpush: deriving PRK: %w", err)
	}
	cek, err := hkdf.Expand(sha256.New, prk, "Content-Encoding: aes128gcm\x00", keySize)
	if err != nil {
		return nil, nil, fmt.Errorf("webpush: deriving CEK: %w", err)
	}
	nonce, err := hkdf.Expand(sha256.New, prk, "Content-Encoding: nonce\x00", nonceSize)
	if err != nil {
		return nil, nil, fmt.Errorf("webpush: deriving nonce: %w", err)
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, nil, fmt.Errorf("webpush: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, nil, fmt.Errorf("webpush: %w", err)
	}
	return aead, nonce, nil
}
