package webpush

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

var testNow = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

func fixedClock(t time.Time) func() time.Time { return func() time.Time { return t } }

func newTestSigner(t testing.TB, contact string, ttl time.Duration, now time.Time) (*VAPIDSigner, VAPIDKeys) {
	t.Helper()
	keys, err := GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	signer, err := NewVAPIDSigner(VAPIDConfig{Keys: keys, Contact: contact, TTL: ttl, Now: fixedClock(now)})
	if err != nil {
		t.Fatal(err)
	}
	return signer, keys
}

func TestVAPIDKeysGenerateAndParse(t *testing.T) {
	keys, err := GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(mustDecode(t, keys.PublicKey)); n != 65 {
		t.Fatalf("public key is %d bytes, want 65", n)
	}
	if n := len(mustDecode(t, keys.PrivateKey)); n != 32 {
		t.Fatalf("private key is %d bytes, want 32", n)
	}
	if strings.ContainsAny(keys.PublicKey+keys.PrivateKey, "+/=") {
		t.Fatalf("keys are not unpadded base64url: %s", keys.PublicKey)
	}
	parsed, err := ParseVAPIDKeys(keys.PublicKey, keys.PrivateKey)
	if err != nil || parsed != keys {
		t.Fatalf("ParseVAPIDKeys = %v, %v; want the same keys", parsed, err)
	}
	// Padded standard base64 parses to the canonical form.
	std := func(s string) string {
		s = strings.NewReplacer("-", "+", "_", "/").Replace(s)
		return s + strings.Repeat("=", (4-len(s)%4)%4)
	}
	if parsed, err := ParseVAPIDKeys(std(keys.PublicKey), std(keys.PrivateKey)); err != nil || parsed != keys {
		t.Fatalf("ParseVAPIDKeys(standard base64) = %v, %v; want canonical keys", parsed, err)
	}

	other, err := GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	for name, pair := range map[string][2]string{
		"mismatched pair":       {keys.PublicKey, other.PrivateKey},
		"public not base64":     {"***", keys.PrivateKey},
		"public not a point":    {encodeBase64URL(make([]byte, 65)), keys.PrivateKey},
		"private wrong length":  {keys.PublicKey, encodeBase64URL(make([]byte, 31))},
		"private zero scalar":   {keys.PublicKey, encodeBase64URL(make([]byte, 32))},
		"private not base64":    {keys.PublicKey, "***"},
		"both empty":            {"", ""},
		"public is private key": {keys.PrivateKey, keys.PrivateKey},
	} {
		_, err := ParseVAPIDKeys(pair[0], pair[1])
		if !errors.Is(err, ErrInvalidVAPIDKeys) {
			t.Errorf("%s: err = %v, want ErrInvalidVAPIDKeys", name, err)
		}
		if err != nil && strings.Contains(err.Error(), keys.PrivateKey) {
			t.Errorf("%s: error leaks the private key", name)
		}
	}
	for _, text := range []string{fmt.Sprint(keys), fmt.Sprintf("%+v", keys), fmt.Sprintf("%#v", keys)} {
		if strings.Contains(text, keys.PrivateKey) {
			t.Errorf("formatting %q reveals the private key", text)
		}
	}
}

