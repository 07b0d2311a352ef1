package devstack

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/golang-jwt/jwt/v5"
)

var gwNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	testIssuer   = "http://127.0.0.1:3000"
	testAudience = "herald"
)

// newTestGateway is the runner's gateway around a handler that echoes the
// verified subject.
func newTestGateway(t *testing.T) (*httptest.Server, *jwtIssuer, *int) {
	t.Helper()
	iss, err := newJWTIssuer(testIssuer, []string{testAudience})
	if err != nil {
		t.Fatal(err)
	}
	calls := new(int)
	g := &gateway{
		routes: compileRoutes([]Route{
			{Method: "GET", Path: "/v1/users/{userId}/inbox", Auth: "UserJwt"},
			{Method: "POST", Path: "/v1/users/{userId}/inbox/read-all", Auth: "UserJwt", Scopes: []string{"inbox/write"}},
			{Method: "POST", Path: "/v1/notifications", Auth: "AWS_IAM"},
		}),
		handler: func(_ context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			*calls++
			sub := ""
			if a := ev.RequestContext.Authorizer; a != nil && a.JWT != nil {
				sub = a.JWT.Claims["sub"]
			}
			return events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: sub}, nil
		},
		jwt: iss, log: slog.New(slog.NewTextHandler(io.Discard, nil)), now: func() time.Time { return gwNow },
		invoke: func(ctx context.Context, _ time.Duration, fn func(context.Context) error) error { return fn(ctx) },
	}
	mux := http.NewServeMux()
	iss.routes(mux)
	mux.Handle("/", g)
	srv := httptest.NewServer(exactPaths(mux, g))
	t.Cleanup(srv.Close)
	return srv, iss, calls
}

func get(t *testing.T, method, url, authz string, body io.Reader) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(method, url, body)
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw), resp.Header
}

