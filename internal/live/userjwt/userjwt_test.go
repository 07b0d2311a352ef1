package userjwt

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// issuer is a local OpenID issuer: discovery document and JWKS.
type issuer struct {
	srv         *httptest.Server
	key         *rsa.PrivateKey
	kid         string
	jwksFetches atomic.Int32
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is := &issuer{key: key, kid: "k1"}
	mux := http.NewServeMux()
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"issuer":"` + is.srv.URL + `","jwks_uri":"` + is.srv.URL + `/jwks.json"}`))
	})
	mux.HandleFunc("/jwks.json", func(w http.ResponseWriter, r *http.Request) {
		is.jwksFetches.Add(1)
		pub := is.key.PublicKey
		_, _ = w.Write([]byte(`{"keys":[{"kty":"RSA","use":"sig","alg":"RS256","kid":"` + is.kid + `","n":"` +
			base64.RawURLEncoding.EncodeToString(pub.N.Bytes()) + `","e":"` +
			base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes()) + `"}]}`))
	})
	return is
}

func (is *issuer) sign(t *testing.T, m jwt.SigningMethod, key any, kid string, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestVerify(t *testing.T) {
	is := newIssuer(t)
	now := time.Now()
	v := New(is.srv.URL, "herald", nil, func() time.Time { return now })
	claims := func(change func(jwt.MapClaims)) jwt.MapClaims {
		c := jwt.MapClaims{"iss": is.srv.URL, "aud": "herald", "sub": "u1", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
		if change != nil {
			change(c)
		}
		return c
	}
	good := is.sign(t, jwt.SigningMethodRS256, is.key, is.kid, claims(nil))
	if sub, err := v.Verify(context.Background(), good); err != nil || sub != "u1" {
		t.Fatalf("a good token: %q, %v", sub, err)
	}
	// client_id stands for aud when the token has none (Cognito access tokens).
	clientID := is.sign(t, jwt.SigningMethodRS256, is.key, is.kid, claims(func(c jwt.MapClaims) { delete(c, "aud"); c["client_id"] = "herald" }))
	if _, err := v.Verify(context.Background(), clientID); err != nil {
		t.Fatalf("client_id token: %v", err)
	}
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	for name, tc := range map[string]struct {
		token, reason string
	}{
		"wrong issuer":            {is.sign(t, jwt.SigningMethodRS256, is.key, is.kid, claims(func(c jwt.MapClaims) { c["iss"] = "https://evil.example" })), "issuer"},
		"wrong audience":          {is.sign(t, jwt.SigningMethodRS256, is.key, is.kid, claims(func(c jwt.MapClaims) { c["aud"] = "other" })), "audience"},
		"expired":                 {is.sign(t, jwt.SigningMethodRS256, is.key, is.kid, claims(func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Minute).Unix() })), "expired"},
		"no expiry":               {is.sign(t, jwt.SigningMethodRS256, is.key, is.kid, claims(func(c jwt.MapClaims) { delete(c, "exp") })), "malformed"},
		"not yet valid":           {is.sign(t, jwt.SigningMethodRS256, is.key, is.kid, claims(func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Hour).Unix() })), "not_yet_valid"},
		"unknown kid":             {is.sign(t, jwt.SigningMethodRS256, other, "k2", claims(nil)), "signature"},
		"no kid":                  {is.sign(t, jwt.SigningMethodRS256, is.key, "", claims(nil)), "signature"},
		"issuer's kid, other key": {is.sign(t, jwt.SigningMethodRS256, other, is.kid, claims(nil)), "signature"},
		"alg none":                {is.sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, is.kid, claims(nil)), "signature"},
		"HS256":                   {is.sign(t, jwt.SigningMethodHS256, []byte("secret"), is.kid, claims(nil)), "signature"},
		"no sub":                  {is.sign(t, jwt.SigningMethodRS256, is.key, is.kid, claims(func(c jwt.MapClaims) { delete(c, "sub") })), "subject"},
	} {
		t.Run(name, func(t *testing.T) {
			sub, err := v.Verify(context.Background(), tc.token)
			var e *Error
			if err == nil || !errors.As(err, &e) {
				t.Fatalf("accepted (sub %q) or an untyped error: %v", sub, err)
			}
			if tc.reason != "" && e.Reason() != tc.reason && !(tc.reason == "signature" && e.Reason() == "malformed") {
				t.Errorf("reason %q, want %q (%v)", e.Reason(), tc.reason, err)
			}
		})
	}
}

