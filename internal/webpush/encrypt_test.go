package webpush

import (
	"bytes"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
)

// RFC 8291 Appendix A, with the line breaks removed.
const (
	rfcPlaintext  = "When I grow up, I want to be a watermelon"
	rfcASPrivate  = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
	rfcASPublic   = "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
	rfcUAPrivate  = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
	rfcUAPublic   = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
	rfcSalt       = "DGv6ra1nlYgDCS1FRnbzlw"
	rfcAuthSecret = "BTBZMqHH6r4Tts7J_aSIgg"
	rfcBody       = "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
)

func TestEncryptMatchesRFC8291TestVector(t *testing.T) {
	asPrivate, err := ecdh.P256().NewPrivateKey(mustDecode(t, rfcASPrivate))
	if err != nil {
		t.Fatal(err)
	}
	if got := encodeBase64URL(asPrivate.PublicKey().Bytes()); got != rfcASPublic {
		t.Fatalf("as_public = %s, want %s", got, rfcASPublic)
	}
	sub := Subscription{Endpoint: "https://push.example.net/push/JzLQ3raZJfFBR0aqvOMsLrt54w4rJUsV", P256dh: rfcUAPublic, Auth: rfcAuthSecret}

	body, err := Encrypt(sub, []byte(rfcPlaintext), EncryptOptions{salt: mustDecode(t, rfcSalt), ephemeralKey: asPrivate})
	if err != nil {
		t.Fatal(err)
	}
	if want := mustDecode(t, rfcBody); !bytes.Equal(body, want) {
		t.Fatalf("Encrypt of the RFC 8291 example:\n got %x\nwant %x", body, want)
	}
}

func TestDecryptOpensRFC8291TestVector(t *testing.T) {
	uaPrivate, err := ecdh.P256().NewPrivateKey(mustDecode(t, rfcUAPrivate))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decrypt(mustDecode(t, rfcBody), uaPrivate, mustDecode(t, rfcAuthSecret))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != rfcPlaintext {
		t.Fatalf("Decrypt = %q, want %q", got, rfcPlaintext)
	}
}

func TestEncryptDecryptRoundTripEverySize(t *testing.T) {
	// A fresh random subscription every 256 sizes keeps the test fast under
	// -race while still covering many keys; every size 0..MaxPlaintextSize
	// is exercised.
	payload := bytes.Repeat([]byte("0123456789abcdef"), MaxPlaintextSize/16+1)[:MaxPlaintextSize]
	var ua testUserAgent
	for size := 0; size <= MaxPlaintextSize; size++ {
		if size%256 == 0 {
			ua = newTestUserAgent(t, "https://push.example.net/x")
		}
		body, err := Encrypt(ua.sub, payload[:size], EncryptOptions{})
		if err != nil {
			t.Fatalf("size %d: Encrypt: %v", size, err)
		}
		if want := HeaderSize + size + 1 + tagSize; len(body) != want {
			t.Fatalf("size %d: body is %d bytes, want %d", size, len(body), want)
		}
		if len(body) > MaxBodySize {
			t.Fatalf("size %d: body of %d bytes exceeds %d", size, len(body), MaxBodySize)
		}
		got, err := Decrypt(body, ua.privateKey, ua.authSecret)
		if err != nil {
			t.Fatalf("size %d: Decrypt: %v", size, err)
		}
		if !bytes.Equal(got, payload[:size]) {
			t.Fatalf("size %d: round trip changed the payload", size)
		}
	}
}

func TestEncryptRejectsPayloadOverLimit(t *testing.T) {
	ua := newTestUserAgent(t, "https://push.example.net/x")
	_, err := Encrypt(ua.sub, make([]byte, MaxPlaintextSize+1), EncryptOptions{})
	if !errors.Is(err, ErrPayloadTooLarge) {
		t.Fatalf("err = %v, want ErrPayloadTooLarge", err)
	}
	var tooLarge *PayloadTooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Size != 3994 || tooLarge.Max != 3993 {
		t.Fatalf("err = %#v, want PayloadTooLargeError{Size: 3994, Max: 3993}", err)
	}
}