// sign makes a token as a forger (or the issuer) would.
func sign(t *testing.T, method jwt.SigningMethod, key any, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestGatewayVerifiesTokensAsAPIGatewayDoes(t *testing.T) {
	srv, iss, calls := newTestGateway(t)
	inbox := srv.URL + "/v1/users/u1/inbox"
	claims := func(change func(jwt.MapClaims)) jwt.MapClaims {
		c := jwt.MapClaims{"iss": testIssuer, "aud": testAudience, "sub": "u1", "iat": gwNow.Unix(), "exp": gwNow.Add(time.Hour).Unix()}
		if change != nil {
			change(c)
		}
		return c
	}
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	publicPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: must(x509.MarshalPKIXPublicKey(&iss.key.PublicKey))})
	unsigned := func(c jwt.MapClaims) string {
		s, err := jwt.NewWithClaims(jwt.SigningMethodNone, c).SignedString(jwt.UnsafeAllowNoneSignatureType)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tc := range []struct {
		name   string
		authz  string
		status int
	}{
		{"minted by /_dev/token", "Bearer " + iss.mint("u1", gwNow, time.Hour), 200},
		{"issuer's key and kid", "Bearer " + sign(t, jwt.SigningMethodRS256, iss.key, iss.kid, claims(nil)), 200},
		{"audience among several", "Bearer " + sign(t, jwt.SigningMethodRS256, iss.key, iss.kid, claims(func(c jwt.MapClaims) { c["aud"] = []string{"other", testAudience} })), 200},
		{"client_id instead of aud", "Bearer " + sign(t, jwt.SigningMethodRS256, iss.key, iss.kid, claims(func(c jwt.MapClaims) { delete(c, "aud"); c["client_id"] = testAudience })), 200},
		{"no Authorization", "", 401},
		{"not a JWT", "Bearer abc", 401},
		{"alg none", "Bearer " + unsigned(claims(nil)), 401},
		{"HS256 keyed with the public key", "Bearer " + sign(t, jwt.SigningMethodHS256, publicPEM, iss.kid, claims(nil)), 401},
		{"RS512", "Bearer " + sign(t, jwt.SigningMethodRS512, iss.key, iss.kid, claims(nil)), 401},
		{"unknown kid", "Bearer " + sign(t, jwt.SigningMethodRS256, other, "forged", claims(nil)), 401},
		{"issuer's kid, another key", "Bearer " + sign(t, jwt.SigningMethodRS256, other, iss.kid, claims(nil)), 401},
		{"no kid", "Bearer " + sign(t, jwt.SigningMethodRS256, iss.key, "", claims(nil)), 401},
		{"expired", "Bearer " + sign(t, jwt.SigningMethodRS256, iss.key, iss.kid, claims(func(c jwt.MapClaims) { c["exp"] = gwNow.Add(-time.Second).Unix() })), 401},
		{"no exp", "Bearer " + sign(t, jwt.SigningMethodRS256, iss.key, iss.kid, claims(func(c jwt.MapClaims) { delete(c, "exp") })), 401},
		{"not yet valid", "Bearer " + sign(t, jwt.SigningMethodRS256, iss.key, iss.kid, claims(func(c jwt.MapClaims) { c["nbf"] = gwNow.Add(time.Minute).Unix() })), 401},
		{"issued in the future", "Bearer " + sign(t, jwt.SigningMethodRS256, iss.key, iss.kid, claims(func(c jwt.MapClaims) { c["iat"] = gwNow.Add(time.Minute).Unix() })), 401},
		{"wrong audience", "Bearer " + sign(t, jwt.SigningMethodRS256, iss.key, iss.kid, claims(func(c jwt.MapClaims) { c["aud"] = "other" })), 401},
		{"wrong client_id", "Bearer " + sign(t, jwt.SigningMethodRS256, iss.key, iss.kid, claims(func(c jwt.MapClaims) { delete(c, "aud"); c["client_id"] = "other" })), 401},
		{"wrong issuer", "Bearer " + sign(t, jwt.SigningMethodRS256, iss.key, iss.kid, claims(func(c jwt.MapClaims) { c["iss"] = "https://evil.example" })), 401},
		{"signature stripped", "Bearer " + strings.Join(strings.Split(iss.mint("u1", gwNow, time.Hour), ".")[:2], ".") + ".", 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := *calls
			status, body, h := get(t, http.MethodGet, inbox, tc.authz, nil)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, body)
			}
			if tc.status == 401 {
				if body != `{"message":"Unauthorized"}` || h.Get("Content-Type") != "application/json" || *calls != before {
					t.Fatalf("401 body %q (%s), handler calls %d", body, h.Get("Content-Type"), *calls-before)
				}
				return
			}
			if body != "u1" {
				t.Fatalf("handler saw sub %q", body)
			}
		})
	}
	// Route scopes: at least one in the token's scope (or scp) claim.
	readAll := srv.URL + "/v1/users/u1/inbox/read-all"
	if status, body, _ := get(t, http.MethodPost, readAll, "Bearer "+iss.mint("u1", gwNow, time.Hour), nil); status != 403 || body != `{"message":"Forbidden"}` {
		t.Fatalf("without the route's scope: %d %s", status, body)
	}
	scoped := sign(t, jwt.SigningMethodRS256, iss.key, iss.kid, claims(func(c jwt.MapClaims) { c["scope"] = "openid inbox/write" }))
	if status, body, _ := get(t, http.MethodPost, readAll, "Bearer "+scoped, nil); status != 200 {
		t.Fatalf("with the route's scope: %d %s", status, body)
	}
}

// The local gateway compares the issuer as API Gateway does: exactly, a
// trailing slash included (JwtIssuer "https://tenant.auth0.com/" accepts
// tokens whose iss has the slash, and only those); the discovery document
// names the issuer as configured and the JWKS under it.
func TestGatewayComparesTheIssuerExactly(t *testing.T) {
	for _, configured := range []string{testIssuer, testIssuer + "/"} {
		iss, err := newJWTIssuer(configured, []string{testAudience})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := iss.verify("Bearer "+iss.mint("u1", gwNow, time.Hour), gwNow, nil); err != nil {
			t.Errorf("%s: its own token refused: %v", configured, err)
		}
		for _, tokenIss := range []string{testIssuer, testIssuer + "/"} {
			tok := sign(t, jwt.SigningMethodRS256, iss.key, iss.kid, jwt.MapClaims{"iss": tokenIss, "aud": testAudience, "sub": "u1",
				"iat": gwNow.Unix(), "exp": gwNow.Add(time.Hour).Unix()})
			_, err := iss.verify("Bearer "+tok, gwNow, nil)
			if (err == nil) != (tokenIss == configured) {
				t.Errorf("issuer %q, iss %q: err %v; want accepted only on an exact match", configured, tokenIss, err)
			}
		}
		mux := http.NewServeMux()
		iss.routes(mux)
		srv := httptest.NewServer(mux)
		status, body, _ := get(t, http.MethodGet, srv.URL+"/.well-known/openid-configuration", "", nil)
		srv.Close()
		var disc struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if status != 200 || json.Unmarshal([]byte(body), &disc) != nil || disc.Issuer != configured || disc.JWKSURI != testIssuer+"/.well-known/jwks.json" {
			t.Errorf("%s: discovery %d %s", configured, status, body)
		}
	}
}

