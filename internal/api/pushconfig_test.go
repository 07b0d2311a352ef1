package api

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

func TestPushConfig(t *testing.T) {
	const key = "BPublicKeyOfTheDeployment"
	jwt := &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": "u1"}}}
	iam := &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: "arn:aws:iam::1:user/svc"}}
	tests := []struct {
		name   string
		key    string
		auth   *events.APIGatewayV2HTTPRequestContextAuthorizerDescription
		status int
		code   string
	}{
		{"user token", key, jwt, http.StatusOK, ""},
		{"not configured", "", jwt, http.StatusNotFound, "push_not_configured"},
		{"service caller", key, iam, http.StatusUnauthorized, "unauthenticated"},
		{"nobody", key, nil, http.StatusUnauthorized, "unauthenticated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := New(Deps{Users: NewUsers(UsersDeps{VAPIDPublicKey: tt.key})})
			ev := events.APIGatewayV2HTTPRequest{RouteKey: "GET /v1/push/config"}
			ev.RequestContext.Authorizer = tt.auth
			resp, err := h.Handle(context.Background(), ev)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.status {
				t.Fatalf("status = %d, want %d: %s", resp.StatusCode, tt.status, resp.Body)
			}
			var body struct{ VapidPublicKey, Code string }
			if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
				t.Fatal(err)
			}
			if tt.status == http.StatusOK && (body.VapidPublicKey != key || resp.Headers["Cache-Control"] != "private, max-age=300") {
				t.Errorf("body %s headers %v", resp.Body, resp.Headers)
			}
			if body.Code != tt.code {
				t.Errorf("code = %q, want %q", body.Code, tt.code)
			}
		})
	}
}