func TestEncryptPadsToHideLength(t *testing.T) {
	ua := newTestUserAgent(t, "https://push.example.net/x")
	for _, tc := range []struct {
		name      string
		plaintext int
		padTo     int
		wantBody  int
	}{
		{"pads short payload", 10, 1000, HeaderSize + 1000 + 1 + tagSize},
		{"never truncates", 2000, 1000, HeaderSize + 2000 + 1 + tagSize},
		{"caps padding at the limit", 10, 10_000, MaxBodySize},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plaintext := bytes.Repeat([]byte{'x'}, tc.plaintext)
			body, err := Encrypt(ua.sub, plaintext, EncryptOptions{PadTo: tc.padTo})
			if err != nil {
				t.Fatal(err)
			}
			if len(body) != tc.wantBody {
				t.Fatalf("body is %d bytes, want %d", len(body), tc.wantBody)
			}
			got, err := Decrypt(body, ua.privateKey, ua.authSecret)
			if err != nil || !bytes.Equal(got, plaintext) {
				t.Fatalf("Decrypt = %d bytes, %v; want the %d-byte plaintext", len(got), err, len(plaintext))
			}
		})
	}
}

func TestEncryptIsSafeForConcurrentUse(t *testing.T) {
	ua := newTestUserAgent(t, "https://push.example.net/x")
	const goroutines, perGoroutine = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*perGoroutine)
	for g := range goroutines {
		wg.Go(func() {
			for i := range perGoroutine {
				// Different lengths per goroutine make any shared buffer show up
				// as a wrong plaintext, not just as a race report.
				want := bytes.Repeat([]byte{byte('a' + g)}, 50*g+i)
				body, err := Encrypt(ua.sub, want, EncryptOptions{PadTo: 100 * g})
				if err != nil {
					errs <- err
					return
				}
				got, err := Decrypt(body, ua.privateKey, ua.authSecret)
				if err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(got, want) {
					errs <- fmt.Errorf("goroutine %d message %d: plaintext corrupted", g, i)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestEncryptUsesFreshSaltAndKey(t *testing.T) {
	ua := newTestUserAgent(t, "https://push.example.net/x")
	a, err := Encrypt(ua.sub, []byte("same"), EncryptOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Encrypt(ua.sub, []byte("same"), EncryptOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a[:saltSize], b[:saltSize]) {
		t.Error("two encryptions share a salt")
	}
	if bytes.Equal(a[saltSize+5:HeaderSize], b[saltSize+5:HeaderSize]) {
		t.Error("two encryptions share an ephemeral key")
	}
}

func TestEncryptRejectsBadSubscriptionKeys(t *testing.T) {
	ua := newTestUserAgent(t, "https://push.example.net/x")
	bad := ua.sub
	bad.Auth = encodeBase64URL(make([]byte, 15))
	_, err := Encrypt(bad, []byte("hi"), EncryptOptions{})
	var serr *SubscriptionError
	if !errors.As(err, &serr) || serr.Field != "keys.auth" {
		t.Fatalf("err = %v, want SubscriptionError for keys.auth", err)
	}
}

func TestDecryptRejectsDamagedBodies(t *testing.T) {
	ua := newTestUserAgent(t, "https://push.example.net/x")
	body, err := Encrypt(ua.sub, []byte(`{"title":"hello"}`), EncryptOptions{})
	if err != nil {
		t.Fatal(err)
	}
	modified := func(change func(b []byte) []byte) []byte {
		return change(bytes.Clone(body))
	}
	other := newTestUserAgent(t, "https://push.example.net/y")
	for _, tc := range []struct {
		name string
		body []byte
		key  *ecdh.PrivateKey
		auth []byte
	}{
		{"empty", nil, ua.privateKey, ua.authSecret},
		{"header only", body[:HeaderSize], ua.privateKey, ua.authSecret},
		{"flipped ciphertext bit", modified(func(b []byte) []byte { b[HeaderSize] ^= 1; return b }), ua.privateKey, ua.authSecret},
		{"flipped tag bit", modified(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), ua.privateKey, ua.authSecret},
		{"changed salt", modified(func(b []byte) []byte { b[0] ^= 1; return b }), ua.privateKey, ua.authSecret},
		{"keyid length not 65", modified(func(b []byte) []byte { b[saltSize+4] = 64; return b }), ua.privateKey, ua.authSecret},
		{"keyid not on the curve", modified(func(b []byte) []byte { b[saltSize+5+10] ^= 1; return b }), ua.privateKey, ua.authSecret},
		{"record size smaller than record", modified(func(b []byte) []byte { b[saltSize+2], b[saltSize+3] = 0, 20; return b }), ua.privateKey, ua.authSecret},
		{"truncated", body[:len(body)-1], ua.privateKey, ua.authSecret},
		{"wrong private key", body, other.privateKey, ua.authSecret},
		{"wrong auth secret", body, ua.privateKey, other.authSecret},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Decrypt(tc.body, tc.key, tc.auth); !errors.Is(err, ErrInvalidCiphertext) {
				t.Fatalf("err = %v, want ErrInvalidCiphertext", err)
			}
		})
	}
}

func TestDecryptRequiresLastRecordDelimiter(t *testing.T) {
	ua := newTestUserAgent(t, "https://push.example.net/x")
	uaPublic, auth, err := ua.sub.decodeKeys()
	if err != nil {
		t.Fatal(err)
	}
	asPrivate, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	salt := bytes.Repeat([]byte{7}, saltSize)
	secret, err := asPrivate.ECDH(uaPublic)
	if err != nil {
		t.Fatal(err)
	}
	aead, nonce, err := contentKeys(secret, auth, uaPublic.Bytes(), asPrivate.PublicKey().Bytes(), salt)
	if err != nil {
		t.Fatal(err)
	}
	header := make([]byte, HeaderSize)
	copy(header, salt)
	binary.BigEndian.PutUint32(header[saltSize:], RecordSize)
	header[saltSize+4] = PublicKeySize
	copy(header[saltSize+5:], asPrivate.PublicKey().Bytes())

	// Records sealed correctly but padded wrongly: the 0x01 delimiter marks a
	// non-final record, and an all-zero record has no delimiter at all.
	for _, record := range [][]byte{[]byte("hi\x01"), []byte("hi\x01\x00\x00"), {0, 0, 0}} {
		body := append(bytes.Clone(header), aead.Seal(nil, nonce, record, nil)...)
		if _, err := Decrypt(body, ua.privateKey, ua.authSecret); !errors.Is(err, ErrInvalidCiphertext) {
			t.Errorf("record %q: err = %v, want ErrInvalidCiphertext", record, err)
		}
	}
	// The same construction with the 0x02 delimiter must open, proving the
	// failures above are about the delimiter only.
	body := append(bytes.Clone(header), aead.Seal(nil, nonce, []byte("hi\x02\x00"), nil)...)
	if got, err := Decrypt(body, ua.privateKey, ua.authSecret); err != nil || string(got) != "hi" {
		t.Fatalf("Decrypt = %q, %v; want \"hi\"", got, err)
	}
}

// benchmarkPayload is a typical ~200-byte notification JSON.
var benchmarkPayload = []byte(`{"notificationId":"01J9ZK6V3YQ4M8T2R7W5X1B0CD","title":"Your order has shipped","body":"Order #48213 left our warehouse and should arrive Thursday.","url":"https://app.example.com/orders/48213","tag":"order-48213"}`)

func BenchmarkEncrypt(b *testing.B) {
	ua := newTestUserAgent(b, "https://push.example.net/x")
	b.ReportAllocs()
	b.SetBytes(int64(len(benchmarkPayload)))
	for b.Loop() {
		if _, err := Encrypt(ua.sub, benchmarkPayload, EncryptOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecrypt(b *testing.B) {
	ua := newTestUserAgent(b, "https://push.example.net/x")
	body, err := Encrypt(ua.sub, benchmarkPayload, EncryptOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decrypt(body, ua.privateKey, ua.authSecret); err != nil {
			b.Fatal(err)
		}
	}
}
