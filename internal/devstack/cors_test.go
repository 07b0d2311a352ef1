package devstack

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

const (
	appOrigin   = "https://app.example.com"
	otherOrigin = "https://evil.example.com"
)

// transformedTemplate is template.yaml as CloudFormation receives it (the
// SAM transform's output), resolved with overrides, failing the test if it
// cannot be.
func transformedTemplate(t testing.TB, path string, overrides map[string]string) *Template {
	t.Helper()
	tm, err := LoadTransformed(context.Background(), "../..", path, overrides)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// servedGateway is the HTTP API as the runner wires it (Stack.newHTTPGateway)
// from a transformed template, around an API function that counts its calls
// and sets a CORS header of its own, which API Gateway ignores.
func servedGateway(t *testing.T, tm *Template) (*httptest.Server, *Stack, *int) {
	t.Helper()
	s := &Stack{Template: tm, Clock: &Clock{}, Usage: NewUsage(), mux: http.NewServeMux(), server: &http.Server{},
		log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	calls := new(int)
	handler := func(_ context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		*calls++
		return events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: `{"items":[]}`,
			Headers: map[string]string{"Content-Type": "application/json", "Access-Control-Allow-Origin": "*"}}, nil
	}
	if err := s.newHTTPGateway(map[string]APIHandler{"ApiFunction": handler}, map[string]time.Duration{"ApiFunction": time.Second}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.server.Handler)
	t.Cleanup(srv.Close)
	return srv, s, calls
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

// TestGatewayServesTheTransformedCORS reads the CORS object the SAM
// transform hands CloudFormation (x-amazon-apigateway-cors in the HTTP API's
// Body, the raw transform output, with CloudFormation's resolution of the
// origins parameter: the list) and checks the local gateway serves exactly
// it: a preflight from each listed origin gets it, headers, methods and max
// age; a refused origin gets no CORS header; a simple request from a listed
// origin gets Allow-Origin, from a refused one nothing.
func TestGatewayServesTheTransformedCORS(t *testing.T) {
	origins := []string{appOrigin, "http://127.0.0.1:3000"}
	overrides := map[string]string{"CorsAllowedOrigins": strings.Join(origins, ",")}
	p, err := transform(context.Background(), "../..", "", WithLocalPlatformApplications(nil))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Resources map[string]struct {
			Type       string
			Properties struct{ Body map[string]json.RawMessage }
		}
	}
	if err := json.Unmarshal(p.Template, &doc); err != nil {
		t.Fatal(err)
	}
	var bodies []map[string]json.RawMessage
	for _, r := range doc.Resources {
		if r.Type == "AWS::ApiGatewayV2::Api" && r.Properties.Body != nil {
			bodies = append(bodies, r.Properties.Body)
		}
	}
	if len(bodies) != 1 {
		t.Fatalf("%d HTTP APIs with an OpenAPI body in the transformed template, want 1", len(bodies))
	}
	var cors struct {
		AllowOrigins     map[string]string `json:"allowOrigins"` // {"Ref": parameter}
		AllowHeaders     []string          `json:"allowHeaders"`
		AllowMethods     []string          `json:"allowMethods"`
		ExposeHeaders    []string          `json:"exposeHeaders"`
		MaxAge           *int              `json:"maxAge"`
		AllowCredentials bool              `json:"allowCredentials"`
	}
	raw := bodies[0]["x-amazon-apigateway-cors"]
	if err := json.Unmarshal(raw, &cors); err != nil {
		t.Fatalf("transformed x-amazon-apigateway-cors is %s, not the CORS object (%v)", raw, err)
	}
	if cors.AllowOrigins["Ref"] != "CorsAllowedOrigins" || len(cors.AllowHeaders) == 0 || len(cors.AllowMethods) == 0 || cors.MaxAge == nil {
		t.Fatalf("transformed x-amazon-apigateway-cors %s: want allowOrigins the CorsAllowedOrigins list, headers, methods and max age", raw)
	}

	srv, st, calls := servedGateway(t, transformedTemplate(t, "../../template.yaml", overrides))
	inbox := srv.URL + "/v1/users/u1/inbox"
	for _, origin := range origins {
		resp, body := do(t, http.MethodOptions, inbox, map[string]string{"Origin": origin,
			"Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "authorization"})
		h := resp.Header
		if resp.StatusCode != http.StatusNoContent || body != "" || *calls != 0 {
			t.Fatalf("preflight from %s: %d %q, function calls %d", origin, resp.StatusCode, body, *calls)
		}
		if h.Get("Access-Control-Allow-Origin") != origin || h.Get("Access-Control-Allow-Methods") != strings.Join(cors.AllowMethods, ",") ||
			h.Get("Access-Control-Allow-Headers") != strings.Join(cors.AllowHeaders, ",") || h.Get("Access-Control-Max-Age") != strconv.Itoa(*cors.MaxAge) ||
			(h.Get("Access-Control-Allow-Credentials") == "true") != cors.AllowCredentials {
			t.Errorf("preflight from %s served %v; the transformed configuration is %s", origin, h, raw)
		}
	}
	resp, _ := do(t, http.MethodOptions, inbox, map[string]string{"Origin": otherOrigin, "Access-Control-Request-Method": "GET"})
	if resp.StatusCode != http.StatusNoContent || hasCORSHeader(resp.Header) {
		t.Errorf("preflight from a refused origin: %d %v", resp.StatusCode, resp.Header)
	}
	token := "Bearer " + st.Token("u1", time.Hour)
	for _, origin := range origins {
		resp, _ := do(t, http.MethodGet, inbox, map[string]string{"Origin": origin, "Authorization": token})
		if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != origin ||
			resp.Header.Get("Access-Control-Expose-Headers") != strings.Join(cors.ExposeHeaders, ",") {
			t.Errorf("GET from %s: %d %v", origin, resp.StatusCode, resp.Header)
		}
	}
	resp, _ = do(t, http.MethodGet, inbox, map[string]string{"Origin": otherOrigin, "Authorization": token})
	if resp.StatusCode != 200 || hasCORSHeader(resp.Header) {
		t.Errorf("GET from a refused origin: %d %v", resp.StatusCode, resp.Header)
	}
}

func hasCORSHeader(h http.Header) bool {
	for k := range h {
		if strings.HasPrefix(strings.ToLower(k), "access-control-") {
			return true
		}
	}
	return false
}

func TestTransformedCORSConfiguration(t *testing.T) {
	tm := transformedTemplate(t, "../../template.yaml", map[string]string{"CorsAllowedOrigins": appOrigin + ",http://127.0.0.1:3000"})
	api, err := tm.HTTPAPI()
	if err != nil {
		t.Fatal(err)
	}
	c := api.CORS
	if c == nil {
		t.Fatal("the transformed HTTP API has no CORS configuration")
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
	for _, r := range api.Routes {
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
	for _, bad := range []string{"*", appOrigin + ",*", "https://*.example.com", appOrigin + "/", "app.example.com"} {
		if _, err := LoadTemplate("../../template.yaml", map[string]string{"CorsAllowedOrigins": bad}); err == nil {
			t.Errorf("CorsAllowedOrigins %q accepted", bad)
		}
	}
}

func TestGatewayAnswersPreflightsAsAPIGatewayDoes(t *testing.T) {
	srv, st, calls := servedGateway(t, transformedTemplate(t, "../../template.yaml", map[string]string{"CorsAllowedOrigins": appOrigin}))
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
	if resp.StatusCode != http.StatusNoContent || *calls != 0 || hasCORSHeader(resp.Header) {
		t.Fatalf("preflight from another origin: %d %v, calls %d", resp.StatusCode, resp.Header, *calls)
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
	token := "Bearer " + st.Token("u1", time.Hour)
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
