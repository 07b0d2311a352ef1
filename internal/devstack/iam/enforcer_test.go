package iam

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	sestypes "github.com/aws/aws-sdk-go-v2/service/sesv2/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
)

const (
	testRegion  = "us-east-1"
	testAccount = "000000000000"
)

func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		if filepath.Dir(dir) == dir {
			t.Fatal("go.mod not found")
		}
		dir = filepath.Dir(dir)
	}
}

// transformed runs the real SAM transform on template.yaml with the given
// permissions ("Function action") removed.
func transformed(t testing.TB, remove ...[2]string) *Policies {
	t.Helper()
	root := repoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range remove {
		if raw, err = RemoveAction(raw, r[0], r[1]); err != nil {
			t.Fatal(err)
		}
	}
	tmpl := filepath.Join(t.TempDir(), "template.yaml")
	if err := os.WriteFile(tmpl, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Transform(context.Background(), TransformOptions{Root: root, Template: tmpl,
		Stack: Stack{Name: "herald", Prefix: "herald-", Region: testRegion, Account: testAccount}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// service answers every request with an empty JSON object and counts them.
type service struct{ requests atomic.Int32 }

func (s *service) Do(*http.Request) (*http.Response, error) {
	s.requests.Add(1)
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body: io.NopCloser(strings.NewReader("{}"))}, nil
}

// functionConfig is a function's aws.Config with the enforcer on it, as the
// local runner builds it.
func functionConfig(e *Enforcer, function string, svc *service) aws.Config {
	return aws.Config{
		Region: testRegion, Credentials: credentials.NewStaticCredentialsProvider("k", "s", ""),
		HTTPClient: svc, BaseEndpoint: aws.String("http://127.0.0.1:1"),
		RetryMaxAttempts: 1,
		APIOptions:       []func(*middleware.Stack) error{e.Middleware(function)},
	}
}

func relayBatchGet(ctx context.Context, cfg aws.Config) error {
	_, err := dynamodb.NewFromConfig(cfg).BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]ddbtypes.KeysAndAttributes{
		"herald-Table": {Keys: []map[string]ddbtypes.AttributeValue{{"pk": &ddbtypes.AttributeValueMemberS{Value: "N#1"}, "sk": &ddbtypes.AttributeValueMemberS{Value: "D#email"}}}},
	}})
	return err
}

func emailSend(ctx context.Context, cfg aws.Config) error {
	_, err := sesv2.NewFromConfig(cfg).SendEmail(ctx, &sesv2.SendEmailInput{
		FromEmailAddress:     aws.String("Herald <notifications@example.com>"),
		ConfigurationSetName: aws.String("herald-EmailConfigurationSet"),
		Destination:          &sestypes.Destination{ToAddresses: []string{"u1@example.org"}},
		Content:              &sestypes.EmailContent{Simple: &sestypes.Message{Subject: &sestypes.Content{Data: aws.String("s")}, Body: &sestypes.Body{Text: &sestypes.Content{Data: aws.String("b")}}}},
	})
	return err
}

func smsPublish(ctx context.Context, cfg aws.Config) error {
	_, err := sns.NewFromConfig(cfg).Publish(ctx, &sns.PublishInput{PhoneNumber: aws.String("+15555550100"), Message: aws.String("m")})
	return err
}

func smsPublishToTopic(ctx context.Context, cfg aws.Config) error {
	_, err := sns.NewFromConfig(cfg).Publish(ctx, &sns.PublishInput{TopicArn: aws.String("arn:aws:sns:us-east-1:000000000000:herald-FeedbackTopic"), Message: aws.String("m")})
	return err
}

func relaySendToEmailQueue(ctx context.Context, cfg aws.Config) error {
	_, err := sqs.NewFromConfig(cfg).SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String("http://127.0.0.1:1/000000000000/herald-EmailHighQueue"), MessageBody: aws.String("{}")})
	return err
}

