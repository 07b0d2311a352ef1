package app

import (
	"os/exec"
	"strings"
	"testing"
)

// Each Lambda links only what it calls: the SDK clients of the services it
// does not talk to, and the local stack, must not be in its binary. A client
// reached through shared wiring costs every function its size and init.
func TestEachFunctionLinksOnlyWhatItCalls(t *testing.T) {
	const (
		sqs            = "github.com/aws/aws-sdk-go-v2/service/sqs"
		ses            = "github.com/aws/aws-sdk-go-v2/service/sesv2"
		sns            = "github.com/aws/aws-sdk-go-v2/service/sns"
		ssm            = "github.com/aws/aws-sdk-go-v2/service/ssm"
		secretsmanager = "github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	)
	// Nothing outside the production tree, in any function.
	everywhere := []string{
		"github.com/heraldhq/herald/internal/devstack",
		"github.com/heraldhq/herald/internal/ops",
		"github.com/heraldhq/herald/internal/e2e",
		"github.com/aws/aws-sdk-go-v2/service/cloudformation",
		"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams",
		// Credentials come from Lambda's environment (EnvAWSConfig): the
		// SDK's config loader and the clients of its other credential
		// sources are about 2 MB of every binary.
		"github.com/aws/aws-sdk-go-v2/config",
		"github.com/aws/aws-sdk-go-v2/service/sts",
		"github.com/aws/aws-sdk-go-v2/service/sso",
		"github.com/aws/aws-sdk-go-v2/service/ssooidc",
		"github.com/aws/aws-sdk-go-v2/service/signin",
		"github.com/aws/aws-sdk-go-v2/feature/ec2/imds",
	}
	forbidden := map[string][]string{
		"api":       {ses, ssm}, // sqs: a started campaign's planning message; sns: device endpoints
		"relay":     {ses, sns, ssm, secretsmanager},
		"email":     {sns, ssm},
		"sms":       {ses, ssm, secretsmanager},
		"push":      {ses, secretsmanager}, // sns: mobile push to devices
		"scheduler": {ses, sns, ssm, secretsmanager},
		"feedback":  {sqs, ses, sns, ssm, secretsmanager},
		"campaign":  {ses, sns, ssm, secretsmanager},
		// The live inbox: the authorizer calls no AWS service (the issuer's
		// JWKS over HTTPS); the routes and the poster call DynamoDB and the
		// management API; the poster sends a broadcast's continuations to
		// its own queue (sqs), and the routes an evicted connection still
		// inside its $connect, to close later (sqs).
		"liveauthorizer": {sqs, ses, sns, ssm, secretsmanager},
		"live":           {ses, sns, ssm, secretsmanager},
		"livepost":       {ses, sns, ssm, secretsmanager},
	}
	deps := functionDeps(t)
	if len(deps) != len(forbidden) {
		t.Errorf("functions/ has %d functions, the test knows %d", len(deps), len(forbidden))
	}
	for fn, banned := range forbidden {
		linked, ok := deps[fn]
		if !ok {
			t.Errorf("functions/%s: not found", fn)
			continue
		}
		for _, pkg := range append(banned, everywhere...) {
			for _, dep := range linked {
				if links(dep, pkg) {
					t.Errorf("functions/%s links %s, which it never calls (go list -deps ./functions/%s)", fn, dep, fn)
				}
			}
		}
	}
}

// links reports whether dep is pkg: an SDK service client exactly (its
// types subpackage is data, and the relay decodes stream records with
// dynamodbstreams/types), a herald package or anything below it.
func links(dep, pkg string) bool {
	if strings.HasPrefix(pkg, "github.com/heraldhq/herald/") {
		return dep == pkg || strings.HasPrefix(dep, pkg+"/")
	}
	return dep == pkg
}

// functionDeps lists every package each functions/<name> links, by name.
func functionDeps(t *testing.T) map[string][]string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list dependencies: %v", err)
	}
	// The deployment's build tags (Makefile): without lambda.norpc,
	// aws-lambda-go links net/rpc, and with it html/template.
	cmd := exec.Command(gobin, "list", "-tags", "lambda.norpc", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}", "./functions/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		name := strings.TrimPrefix(fields[0], "github.com/heraldhq/herald/functions/")
		deps[name] = fields[1:]
	}
	return deps
}
