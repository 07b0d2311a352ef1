package live

import (
	"context"
	"errors"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"
)

// Verifier checks a user token and returns its subject.
type Verifier interface {
	Verify(ctx context.Context, token string) (subject string, err error)
}

// ErrUnauthorized is the error API Gateway maps to 401 when a Lambda
// authorizer returns it ("Unauthorized", exactly).
var ErrUnauthorized = errors.New("Unauthorized")

// Authorizer is the $connect Lambda REQUEST authorizer: the JWT in the
// query string `token`, verified as the HTTP API's JWT authorizer verifies
// the Authorization header. A valid token allows execute-api:Invoke on the
// method being connected, with the user (the token's sub) in the context.
type Authorizer struct {
	Verifier Verifier
	Log      *slog.Logger
}

// Handle authorizes one $connect.
func (a *Authorizer) Handle(ctx context.Context, ev events.APIGatewayCustomAuthorizerRequestTypeRequest) (events.APIGatewayCustomAuthorizerResponse, error) {
	token := ev.QueryStringParameters["token"]
	if token == "" {
		return events.APIGatewayCustomAuthorizerResponse{}, ErrUnauthorized
	}
	sub, err := a.Verifier.Verify(ctx, token)
	if err != nil {
		// Never the token or its claims: no PII in logs.
		a.Log.InfoContext(ctx, "live token refused", "reason", reason(err))
		return events.APIGatewayCustomAuthorizerResponse{}, ErrUnauthorized
	}
	return events.APIGatewayCustomAuthorizerResponse{
		PrincipalID: sub,
		PolicyDocument: events.APIGatewayCustomAuthorizerPolicy{
			Version: "2012-10-17",
			Statement: []events.IAMPolicyStatement{{
				Action: []string{"execute-api:Invoke"}, Effect: "Allow", Resource: []string{ev.MethodArn},
			}},
		},
		Context: map[string]any{"userId": sub},
	}, nil
}

// reason is a token failure's class, for logs.
func reason(err error) string {
	var r interface{ Reason() string }
	if errors.As(err, &r) {
		return r.Reason()
	}
	return "invalid"
}