// TestEnforcerOnTheTransformedTemplate runs SDK calls through the enforcer
// with the policies the SAM transform makes of template.yaml, and of copies
// with one permission removed: the removed permission's call must fail as
// AWS fails it, naming function, action and resource, without reaching the
// service.
func TestEnforcerOnTheTransformedTemplate(t *testing.T) {
	full := transformed(t)
	noBatchGet := transformed(t, [2]string{"RelayFunction", "dynamodb:BatchGetItem"})
	noSendEmail := transformed(t, [2]string{"EmailFunction", "ses:SendEmail"})
	tests := []struct {
		name     string
		policies *Policies
		function string
		call     func(context.Context, aws.Config) error
		// wantDenied is the action the error must name; "" means allowed.
		wantDenied, wantCode, wantResource string
		explicit                           bool
	}{
		{"relay BatchGetItem allowed", full, "RelayFunction", relayBatchGet, "", "", "", false},
		{"relay without dynamodb:BatchGetItem", noBatchGet, "RelayFunction", relayBatchGet,
			"dynamodb:BatchGetItem", "AccessDeniedException", "arn:aws:dynamodb:us-east-1:000000000000:table/herald-Table", false},
		{"relay without BatchGetItem still sends work messages", noBatchGet, "RelayFunction", relaySendToEmailQueue, "", "", "", false},
		{"email SendEmail allowed", full, "EmailFunction", emailSend, "", "", "", false},
		{"email without ses:SendEmail", noSendEmail, "EmailFunction", emailSend,
			"ses:SendEmail", "AccessDeniedException", "arn:aws:ses:us-east-1:000000000000:identity/example.com", false},
		{"api may not send email", full, "ApiFunction", emailSend,
			"ses:SendEmail", "AccessDeniedException", "arn:aws:ses:us-east-1:000000000000:identity/example.com", false},
		{"sms publishes to a phone number", full, "SmsFunction", smsPublish, "", "", "", false},
		{"sms may not publish to a topic", full, "SmsFunction", smsPublishToTopic,
			"sns:Publish", "AuthorizationError", "arn:aws:sns:us-east-1:000000000000:herald-FeedbackTopic", true},
		{"feedback may not read the batch API", full, "FeedbackFunction", relayBatchGet,
			"dynamodb:BatchGetItem", "AccessDeniedException", "arn:aws:dynamodb:us-east-1:000000000000:table/herald-Table", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var svc service
			var denied []Call
			e := NewEnforcer(tt.policies, testRegion, testAccount, func(c Call, _ error) { denied = append(denied, c) })
			err := tt.call(context.Background(), functionConfig(e, tt.function, &svc))
			if tt.wantDenied == "" {
				// The fake's "{}" may not parse as every protocol's answer;
				// what matters is that the call was sent and not denied.
				var ade *AccessDeniedError
				if errors.As(err, &ade) || svc.requests.Load() != 1 || len(denied) > 0 {
					t.Fatalf("err = %v, requests = %d, denials = %v; want the call allowed and sent", err, svc.requests.Load(), denied)
				}
				return
			}
			if svc.requests.Load() != 0 {
				t.Errorf("a denied call reached the service")
			}
			var api smithy.APIError
			if !errors.As(err, &api) || api.ErrorCode() != tt.wantCode {
				t.Fatalf("err = %v, want API error %s", err, tt.wantCode)
			}
			var ade *AccessDeniedError
			if !errors.As(err, &ade) || ade.Explicit != tt.explicit {
				t.Fatalf("err = %v, want an AccessDeniedError (explicit %v)", err, tt.explicit)
			}
			msg := err.Error()
			for _, want := range []string{"assumed-role/herald-" + tt.function + "Role/" + tt.function, "perform: " + tt.wantDenied, "on resource: " + tt.wantResource} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not name %q", msg, want)
				}
			}
			if len(denied) == 0 || denied[0].Action != tt.wantDenied || len(e.Denials()) == 0 {
				t.Errorf("denials heard %v, recorded %v; want %s", denied, e.Denials(), tt.wantDenied)
			}
		})
	}
}

// BenchmarkCheck is the enforcer's cost per AWS call: describe the input,
// evaluate it against the role, record it.
func BenchmarkCheck(b *testing.B) {
	e := NewEnforcer(transformed(b), testRegion, testAccount, nil)
	in := &dynamodb.BatchGetItemInput{RequestItems: map[string]ddbtypes.KeysAndAttributes{"herald-Table": {}}}
	b.ReportAllocs()
	for b.Loop() {
		if err := e.Check("RelayFunction", "DynamoDB", "BatchGetItem", in); err != nil {
			b.Fatal(err)
		}
	}
}
