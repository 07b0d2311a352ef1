package webpush

import (
	"crypto/ecdh"
	"crypto/rand"
	"testing"
)

// testUserAgent is a browser's side of a subscription: the keys it hands out
// and the private half it decrypts with.
type testUserAgent struct {
	sub        Subscription
	privateKey *ecdh.PrivateKey
	authSecret []byte
}

func newTestUserAgent(t testing.TB, endpoint string) testUserAgent {
	t.Helper()
	priv, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, AuthSecretSize)
	if _, err := rand.Read(auth); err != nil {
		t.Fatal(err)
	}
	return testUserAgent{
		sub: Subscription{
			Endpoint: endpoint,
			P256dh:   encodeBase64URL(priv.PublicKey().Bytes()),
			Auth:     encodeBase64URL(auth),
		},
		privateKey: priv,
		authSecret: auth,
	}
}

func mustDecode(t testing.TB, s string) []byte {
	t.Helper()
	b, err := decodeBase64Any(s)
	if err != nil {
		t.Fatalf("decoding %q: %v", s, err)
	}
	return b
}
