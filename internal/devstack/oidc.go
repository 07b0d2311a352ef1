package devstack

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// jwtIssuer is the dev runner's OpenID Connect-shaped identity provider: an
// RSA key with a kid, published as a JWKS with a discovery document under
// the issuer URL, minting RS256 user tokens (/_dev/token). The gateway
// verifies tokens exactly as API Gateway's JWT authorizer does, so a token
// accepted locally is one the real authorizer accepts: RS256 only, kid in
// the issuer's JWKS, signature, iss, aud (or client_id when there is no aud),
// exp (required), nbf and iat, and the route's scopes.
type jwtIssuer struct {
	key    *rsa.PrivateKey
	kid    string
	issuer string
	// audience is the authorizer's audience list: a token's aud (or
	// client_id) must name one; minted tokens name the first.
	audience []string
}

func newJWTIssuer(issuer string, audience []string) (*jwtIssuer, error) {
	if len(audience) == 0 {
		return nil, errors.New("dev issuer: the JWT authorizer has no audience")
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("dev issuer key: %w", err)
	}
	return &jwtIssuer{key: key, kid: "herald-dev-" + rand.Text()[:10], issuer: issuer, audience: audience}, nil
}

// base is the issuer without a trailing slash: where the discovery document
// and the JWKS are (the issuer itself, slash and all, is what iss carries
// and what the gateway compares exactly, as API Gateway does).
func (j *jwtIssuer) base() string { return strings.TrimSuffix(j.issuer, "/") }

// routes publishes the discovery document and the JWKS under the issuer's
// path (the runner's issuer is its own base URL).
func (j *jwtIssuer) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{
			"issuer":                                j.issuer,
			"jwks_uri":                              j.base() + "/.well-known/jwks.json",
			"response_types_supported":              []string{"id_token"},
			"subject_types_supported":               []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
		})
	})
	mux.HandleFunc("GET /.well-known/jwks.json", func(w http.ResponseWriter, r *http.Request) {
		pub := j.key.PublicKey
		writeJSON(w, http.StatusOK, map[string]any{"keys": []map[string]string{{
			"kty": "RSA", "use": "sig", "alg": "RS256", "kid": j.kid,
			"n": base64.RawURLEncoding.EncodeToString(pub.N.Bytes()),
			"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes()),
		}}})
	})
}

func (j *jwtIssuer) mint(sub string, now time.Time, ttl time.Duration) string {
	return j.sign(map[string]any{
		"iss": j.issuer, "aud": j.audience[0], "sub": sub, "iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(ttl).Unix(),
	})
}

func (j *jwtIssuer) sign(claims map[string]any) string {
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims(claims))
	tok.Header["kid"] = j.kid
	s, err := tok.SignedString(j.key)
	if err != nil {
		panic(err) // an RSA key generated here always signs
	}
	return s
}

var (
	errBadToken     = errors.New("invalid token")
	errMissingScope = errors.New("token lacks the route's scopes")
)

// keyFor is the JWKS lookup: the token's kid must name a published key.
func (j *jwtIssuer) keyFor(t *jwt.Token) (any, error) {
	if kid, _ := t.Header["kid"].(string); kid == j.kid {
		return &j.key.PublicKey, nil
	}
	return nil, errBadToken
}

// verify checks the Authorization header's token and returns the claims as
// API Gateway passes them to the function (string values).
func (j *jwtIssuer) verify(authz string, now time.Time, scopes []string) (map[string]string, error) {
	raw := strings.TrimSpace(authz)
	if len(raw) > 7 && strings.EqualFold(raw[:7], "Bearer ") {
		raw = strings.TrimSpace(raw[7:])
	}
	if raw == "" {
		return nil, errBadToken
	}
	var c jwt.MapClaims
	_, err := jwt.ParseWithClaims(raw, &c, j.keyFor,
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuer(j.issuer), jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(), jwt.WithTimeFunc(func() time.Time { return now }))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBadToken, err)
	}
	aud, err := c.GetAudience()
	if err != nil {
		return nil, errBadToken
	}
	clientID, _ := c["client_id"].(string)
	if len(aud) > 0 && !slices.ContainsFunc(aud, func(a string) bool { return slices.Contains(j.audience, a) }) ||
		len(aud) == 0 && !slices.Contains(j.audience, clientID) {
		return nil, errBadToken
	}
	if len(scopes) > 0 && !hasScope(c, scopes) {
		return nil, errMissingScope
	}
	out := map[string]string{}
	for k, v := range c {
		switch v := v.(type) {
		case string:
			out[k] = v
		case float64:
			out[k] = fmt.Sprint(int64(v))
		default:
			b, _ := json.Marshal(v)
			out[k] = string(b)
		}
	}
	return out, nil
}

// hasScope: one of the route's scopes in the token's space-separated "scope"
// or "scp" claim.
func hasScope(c jwt.MapClaims, scopes []string) bool {
	for _, claim := range []string{"scope", "scp"} {
		if s, ok := c[claim].(string); ok {
			for have := range strings.FieldsSeq(s) {
				if slices.Contains(scopes, have) {
					return true
				}
			}
		}
	}
	return false
}
