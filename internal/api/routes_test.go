package api

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// The router refuses what API Gateway never sends for a route key (its
// routes match exactly): 404 route_not_found, nothing runs, nothing is
// written.
func TestRouterRefusesWhatAPIGatewayNeverSends(t *testing.T) {
	ta := newTestAPI(t)
	user := map[string]string{"userId": "u1"}
	iam := &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: "arn:aws:iam::123456789012:user/svc"}}
	for _, tc := range []struct {
		name   string
		route  string
		method string
		raw    string
		params map[string]string
	}{
		{"unknown route key", "POST /v1/notifications/", "POST", "/v1/notifications/", nil},
		{"trailing slash", "POST /v1/notifications", "POST", "/v1/notifications/", nil},
		{"double slash", "POST /v1/notifications", "POST", "/v1//notifications", nil},
		{"dot segment", "POST /v1/notifications", "POST", "/v1/./notifications", nil},
		{"dot-dot segment", "PUT /v1/users/{userId}", "PUT", "/v1/users/u1/../u1", user},
		{"another path", "POST /v1/notifications", "POST", "/v1/campaigns", nil},
		{"one segment more", "PUT /v1/users/{userId}", "PUT", "/v1/users/u1/x", user},
		{"another method", "POST /v1/notifications", "PATCH", "/v1/notifications", nil},
		{"user id ..", "PUT /v1/users/{userId}", "PUT", "/v1/users/%2E%2E", map[string]string{"userId": ".."}},
		{"user id .", "PUT /v1/users/{userId}", "PUT", "/v1/users/.", map[string]string{"userId": "."}},
		{"user id .. without a raw path", "PUT /v1/users/{userId}", "", "", map[string]string{"userId": ".."}},
		{"empty user id", "PUT /v1/users/{userId}", "PUT", "/v1/users/", map[string]string{"userId": ""}},
		{"missing path parameter", "PUT /v1/users/{userId}", "PUT", "/v1/users/u1", nil},
		{"extra path parameter", "POST /v1/notifications", "POST", "/v1/notifications", map[string]string{"id": "x"}},
		{"parameter of another name", "PUT /v1/users/{userId}", "PUT", "/v1/users/u1", map[string]string{"user": "u1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := events.APIGatewayV2HTTPRequest{RouteKey: tc.route, RawPath: tc.raw, PathParameters: tc.params, Body: `{}`,
				Headers: map[string]string{"content-type": "application/json"}}
			ev.RequestContext.HTTP.Method = tc.method
			ev.RequestContext.Authorizer = iam
			resp, err := ta.h.Handle(context.Background(), ev)
			if err != nil {
				t.Fatal(err)
			}
			if p := decodeProblem(t, resp); resp.StatusCode != 404 || p.Code != "route_not_found" {
				t.Fatalf("%d %s, want 404 route_not_found", resp.StatusCode, resp.Body)
			}
			if w := ta.store.writeCount(); w != 0 {
				t.Fatalf("%d writes", w)
			}
		})
	}
	// What API Gateway sends is served: an encoded id, the same route.
	resp := ta.do(t, apiCall{route: "PUT /v1/users/{userId}", params: map[string]string{"userId": "u.1"}, body: `{}`, caller: "svc"})
	if resp.StatusCode != 200 {
		t.Fatalf("PUT /v1/users/u.1: %d %s", resp.StatusCode, resp.Body)
	}
}

// Route keys with ANY and a greedy variable fit as API Gateway matches them.
func TestRouteFitsAnyAndGreedyRoutes(t *testing.T) {
	ev := func(key, method, raw string, params map[string]string) events.APIGatewayV2HTTPRequest {
		e := events.APIGatewayV2HTTPRequest{RouteKey: key, RawPath: raw, PathParameters: params}
		e.RequestContext.HTTP.Method = method
		return e
	}
	for _, tc := range []struct {
		ev   events.APIGatewayV2HTTPRequest
		want bool
	}{
		{ev("ANY /files/{id}", "DELETE", "/files/a", map[string]string{"id": "a"}), true},
		{ev("GET /files/{proxy+}", "GET", "/files/a/b/c", map[string]string{"proxy": "a/b/c"}), true},
		{ev("GET /files/{proxy+}", "GET", "/files/a", map[string]string{"proxy": "a"}), true},
		{ev("GET /files/{proxy+}", "GET", "/files/a//c", map[string]string{"proxy": "a//c"}), false},
		{ev("GET /files/{proxy+}", "GET", "/files/a/../c", map[string]string{"proxy": "a/../c"}), false},
		{ev("GET /files/{proxy+}", "GET", "/files/a/", map[string]string{"proxy": "a/"}), false},
		{ev("GET /files/{id}", "GET", "/files/a/b", map[string]string{"id": "a"}), false},
	} {
		if got := routeFits(tc.ev); got != tc.want {
			t.Errorf("%s %s: %v, want %v", tc.ev.RouteKey, tc.ev.RawPath, got, tc.want)
		}
	}
}
