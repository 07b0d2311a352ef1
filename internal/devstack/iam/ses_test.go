package iam

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	sestypes "github.com/aws/aws-sdk-go-v2/service/sesv2/types"
)

// emailRole is EmailFunction's role as the SAM transform makes it of
// template (text) with params.
func emailRole(t *testing.T, template string, params map[string]string) *Role {
	t.Helper()
	path := filepath.Join(t.TempDir(), "template.yaml")
	if err := os.WriteFile(path, []byte(template), 0o644); err != nil {
		t.Fatal(err)
	}
	return functionRole(t, path, "EmailFunction", params)
}

// functionRole is function's role as the SAM transform makes it of the
// template at path with params.
func functionRole(t *testing.T, path, function string, params map[string]string) *Role {
	t.Helper()
	p, err := Transform(context.Background(), TransformOptions{Root: repoRoot(t), Template: path, Params: params,
		Stack: Stack{Name: "herald", Prefix: "herald-", Region: testRegion, Account: testAccount}})
	if err != nil {
		t.Fatal(err)
	}
	r, ok := p.Role(function)
	if !ok {
		t.Fatalf("no %s role", function)
	}
	return r
}

// sendAllowed evaluates a SendEmail from from to the recipients, as SES
// authorizes it in acct, against role; it returns the first denied resource.
func sendAllowed(t *testing.T, role *Role, acct Account, from string, to ...string) (bool, string) {
	t.Helper()
	reqs, err := acct.Describe("SESv2", "SendEmail", &sesv2.SendEmailInput{
		FromEmailAddress:     aws.String(from),
		ConfigurationSetName: aws.String("herald-EmailConfigurationSet"),
		Destination:          &sestypes.Destination{ToAddresses: to},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		if d, _ := role.Evaluate(r); d != Allowed {
			return false, r.Resource
		}
	}
	return true, ""
}

// TestEmailGrantAsSESEvaluatesIt: EmailFunction's role, from the template
// through the real SAM transform, as SES authorizes a send: in the sandbox
// (the sender's identity and each recipient's verified identity), from the
// configured domain's addresses — or from the configured address, a trial's
// identity — it is allowed; from any other address it is denied; and the
// grant before (the SesIdentity identity only) fails the sandbox's
// recipient identity, as the README's smoke test did on AWS.
func TestEmailGrantAsSESEvaluatesIt(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	template := string(raw)
	acct := func(sandbox bool, verified ...string) Account {
		return Account{Region: testRegion, ID: testAccount, SES: SESAccount{Sandbox: sandbox, Verified: verified}}
	}
	const identity = "arn:aws:ses:us-east-1:000000000000:identity/"

	domain := emailRole(t, template, map[string]string{"SesIdentity": "example.com"})
	for _, tc := range []struct {
		name, from string
		to         []string
		acct       Account
		allowed    bool
		deniedOn   string
	}{
		{"sandbox, to a verified address", "Herald <notifications@example.com>", []string{"you@gmail.com"}, acct(true, "example.com", "you@gmail.com"), true, ""},
		{"sandbox, to two verified recipients, one by its domain", "alerts@example.com", []string{"you@gmail.com", "ops@partner.example.org"}, acct(true, "example.com", "you@gmail.com", "partner.example.org"), true, ""},
		{"sandbox, from a verified address of the domain", "billing@example.com", []string{"you@gmail.com"}, acct(true, "example.com", "billing@example.com", "you@gmail.com"), true, ""},
		{"production", "Herald <notifications@example.com>", []string{"anyone@gmail.com"}, acct(false, "example.com"), true, ""},
		{"from another verified domain", "notifications@other.example.net", []string{"you@gmail.com"}, acct(true, "example.com", "other.example.net", "you@gmail.com"), false, identity + "other.example.net"},
		{"from the domain's subdomain", "notifications@mail.example.com", []string{"anyone@gmail.com"}, acct(false, "example.com"), false, identity + "example.com"},
		{"from a look-alike domain", "notifications@badexample.com", []string{"anyone@gmail.com"}, acct(false, "example.com", "badexample.com"), false, identity + "badexample.com"},
		{"from a recipient's verified address", "you@gmail.com", []string{"you@gmail.com"}, acct(true, "example.com", "you@gmail.com"), false, identity + "you@gmail.com"},
	} {
		t.Run("domain identity: "+tc.name, func(t *testing.T) {
			ok, denied := sendAllowed(t, domain, tc.acct, tc.from, tc.to...)
			if ok != tc.allowed || denied != tc.deniedOn {
				t.Errorf("from %s to %v: allowed %v (denied on %q), want %v (%q)", tc.from, tc.to, ok, denied, tc.allowed, tc.deniedOn)
			}
		})
	}

	// A trial: the deployer's own verified address is the identity, the
	// sender and the recipient.
	trial := emailRole(t, template, map[string]string{"SesIdentity": "you@gmail.com", "EmailFrom": "you@gmail.com"})
	if ok, denied := sendAllowed(t, trial, acct(true, "you@gmail.com"), "you@gmail.com", "you@gmail.com"); !ok {
		t.Errorf("trial: from and to the verified address, denied on %s", denied)
	}
	if ok, _ := sendAllowed(t, trial, acct(true, "you@gmail.com", "gmail.com"), "other@gmail.com", "you@gmail.com"); ok {
		t.Error("trial: from another address of the identity's domain allowed")
	}

	// The grant before: the configured identity and the configuration set.
	const newGrant = `              Resource: !Sub "arn:${AWS::Partition}:ses:${AWS::Region}:${AWS::AccountId}:identity/*"
              Condition:
                StringLike:
                  ses:FromAddress:
                    - !Sub "*@${SesIdentity}"
                    - !Ref SesIdentity
`
	if !strings.Contains(template, newGrant) {
		t.Fatal("template.yaml: EmailFunction's ses:SendEmail grant is not the one this test knows")
	}
	old := emailRole(t, strings.Replace(template, newGrant,
		"              Resource: !Sub \"arn:${AWS::Partition}:ses:${AWS::Region}:${AWS::AccountId}:identity/${SesIdentity}\"\n", 1),
		map[string]string{"SesIdentity": "example.com"})
	if ok, _ := sendAllowed(t, old, acct(false, "example.com"), "notifications@example.com", "anyone@gmail.com"); !ok {
		t.Error("old grant, production: denied (the comparison is broken)")
	}
	if ok, denied := sendAllowed(t, old, acct(true, "example.com", "you@gmail.com"), "notifications@example.com", "you@gmail.com"); ok || denied != identity+"you@gmail.com" {
		t.Errorf("old grant, sandbox: allowed %v (denied on %q), want denied on the recipient's identity", ok, denied)
	}
}

// TestSESIdentityResolution: SES resolves an address to the address's own
// verified identity, else the closest verified domain above it.
func TestSESIdentityResolution(t *testing.T) {
	a := SESAccount{Verified: []string{"example.com", "ops@example.com", "mail.example.org"}}
	for addr, want := range map[string]string{
		"ops@example.com":        "ops@example.com",
		"billing@example.com":    "example.com",
		"x@eu.mail.example.com":  "example.com",
		"x@mail.example.org":     "mail.example.org",
		"x@example.org":          "example.org", // none verified: the domain
		"Ops@Example.com":        "Ops@Example.com",
		"someone@unverified.net": "unverified.net",
	} {
		if got := a.identity(addr); got != want {
			t.Errorf("%s: identity %s, want %s", addr, got, want)
		}
	}
}
