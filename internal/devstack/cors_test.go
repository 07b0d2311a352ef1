package devstack

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

const (
	appOrigin   = "https://app.example.com"
	otherOrigin = "https://evil.example.com"
)

// newCORSGateway is the runner's gateway with the repo template's
// CorsConfiguration (CorsAllowedOrigins = appOrigin) around a handler that
// counts its calls and sets a CORS header of its own, which API Gateway
// ignores.
func newCORSGateway(t *testing.T) (*httptest.Server, *jwtIssuer, *int) {
	t.Helper()
	tm, err := LoadTemplate("../../template.yaml", map[string]string{"CorsAllowedOrigins": appOrigin})
	if err != nil {
		t.Fatal(err)
	}
	cors := tm.Cors()
	if cors == nil {
		t.Fatal("template.yaml's HttpApi has no CorsConfiguration")
	}
	iss, err := newJWTIssuer(testIssuer, testAudience)
	if err != nil {
		t.Fatal(err)
	}
	calls := new(int)
	g := &gateway{
		routes: compileRoutes(tm.Routes()),
		handler: func(_ context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			*calls++
			return events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: `{"items":[]}`,
				Headers: map[string]string{"Content-Type": "application/json", "Access-Control-Allow-Origin": "*"}}, nil
		},
		jwt: iss, log: slog.New(slog.NewTextHandler(io.Discard, nil)), now: func() time.Time { return gwNow },
		invoke: func(ctx context.Context, _ time.Duration, fn func(context.Context) error) error { return fn(ctx) },
		cors:   cors,
	}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return srv, iss, calls
}

func do(t *testing.T, method, url string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, string(raw)
}

func TestTemplateCorsConfiguration(t *testing.T) {
	tm, err := LoadTemplate("../../template.yaml", map[string]string{"CorsAllowedOrigins": appOrigin + ",http://127.0.0.1:3000"})
	if err != nil {
		t.Fatal(err)
	}
	c := tm.Cors()
	if c == nil {
		t.Fatal("no CorsConfiguration")
	}
	if !slices.Equal(c.AllowOrigins, []string{appOrigin, "http://127.0.0.1:3000"}) {
		t.Errorf("AllowOrigins %v", c.AllowOrigins)
	}
	for _, h := range []string{"authorization", "content-type", "idempotency-key"} {
		if !slices.Contains(c.AllowHeaders, h) {
			t.Errorf("AllowHeaders %v lacks %s", c.AllowHeaders, h)
		}
	}
	// Every method a user (JWT) route uses, and no other.
	var want []string
	for _, r := range tm.Routes() {
		if r.Auth != "AWS_IAM" && r.Auth != "NONE" && !slices.Contains(want, r.Method) {
			want = append(want, r.Method)
		}
	}
	slices.Sort(want)
	got := slices.Sorted(slices.Values(c.AllowMethods))
	if !slices.Equal(got, want) {
		t.Errorf("AllowMethods %v, user routes use %v", got, want)
	}
	if c.MaxAge <= 0 || c.AllowCredentials {
		t.Errorf("MaxAge %d, AllowCredentials %v", c.MaxAge, c.AllowCredentials)
	}
	// No wildcard, no path: refused as CloudFormation refuses the parameter.
	for _, bad := range []string{"*", appOrigin + ",*", "https://*.example.com", appOrigin + "/", "app.example.com", ""} {
		if _, err := LoadTemplate("../../template.yaml", map[string]string{"CorsAllowedOrigins": bad}); bad != "" && err == nil {
			t.Errorf("CorsAllowedOrigins %q accepted", bad)
		}
	}
}