// The issuer is compared as API Gateway's JWT authorizer compares it: the
// token's iss must match the configured issuer exactly, a trailing slash
// included. An Auth0-style issuer (https://tenant.auth0.com/, its tokens'
// iss with the slash) is accepted when configured with its slash; its
// discovery document is still found under it (issue 36, defect 9).
func TestIssuerIsComparedExactly(t *testing.T) {
	is := newIssuer(t)
	now := time.Now()
	token := func(iss string) string {
		return is.sign(t, jwt.SigningMethodRS256, is.key, is.kid,
			jwt.MapClaims{"iss": iss, "aud": "herald", "sub": "u1", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	}
	for _, tc := range []struct {
		configured, iss string
		ok              bool
	}{
		{is.srv.URL + "/", is.srv.URL + "/", true},
		{is.srv.URL + "/", is.srv.URL, false},
		{is.srv.URL, is.srv.URL, true},
		{is.srv.URL, is.srv.URL + "/", false},
	} {
		v := New(tc.configured, "herald", nil, func() time.Time { return now })
		_, err := v.Verify(context.Background(), token(tc.iss))
		var e *Error
		switch {
		case tc.ok && err != nil:
			t.Errorf("issuer %q, iss %q: refused: %v", tc.configured, tc.iss, err)
		case !tc.ok && (err == nil || !errors.As(err, &e) || e.Reason() != "issuer"):
			t.Errorf("issuer %q, iss %q: %v, want refused for its issuer", tc.configured, tc.iss, err)
		}
	}
}

// The JWKS is fetched once and cached: many verifications, one fetch; an
// unknown kid refreshes at most once per rate-limit window.
func TestJWKSCached(t *testing.T) {
	is := newIssuer(t)
	now := time.Now()
	v := New(is.srv.URL, "herald", nil, func() time.Time { return now })
	c := jwt.MapClaims{"iss": is.srv.URL, "aud": "herald", "sub": "u1", "exp": now.Add(time.Hour).Unix()}
	good := is.sign(t, jwt.SigningMethodRS256, is.key, is.kid, c)
	for range 20 {
		if _, err := v.Verify(context.Background(), good); err != nil {
			t.Fatal(err)
		}
	}
	if n := is.jwksFetches.Load(); n != 1 {
		t.Fatalf("%d JWKS fetches for 20 tokens, want 1", n)
	}
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	unknown := is.sign(t, jwt.SigningMethodRS256, other, "rotated", c)
	for range 3 {
		_, _ = v.Verify(context.Background(), unknown)
	}
	if n := is.jwksFetches.Load(); n > 2 {
		t.Fatalf("%d JWKS fetches after 3 unknown kids, want at most one refresh", n)
	}
}

// A rotated key published under a new kid is found by the refresh.
func TestRotatedKeyFound(t *testing.T) {
	is := newIssuer(t)
	now := time.Now()
	v := New(is.srv.URL, "herald", nil, func() time.Time { return now })
	c := jwt.MapClaims{"iss": is.srv.URL, "aud": "herald", "sub": "u1", "exp": now.Add(time.Hour).Unix()}
	if _, err := v.Verify(context.Background(), is.sign(t, jwt.SigningMethodRS256, is.key, is.kid, c)); err != nil {
		t.Fatal(err)
	}
	key2, _ := rsa.GenerateKey(rand.Reader, 2048)
	is.key, is.kid = key2, "k2" // the issuer rotates
	if _, err := v.Verify(context.Background(), is.sign(t, jwt.SigningMethodRS256, key2, "k2", c)); err != nil {
		t.Fatalf("a token of the rotated key: %v", err)
	}
}