func TestNormalizeContact(t *testing.T) {
	for _, tc := range []struct {
		contact string
		want    string // "" means an error
	}{
		{"ops@example.com", "mailto:ops@example.com"},
		{"mailto:ops@example.com", "mailto:ops@example.com"},
		{"MAILTO:ops@example.com", "mailto:ops@example.com"},
		{"  ops@example.com ", "mailto:ops@example.com"},
		{"https://example.com/contact", "https://example.com/contact"},
		{"mailto:mailto:ops@example.com", ""},
		{"", ""},
		{"ops", ""},
		{"mailto:", ""},
		{"http://example.com/contact", ""},
		{"https://", ""},
		{"Ops Team <ops@example.com>", ""},
	} {
		got, err := NormalizeContact(tc.contact)
		if tc.want == "" {
			if !errors.Is(err, ErrInvalidContact) {
				t.Errorf("NormalizeContact(%q) = %q, %v; want ErrInvalidContact", tc.contact, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("NormalizeContact(%q) = %q, %v; want %q", tc.contact, got, err, tc.want)
		}
	}
}

func TestVAPIDSubjectIsNeverDoubled(t *testing.T) {
	for contact, want := range map[string]string{
		"ops@example.com":             "mailto:ops@example.com",
		"mailto:ops@example.com":      "mailto:ops@example.com",
		"https://example.com/contact": "https://example.com/contact",
	} {
		t.Run(contact, func(t *testing.T) {
			signer, _ := newTestSigner(t, contact, 0, testNow)
			header, err := signer.Authorization("https://fcm.googleapis.com/fcm/send/abc")
			if err != nil {
				t.Fatal(err)
			}
			claims, _, err := VerifyVAPID(header, "https://fcm.googleapis.com", testNow)
			if err != nil {
				t.Fatal(err)
			}
			if claims.Subject != want {
				t.Fatalf("sub = %q, want %q", claims.Subject, want)
			}
			if n := strings.Count(claims.Subject, "mailto:"); n > 1 {
				t.Fatalf("sub %q has mailto: %d times", claims.Subject, n)
			}
		})
	}
}

func TestVAPIDExpiryHonoursTTLAndClamps(t *testing.T) {
	for _, tc := range []struct {
		ttl, want time.Duration
	}{
		{0, 12 * time.Hour},
		{-time.Hour, 12 * time.Hour},
		{time.Hour, time.Hour},
		{24 * time.Hour, 24 * time.Hour},
		{48 * time.Hour, 24 * time.Hour},
	} {
		t.Run(tc.ttl.String(), func(t *testing.T) {
			signer, _ := newTestSigner(t, "ops@example.com", tc.ttl, testNow)
			if signer.TTL() != tc.want {
				t.Fatalf("TTL() = %s, want %s", signer.TTL(), tc.want)
			}
			header, err := signer.Authorization("https://push.example.net/x")
			if err != nil {
				t.Fatal(err)
			}
			claims, _, err := VerifyVAPID(header, "https://push.example.net", testNow)
			if err != nil {
				t.Fatal(err)
			}
			exp := time.Unix(claims.Expiry, 0)
			if !exp.Equal(testNow.Add(tc.want)) {
				t.Fatalf("exp = %s, want now + %s", exp, tc.want)
			}
			if exp.Sub(testNow) > 24*time.Hour {
				t.Fatalf("exp is %s ahead, more than 24h", exp.Sub(testNow))
			}
		})
	}
}

func TestVAPIDAuthorizationHeaderShape(t *testing.T) {
	signer, keys := newTestSigner(t, "ops@example.com", time.Hour, testNow)
	header, err := signer.Authorization("https://fcm.googleapis.com:443/fcm/send/abc?x=1")
	if err != nil {
		t.Fatal(err)
	}
	token, key, ok := strings.Cut(strings.TrimPrefix(header, "vapid t="), ", k=")
	if !strings.HasPrefix(header, "vapid t=") || !ok || key != keys.PublicKey {
		t.Fatalf("header = %q, want vapid t=<jwt>, k=%s", header, keys.PublicKey)
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d parts", len(parts))
	}
	var jose map[string]string
	if err := json.Unmarshal(mustDecode(t, parts[0]), &jose); err != nil || jose["alg"] != "ES256" || jose["typ"] != "JWT" {
		t.Fatalf("JOSE header = %v, %v", jose, err)
	}
	var claims map[string]any
	if err := json.Unmarshal(mustDecode(t, parts[1]), &claims); err != nil {
		t.Fatal(err)
	}
	if claims["aud"] != "https://fcm.googleapis.com" {
		t.Fatalf("aud = %v, want the endpoint origin without default port or path", claims["aud"])
	}
	if n := len(mustDecode(t, parts[2])); n != 64 {
		t.Fatalf("signature is %d bytes, want 64 (R||S)", n)
	}
}

func TestVerifyVAPIDRejects(t *testing.T) {
	const aud = "https://push.example.net"
	signer, _ := newTestSigner(t, "ops@example.com", time.Hour, testNow)
	good, err := signer.Authorization(aud + "/p/1")
	if err != nil {
		t.Fatal(err)
	}
	otherSigner, otherKeys := newTestSigner(t, "ops@example.com", time.Hour, testNow)
	futureSigner, _ := newTestSigner(t, "ops@example.com", 24*time.Hour, testNow.Add(time.Hour))

	forge := func(s *VAPIDSigner, claims VAPIDClaims) string {
		token, err := s.sign(claims)
		if err != nil {
			t.Fatal(err)
		}
		return "vapid t=" + token + ", k=" + s.PublicKey()
	}
	validExp := testNow.Add(time.Hour).Unix()
	token, key, _ := strings.Cut(strings.TrimPrefix(good, "vapid t="), ", k=")
	parts := strings.Split(token, ".")
	tamperedClaims, _ := json.Marshal(VAPIDClaims{Audience: aud, Expiry: validExp + 60, Subject: "mailto:ops@example.com"})
	// Replace one character by another of the base64url alphabet (a bit flip
	// could turn '-' into '.', which fails as malformed, not as a signature).
	flippedSig := []byte(parts[2])
	flippedSig[5] = 'A'
	if parts[2][5] == 'A' {
		flippedSig[5] = 'B'
	}
	futureHeader, err := futureSigner.Authorization(aud + "/p/1")
	if err != nil {
		t.Fatal(err)
	}
	otherHeader, err := otherSigner.Authorization(aud + "/p/1")
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name   string
		header string
		aud    string
		now    time.Time
		want   error
	}{
		{"accepts the good token", good, aud, testNow, nil},
		{"accepts aud given with default port", good, aud + ":443", testNow, nil},
		{"wrong aud", good, "https://other.example.net", testNow, ErrVAPIDAudience},
		{"aud with a different port", good, aud + ":8443", testNow, ErrVAPIDAudience},
		{"expired", good, aud, testNow.Add(time.Hour), ErrVAPIDExpired},
		{"long expired", good, aud, testNow.Add(48 * time.Hour), ErrVAPIDExpired},
		{"exp more than 24h ahead", futureHeader, aud, testNow, ErrVAPIDTooLong},
		{"tampered signature", "vapid t=" + parts[0] + "." + parts[1] + "." + string(flippedSig) + ", k=" + key, aud, testNow, ErrVAPIDSignature},
		{"tampered claims", "vapid t=" + parts[0] + "." + encodeBase64URL(tamperedClaims) + "." + parts[2] + ", k=" + key, aud, testNow, ErrVAPIDSignature},
		{"k from another key pair", "vapid t=" + token + ", k=" + otherKeys.PublicKey, aud, testNow, ErrVAPIDSignature},
		{"signature by another key", strings.Replace(otherHeader, otherKeys.PublicKey, key, 1), aud, testNow, ErrVAPIDSignature},
		{"sub missing", forge(signer, VAPIDClaims{Audience: aud, Expiry: validExp}), aud, testNow, ErrVAPIDSubject},
		{"sub doubled mailto", forge(signer, VAPIDClaims{Audience: aud, Expiry: validExp, Subject: "mailto:mailto:ops@example.com"}), aud, testNow, ErrVAPIDSubject},
		{"sub without scheme", forge(signer, VAPIDClaims{Audience: aud, Expiry: validExp, Subject: "ops@example.com"}), aud, testNow, ErrVAPIDSubject},
		{"exp missing", forge(signer, VAPIDClaims{Audience: aud, Subject: "mailto:ops@example.com"}), aud, testNow, ErrVAPIDExpired},
		{"no header", "", aud, testNow, ErrVAPIDMissing},
		{"bearer scheme", "Bearer " + token, aud, testNow, ErrVAPIDMissing},
		{"legacy WebPush scheme", "WebPush " + token, aud, testNow, ErrVAPIDMissing},
		{"k missing", "vapid t=" + token, aud, testNow, ErrVAPIDMalformed},
		{"t missing", "vapid k=" + key, aud, testNow, ErrVAPIDMalformed},
		{"k not a point", "vapid t=" + token + ", k=AAAA", aud, testNow, ErrVAPIDMalformed},
		{"two-part token", "vapid t=" + parts[0] + "." + parts[1] + ", k=" + key, aud, testNow, ErrVAPIDMalformed},
		{"alg none", "vapid t=" + encodeBase64URL([]byte(`{"alg":"none"}`)) + "." + parts[1] + "." + parts[2] + ", k=" + key, aud, testNow, ErrVAPIDMalformed},
		{"short signature", "vapid t=" + parts[0] + "." + parts[1] + "." + parts[2][:40] + ", k=" + key, aud, testNow, ErrVAPIDMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := VerifyVAPID(tc.header, tc.aud, tc.now)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("VerifyVAPID = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tc.want) || !errors.Is(err, ErrInvalidVAPID) {
				t.Fatalf("VerifyVAPID = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestVerifyVAPIDAcceptsParameterVariants(t *testing.T) {
	signer, keys := newTestSigner(t, "https://example.com/contact", time.Hour, testNow)
	header, err := signer.Authorization("https://push.example.net/p/1")
	if err != nil {
		t.Fatal(err)
	}
	token, key, _ := strings.Cut(strings.TrimPrefix(header, "vapid t="), ", k=")
	for _, variant := range []string{
		header,
		"Vapid k=" + key + ",t=" + token,
		"VAPID  t=" + token + " ,  k=" + key + "=",
	} {
		claims, pub, err := VerifyVAPID(variant, "https://push.example.net", testNow)
		if err != nil {
			t.Fatalf("VerifyVAPID(%q) = %v", variant, err)
		}
		point, _ := pub.Bytes()
		if encodeBase64URL(point) != keys.PublicKey || claims.Subject != "https://example.com/contact" {
			t.Fatalf("VerifyVAPID(%q) = %+v with another key", variant, claims)
		}
	}
}

func TestNewVAPIDSignerRejectsBadConfig(t *testing.T) {
	keys, err := GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewVAPIDSigner(VAPIDConfig{Keys: keys, Contact: "not a contact"}); !errors.Is(err, ErrInvalidContact) {
		t.Errorf("bad contact: err = %v, want ErrInvalidContact", err)
	}
	if _, err := NewVAPIDSigner(VAPIDConfig{Keys: VAPIDKeys{PublicKey: keys.PublicKey}, Contact: "ops@example.com"}); !errors.Is(err, ErrInvalidVAPIDKeys) {
		t.Errorf("missing private key: err = %v, want ErrInvalidVAPIDKeys", err)
	}
}

func BenchmarkVAPIDSign(b *testing.B) {
	signer, _ := newTestSigner(b, "ops@example.com", 0, testNow)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := signer.Authorization("https://fcm.googleapis.com/fcm/send/abc"); err != nil {
			b.Fatal(err)
		}
	}
}