func TestGatewayAnswersPreflightsAsAPIGatewayDoes(t *testing.T) {
	srv, iss, calls := newCORSGateway(t)
	inbox := srv.URL + "/v1/users/u1/inbox"
	preflight := func(origin string) map[string]string {
		return map[string]string{"Origin": origin, "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "authorization"}
	}
	// A listed origin: 204 with the configuration, before the JWT
	// authorizer (no token) and without the function.
	resp, body := do(t, http.MethodOptions, inbox, preflight(appOrigin))
	h := resp.Header
	if resp.StatusCode != http.StatusNoContent || body != "" || *calls != 0 {
		t.Fatalf("preflight: %d %q, function calls %d", resp.StatusCode, body, *calls)
	}
	if h.Get("Access-Control-Allow-Origin") != appOrigin || !strings.Contains(h.Get("Access-Control-Allow-Headers"), "authorization") ||
		!strings.Contains(h.Get("Access-Control-Allow-Methods"), "GET") || h.Get("Access-Control-Max-Age") == "" ||
		h.Get("Access-Control-Allow-Credentials") != "" || h.Get("Vary") != "Origin" {
		t.Fatalf("preflight headers %v", h)
	}
	// Another origin: 204, no CORS header at all.
	resp, _ = do(t, http.MethodOptions, inbox, preflight(otherOrigin))
	if resp.StatusCode != http.StatusNoContent || *calls != 0 {
		t.Fatalf("preflight from another origin: %d, calls %d", resp.StatusCode, *calls)
	}
	for k := range resp.Header {
		if strings.HasPrefix(strings.ToLower(k), "access-control-") {
			t.Fatalf("another origin got %s: %v", k, resp.Header)
		}
	}
	// A path with no route is still answered (no OPTIONS route needed).
	if resp, _ := do(t, http.MethodOptions, srv.URL+"/nowhere", preflight(appOrigin)); resp.StatusCode != http.StatusNoContent ||
		resp.Header.Get("Access-Control-Allow-Origin") != appOrigin {
		t.Fatalf("preflight of an unrouted path: %d %v", resp.StatusCode, resp.Header)
	}
	// OPTIONS without Access-Control-Request-Method is not a preflight:
	// routed as any request (there is no OPTIONS route).
	if resp, _ := do(t, http.MethodOptions, inbox, map[string]string{"Origin": appOrigin}); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("plain OPTIONS: %d", resp.StatusCode)
	}

	// Actual requests: the listed origin gets Allow-Origin (the function's
	// own "*" is ignored); another origin and no origin get none.
	token := "Bearer " + iss.mint("u1", gwNow, time.Hour)
	resp, _ = do(t, http.MethodGet, inbox, map[string]string{"Origin": appOrigin, "Authorization": token})
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != appOrigin || *calls != 1 {
		t.Fatalf("GET from the app: %d %v, calls %d", resp.StatusCode, resp.Header, *calls)
	}
	for _, origin := range []string{otherOrigin, ""} {
		resp, _ = do(t, http.MethodGet, inbox, map[string]string{"Origin": origin, "Authorization": token})
		if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("GET from %q: %d %v", origin, resp.StatusCode, resp.Header)
		}
	}
	// The gateway's own refusal carries them too (the app can read the 401).
	resp, _ = do(t, http.MethodGet, inbox, map[string]string{"Origin": appOrigin})
	if resp.StatusCode != 401 || resp.Header.Get("Access-Control-Allow-Origin") != appOrigin {
		t.Fatalf("401 from the app: %d %v", resp.StatusCode, resp.Header)
	}
}

func TestLocalOverridesAddTheConsoleOrigin(t *testing.T) {
	got := localOverrides(map[string]string{"CorsAllowedOrigins": appOrigin}, "", "127.0.0.1:3000")["CorsAllowedOrigins"]
	if got != appOrigin+",http://127.0.0.1:3000" {
		t.Errorf("with HERALD_CORS_ORIGINS: %q", got)
	}
	if got := localOverrides(nil, "", "127.0.0.1:3000")["CorsAllowedOrigins"]; got != "http://127.0.0.1:3000" {
		t.Errorf("without: %q", got)
	}
	// The required send rates: 0 (no pacing) unless given.
	o := localOverrides(map[string]string{"EmailSendRate": "14"}, "", "127.0.0.1:3000")
	if o["EmailSendRate"] != "14" || o["SmsSendRate"] != "0" || o["PushSendRate"] != "0" {
		t.Errorf("send rates %q %q %q", o["EmailSendRate"], o["SmsSendRate"], o["PushSendRate"])
	}
}
