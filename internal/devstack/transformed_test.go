package devstack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack/controlplane"
)

// templateVariant writes template.yaml with one change (breakTemplate) to a
// temporary file and returns its path.
func templateVariant(t *testing.T, re, repl string) string {
	t.Helper()
	raw, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "template.yaml")
	if err := os.WriteFile(path, []byte(breakTemplate(t, string(raw), re, repl)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTransformedFunctionsAreTheTemplatesFunctions: the functions the
// runner plays (the transformed template's AWS::Lambda::Function resources,
// SAM's Globals merged in, the schedule an AWS::Events::Rule) have the
// settings the template as written gives them (what herald capacity and
// the template tests read).
func TestTransformedFunctionsAreTheTemplatesFunctions(t *testing.T) {
	overrides := map[string]string{"Tracing": "Active", "LogLevel": "DEBUG"}
	written, err := LoadTemplate("../../template.yaml", overrides)
	if err != nil {
		t.Fatal(err)
	}
	played := transformedTemplate(t, "../../template.yaml", overrides)
	want, got := written.Functions(), played.Functions()
	if len(got) < 10 || len(got) != len(want) {
		t.Fatalf("%d functions transformed, %d written", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.LogicalID != w.LogicalID || g.Timeout != w.Timeout || g.MemorySize != w.MemorySize || g.Tracing != w.Tracing ||
			g.Schedule != w.Schedule || !maps.Equal(g.Env, w.Env) {
			t.Errorf("transformed %+v\nwritten     %+v", g, w)
		}
	}
	if played.SystemLogLevel != written.SystemLogLevel || played.SystemLogLevel != "WARN" {
		t.Errorf("SystemLogLevel %q transformed, %q written", played.SystemLogLevel, written.SystemLogLevel)
	}
	for _, fn := range got {
		if fn.LogicalID == "SchedulerFunction" {
			if every, err := rateInterval(fn.Schedule); err != nil || every != time.Minute {
				t.Errorf("SchedulerFunction schedule %q: %v %v", fn.Schedule, every, err)
			}
		} else if fn.Schedule != "" {
			t.Errorf("%s has a schedule the runner does not play: %q", fn.LogicalID, fn.Schedule)
		}
	}
}

func TestRateInterval(t *testing.T) {
	for expr, want := range map[string]time.Duration{"rate(1 minute)": time.Minute, "rate(5 minutes)": 5 * time.Minute,
		"rate(2 hours)": 2 * time.Hour, "rate(1 day)": 24 * time.Hour} {
		if got, err := rateInterval(expr); err != nil || got != want {
			t.Errorf("%s = %v, %v; want %v", expr, got, err, want)
		}
	}
	for _, bad := range []string{"cron(0 12 * * ? *)", "rate(0 minutes)", "rate(1 week)", "rate(1 minute"} {
		if _, err := rateInterval(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// TestTransformedHTTPAPI: routes, authorizers and throttles are what the
// SAM transform makes of the HttpApi and its events.
func TestTransformedHTTPAPI(t *testing.T) {
	tm := transformedTemplate(t, "../../template.yaml", map[string]string{"JwtIssuer": "http://127.0.0.1:9", "JwtAudience": "inbox-app",
		"ApiThrottlingRateLimit": "700", "ApiThrottlingBurstLimit": "900", "UnsubscribeThrottlingRateLimit": "7", "UnsubscribeThrottlingBurstLimit": "9"})
	api, err := tm.HTTPAPI()
	if err != nil {
		t.Fatal(err)
	}
	auth := map[string]string{}
	for _, r := range api.Routes {
		if r.Function != "ApiFunction" {
			t.Errorf("%s integrates %s", r.Key(), r.Function)
		}
		auth[r.Key()] = r.Auth
	}
	for key, want := range map[string]string{"POST /v1/notifications": "AWS_IAM", "GET /v1/users/{userId}/inbox": "UserJwt",
		"GET /v1/unsubscribe": "NONE", "POST /v1/unsubscribe": "NONE", "PUT /v1/me/preferences": "UserJwt"} {
		if auth[key] != want {
			t.Errorf("%s: auth %q, want %q", key, auth[key], want)
		}
	}
	if j := api.JWT["UserJwt"]; len(api.JWT) != 1 || j.Issuer != "http://127.0.0.1:9" || !slices.Equal(j.Audience, []string{"inbox-app"}) ||
		j.IdentitySource != "$request.header.Authorization" {
		t.Errorf("JWT authorizers %+v", api.JWT)
	}
	for key, want := range map[string]Throttle{"POST /v1/notifications": {700, 900}, "GET /v1/unsubscribe": {7, 9}, "POST /v1/unsubscribe": {7, 9}} {
		if got, ok := api.ThrottleOf(key); !ok || got != want {
			t.Errorf("%s throttle %+v %v, want %+v", key, got, ok, want)
		}
	}
	// The template as written has no HTTP API the gateway reads.
	written, err := LoadTemplate("../../template.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := written.HTTPAPI(); !errors.Is(err, errUntransformed) {
		t.Errorf("HTTPAPI of the untransformed template: %v", err)
	}
}

// TestSAMShorthandsThatTransformDifferentlyDoNotPassLocally: variants of
// the template whose SAM source reads one way and transforms into another
// are played (or refused) as they transform, not as they read.
func TestSAMShorthandsThatTransformDifferentlyDoNotPassLocally(t *testing.T) {
	t.Run("CorsConfiguration with the origins parameter is collapsed by SAM", func(t *testing.T) {
		path := templateVariant(t, `(?m)^      DefinitionBody:\n(?:        .*\n)+`,
			"      CorsConfiguration:\n        AllowOrigins: !Ref CorsAllowedOrigins\n        AllowHeaders: [authorization]\n        AllowMethods: [GET]\n        MaxAge: 600\n")
		// As written it reads as a full CORS configuration…
		if _, err := LoadTemplate(path, map[string]string{"CorsAllowedOrigins": appOrigin}); err != nil {
			t.Fatalf("the variant as written: %v", err)
		}
		// …and the runner refuses what SAM makes of it.
		_, err := LoadTransformed(context.Background(), "../..", path, map[string]string{"CorsAllowedOrigins": appOrigin})
		var cpErr *controlplane.Error
		if !errors.As(err, &cpErr) || !cpErr.Has(controlplane.RuleCorsObject) {
			t.Fatalf("transformed variant: %v; want %s", err, controlplane.RuleCorsObject)
		}
	})
	t.Run("an HttpApi event without ApiId is a second, implicit API", func(t *testing.T) {
		path := templateVariant(t, `Properties: \{ApiId: !Ref HttpApi, Method: GET, Path: /v1/announcements\}`,
			"Properties: {Method: GET, Path: /v1/announcements}")
		_, err := transformedTemplate(t, path, nil).HTTPAPI()
		if err == nil || !strings.Contains(err.Error(), "one HTTP API") || !strings.Contains(err.Error(), "ServerlessHttpApi") {
			t.Fatalf("HTTPAPI = %v; want the implicit ServerlessHttpApi refused", err)
		}
	})
	t.Run("a route's authorization scopes", func(t *testing.T) {
		path := templateVariant(t, `(Path: "/v1/users/\{userId\}/inbox", Auth: \{Authorizer: UserJwt)\}`, "${1}, AuthorizationScopes: [inbox/read]}")
		srv, st, calls := servedGateway(t, transformedTemplate(t, path, nil))
		token := "Bearer " + st.Token("u1", time.Hour)
		if resp, _ := do(t, http.MethodGet, srv.URL+"/v1/users/u1/inbox", map[string]string{"Authorization": token}); resp.StatusCode != http.StatusForbidden || *calls != 0 {
			t.Errorf("a token without the route's scope: %d, calls %d", resp.StatusCode, *calls)
		}
		scoped := "Bearer " + st.SignToken(map[string]any{"iss": st.jwt.issuer, "aud": st.jwt.audience[0], "sub": "u1", "scope": "inbox/read",
			"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()})
		if resp, _ := do(t, http.MethodGet, srv.URL+"/v1/users/u1/inbox", map[string]string{"Authorization": scoped}); resp.StatusCode != 200 {
			t.Errorf("a token with the scope: %d", resp.StatusCode)
		}
	})
}

// TestGatewayThrottlesAsTheStage: the stage's RouteSettings throttle their
// route (429 {"message":"Too Many Requests"} past the burst, before the
// function), the rest of the API keeps the default's room, and the bucket
// refills at the rate.
func TestGatewayThrottlesAsTheStage(t *testing.T) {
	srv, st, calls := servedGateway(t, transformedTemplate(t, "../../template.yaml",
		map[string]string{"UnsubscribeThrottlingRateLimit": "1", "UnsubscribeThrottlingBurstLimit": "1"}))
	unsubscribe := srv.URL + "/v1/unsubscribe?token=x"
	if resp, _ := do(t, http.MethodGet, unsubscribe, nil); resp.StatusCode != 200 {
		t.Fatalf("first request: %d", resp.StatusCode)
	}
	resp, body := do(t, http.MethodGet, unsubscribe, nil)
	if resp.StatusCode != http.StatusTooManyRequests || body != `{"message":"Too Many Requests"}` || *calls != 1 {
		t.Fatalf("second request at once: %d %s, calls %d", resp.StatusCode, body, *calls)
	}
	for range 5 {
		if resp, _ := do(t, http.MethodPost, srv.URL+"/v1/notifications", nil); resp.StatusCode != 200 {
			t.Fatalf("another route: %d", resp.StatusCode)
		}
	}
	st.Clock.Advance(time.Second)
	if resp, _ := do(t, http.MethodGet, unsubscribe, nil); resp.StatusCode != 200 {
		t.Errorf("a second later: %d", resp.StatusCode)
	}
}

// TestTransformIgnoresTheRunnersParameters: the stack transforms the
// template with its configured overrides only (so the transform is cached
// across runs) and resolves the output with the values it sets per run (the
// VAPID key, its address in the issuer, origins and push allow-list, the
// send rates). That is the document CloudFormation gets only if SAM's
// output does not depend on those values, as it did when SAM inlined the
// origins parameter into CorsConfiguration: transformed with them and
// without, the resolved templates are the same.
func TestTransformIgnoresTheRunnersParameters(t *testing.T) {
	keys, err := loadSecrets("")
	if err != nil {
		t.Fatal(err)
	}
	perRun := localOverrides(WithLocalPlatformApplications(map[string]string{"VapidPublicKey": keys.VAPID.PublicKey}), "", "127.0.0.1:3000")
	transform := func(params map[string]string) []byte {
		p, err := transform(context.Background(), "../..", "", params)
		if err != nil {
			t.Fatal(err)
		}
		tm, err := ParseTransformed(p.Template, perRun)
		if err != nil {
			t.Fatal(err)
		}
		return tm.Resolved
	}
	without, with := transform(WithLocalPlatformApplications(nil)), transform(perRun)
	if !bytes.Equal(without, with) {
		var a, b map[string]any
		_ = json.Unmarshal(without, &a)
		_ = json.Unmarshal(with, &b)
		ra, _ := a["Resources"].(map[string]any)
		rb, _ := b["Resources"].(map[string]any)
		for id := range ra {
			x, _ := json.Marshal(ra[id])
			y, _ := json.Marshal(rb[id])
			if !bytes.Equal(x, y) {
				t.Errorf("%s differs when SAM is given the run's parameters:\nwithout %.600s\nwith    %.600s", id, x, y)
			}
		}
		t.Fatal("the transformed template depends on the parameters the runner sets per run (" + strconv.Itoa(len(perRun)) + ")")
	}
}
