// Package userjwt verifies end-user JWTs as API Gateway's HTTP API JWT
// authorizer does, for the live inbox's $connect authorizer: RS256 with a
// kid named in the issuer's JWKS (found through the issuer's OpenID
// discovery document, cached and refreshed by keyfunc, a refresh at most
// every 5 minutes for an unknown kid), iss, aud (or client_id when the token
// has no aud), exp required, nbf and iat.
package userjwt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"
)

// Error is a refused token with the class of refusal (for logs: never the
// token or its claims).
type Error struct {
	reason string
	err    error
}

func (e *Error) Error() string  { return "token refused: " + e.reason + ": " + e.err.Error() }
func (e *Error) Unwrap() error  { return e.err }
func (e *Error) Reason() string { return e.reason }

// Verifier verifies tokens of one issuer and audience.
type Verifier struct {
	issuer, audience string
	client           *http.Client
	now              func() time.Time

	mu   sync.Mutex
	keys keyfunc.Keyfunc
}

// New verifies tokens of issuer for audience. The token's iss must equal
// issuer exactly, a trailing slash included, as API Gateway's JWT
// authorizer compares it (an Auth0 issuer is "https://tenant.auth0.com/",
// slash and all); the discovery document is read under it either way.
// client fetches the discovery document and the JWKS (nil: a client with a
// 5 s timeout).
func New(issuer, audience string, client *http.Client, now func() time.Time) *Verifier {
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	return &Verifier{issuer: issuer, audience: audience, client: client, now: now}
}

// keyfunc fetches the discovery document once per process (retried on the
// next token when it fails), then lets keyfunc keep the JWKS.
func (v *Verifier) keyfunc(ctx context.Context) (keyfunc.Keyfunc, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.keys != nil {
		return v.keys, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(v.issuer, "/")+"/.well-known/openid-configuration", nil)
	if err != nil {
		return nil, err
	}
	resp, err := v.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("issuer discovery: %w", err)
	}
	defer resp.Body.Close()
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("issuer discovery: status %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || doc.JWKSURI == "" {
		return nil, fmt.Errorf("issuer discovery: no jwks_uri (%v)", err)
	}
	// The process's lifetime bounds the refresh goroutine (Lambda freezes it).
	k, err := keyfunc.NewDefaultOverrideCtx(context.Background(), []string{doc.JWKSURI}, keyfunc.Override{
		Client:            v.client,
		HTTPTimeout:       5 * time.Second,
		RefreshInterval:   time.Hour,
		RefreshUnknownKID: rate.NewLimiter(rate.Every(5*time.Minute), 1),
		RateLimitWaitMax:  time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("issuer JWKS: %w", err)
	}
	v.keys = k
	return k, nil
}

// Verify checks token and returns its subject.
func (v *Verifier) Verify(ctx context.Context, token string) (string, error) {
	k, err := v.keyfunc(ctx)
	if err != nil {
		return "", &Error{reason: "jwks", err: err}
	}
	keyOf := k.KeyfuncCtx(ctx)
	var c jwt.MapClaims
	_, err = jwt.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		if kid, _ := t.Header["kid"].(string); kid == "" {
			return nil, errors.New("no kid")
		}
		return keyOf(t)
	}, jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuer(v.issuer), jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(), jwt.WithTimeFunc(v.now))
	if err != nil {
		return "", &Error{reason: classify(err), err: err}
	}
	aud, err := c.GetAudience()
	if err != nil {
		return "", &Error{reason: "audience", err: err}
	}
	if len(aud) > 0 && !slices.Contains(aud, v.audience) || len(aud) == 0 && c["client_id"] != v.audience {
		return "", &Error{reason: "audience", err: errors.New("audience not accepted")}
	}
	sub, _ := c["sub"].(string)
	if sub == "" {
		return "", &Error{reason: "subject", err: errors.New("no sub")}
	}
	return sub, nil
}

func classify(err error) string {
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return "expired"
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return "issuer"
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return "not_yet_valid"
	case errors.Is(err, jwt.ErrTokenUnverifiable), errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return "signature"
	default:
		return "malformed"
	}
}