func TestGatewayIsAnOIDCIssuer(t *testing.T) {
	srv, iss, _ := newTestGateway(t)
	status, body, _ := get(t, http.MethodGet, srv.URL+"/.well-known/openid-configuration", "", nil)
	var disc struct {
		Issuer  string   `json:"issuer"`
		JWKSURI string   `json:"jwks_uri"`
		Algs    []string `json:"id_token_signing_alg_values_supported"`
	}
	if status != 200 || json.Unmarshal([]byte(body), &disc) != nil || disc.Issuer != testIssuer || disc.JWKSURI == "" || len(disc.Algs) != 1 || disc.Algs[0] != "RS256" {
		t.Fatalf("discovery %d %s", status, body)
	}
	status, body, _ = get(t, http.MethodGet, strings.Replace(disc.JWKSURI, testIssuer, srv.URL, 1), "", nil)
	var set struct {
		Keys []struct{ Kty, Kid, Alg, Use, N, E string } `json:"keys"`
	}
	if status != 200 || json.Unmarshal([]byte(body), &set) != nil || len(set.Keys) != 1 {
		t.Fatalf("jwks %d %s", status, body)
	}
	k := set.Keys[0]
	if k.Kty != "RSA" || k.Kid != iss.kid || k.Alg != "RS256" || k.Use != "sig" || k.N == "" || k.E != "AQAB" {
		t.Fatalf("jwk %+v", k)
	}
}

// Errors the gateway answers itself are API Gateway's bodies, byte for byte.
func TestGatewayErrorsAreAPIGatewaysOwn(t *testing.T) {
	srv, iss, calls := newTestGateway(t)
	token := "Bearer " + iss.mint("u1", gwNow, time.Hour)
	for _, tc := range []struct {
		name, method, path, authz string
		body                      io.Reader
		status                    int
		message                   string
	}{
		{"unknown path", http.MethodGet, "/v1/nope", "", nil, 404, "Not Found"},
		{"method the path does not support", http.MethodDelete, "/v1/users/u1/inbox", token, nil, 404, "Not Found"},
		{"PATCH a service route", http.MethodPatch, "/v1/notifications", "", nil, 404, "Not Found"},
		{"HEAD of a GET route", http.MethodHead, "/v1/users/u1/inbox", token, nil, 404, ""},
		{"trailing path segment", http.MethodGet, "/v1/users/u1/inbox/x/y/z", token, nil, 404, "Not Found"},
		{"no token", http.MethodGet, "/v1/users/u1/inbox", "", nil, 401, "Unauthorized"},
		{"body over 10 MB", http.MethodPost, "/v1/notifications", "", strings.NewReader(strings.Repeat("x", maxPayload+1)), 413, "Request Entity Too Large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := *calls
			status, body, h := get(t, tc.method, srv.URL+tc.path, tc.authz, tc.body)
			want := ""
			if tc.message != "" {
				want = `{"message":"` + tc.message + `"}`
			}
			if status != tc.status || body != want || h.Get("Content-Type") != "application/json" {
				t.Fatalf("%d %q (%s), want %d %s", status, body, h.Get("Content-Type"), tc.status, want)
			}
			if *calls != before {
				t.Fatal("the function was invoked")
			}
		})
	}
}

// API Gateway matches a request's path against the routes exactly: a
// trailing slash, an empty segment or a dot segment is no route (404, the
// function never runs), where Go's router would clean the path and redirect
// — a 307 that keeps a POST's body, to a runner route too.
func TestGatewayMatchesRoutesExactly(t *testing.T) {
	srv, iss, calls := newTestGateway(t)
	token := "Bearer " + iss.mint("u1", gwNow, time.Hour)
	for _, tc := range []struct{ name, method, path, authz string }{
		{"trailing slash", http.MethodPost, "/v1/notifications/", ""},
		{"trailing slash after a variable", http.MethodGet, "/v1/users/u1/inbox/", token},
		{"double slash", http.MethodPost, "/v1//notifications", ""},
		{"leading double slash", http.MethodPost, "//v1/notifications", ""},
		{"empty variable", http.MethodGet, "/v1/users//inbox", token},
		{"dot segment", http.MethodPost, "/v1/./notifications", ""},
		{"dot-dot segment", http.MethodPost, "/v1/x/../notifications", ""},
		{"dot-dot as the variable", http.MethodGet, "/v1/users/../inbox", token},
		{"encoded dot-dot as the variable", http.MethodGet, "/v1/users/%2E%2E/inbox", token},
		{"encoded dot segment", http.MethodPost, "/v1/%2e/notifications", ""},
		{"dot-dot to a runner route", http.MethodPost, "/v1/notifications/../../_dev/faults", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := *calls
			req, _ := http.NewRequest(tc.method, srv.URL+"/", strings.NewReader(`{}`))
			req.URL.Opaque = tc.path // sent as it is, nothing cleaned by the client
			if tc.authz != "" {
				req.Header.Set("Authorization", tc.authz)
			}
			resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 404 || string(raw) != `{"message":"Not Found"}` || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("%s %s: %d %q (%s), want API Gateway's 404", tc.method, tc.path, resp.StatusCode, raw, resp.Header.Get("Content-Type"))
			}
			if *calls != before {
				t.Fatal("the function was invoked")
			}
		})
	}
	// The exact paths still reach the function.
	if status, body, _ := get(t, http.MethodGet, srv.URL+"/v1/users/u1/inbox", token, nil); status != 200 || body != "u1" {
		t.Fatalf("exact path: %d %s", status, body)
	}
}

// Route selection as API Gateway documents it: a full match of the route
// and method, a literal segment before a variable, the method before ANY,
// then the greedy variable with the longest prefix, then $default.
func TestGatewayRouteSelection(t *testing.T) {
	g := &gateway{routes: compileRoutes([]Route{
		{Method: "GET", Path: "/pets/dog/1"},
		{Method: "GET", Path: "/pets/dog/{id}"},
		{Method: "ANY", Path: "/pets/dog/{id}"},
		{Method: "GET", Path: "/pets/{proxy+}"},
		{Method: "ANY", Path: "/{proxy+}"},
		{Method: "GET", Path: "/"},
	})}
	for _, tc := range []struct{ method, path, want, params string }{
		{"GET", "/pets/dog/1", "GET /pets/dog/1", "map[]"},
		{"GET", "/pets/dog/2", "GET /pets/dog/{id}", "map[id:2]"},
		{"GET", "/pets/dog/a%20b", "GET /pets/dog/{id}", "map[id:a b]"},
		{"POST", "/pets/dog/2", "ANY /pets/dog/{id}", "map[id:2]"},
		{"GET", "/pets/cat/1", "GET /pets/{proxy+}", "map[proxy:cat/1]"},
		{"POST", "/pets/cat/1", "ANY /{proxy+}", "map[proxy:pets/cat/1]"},
		{"GET", "/", "GET /", "map[]"},
		{"GET", "/pets/", "", ""},
		{"GET", "/pets/cat//1", "", ""},
		{"GET", "/pets/dog/..", "", ""},
	} {
		r, params := g.match(tc.method, tc.path)
		got, gotParams := "", ""
		if r != nil {
			got, gotParams = r.Key(), fmt.Sprint(params)
		}
		if got != tc.want || gotParams != tc.params {
			t.Errorf("%s %s → %q %s, want %q %s", tc.method, tc.path, got, gotParams, tc.want, tc.params)
		}
	}
	g.routes = append(g.routes, compileRoutes([]Route{{Method: "ANY", Path: "$default"}})...)
	if r, _ := g.match("GET", "/pets/"); r == nil || r.Path != "$default" {
		t.Errorf("no route but $default: %v", r)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
