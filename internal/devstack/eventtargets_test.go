package devstack

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/heraldhq/herald/internal/devstack/eventpattern"
)

// subscriberSnippet is a service's subscription as the README shows it: a
// queue, a rule on the stack's bus targeting it, and the queue policy that
// lets EventBridge send to it from that rule.
const subscriberSnippet = `
  SubscriberQueue:
    Type: AWS::SQS::Queue
  SubscriberRule:
    Type: AWS::Events::Rule
    Properties:
      EventBusName: !Ref EventBus
      EventPattern: {source: [herald]}
      Targets:
        - Id: subscriber
          Arn: !GetAtt SubscriberQueue.Arn
  SubscriberQueuePolicy:
    Type: AWS::SQS::QueuePolicy
    Properties:
      Queues: [!Ref SubscriberQueue]
      PolicyDocument:
        Statement:
          - Effect: Allow
            Principal: {Service: events.amazonaws.com}
            Action: sqs:SendMessage
            Resource: !GetAtt SubscriberQueue.Arn
            Condition:
              ArnEquals: {"aws:SourceArn": !GetAtt SubscriberRule.Arn}
`

// TestRuleTargetNeedsTheQueuePolicy: as on AWS, the local bus delivers a
// rule's event to an SQS target only when the queue's policy allows
// events.amazonaws.com sqs:SendMessage from that rule (aws:SourceArn). A
// copy of the template whose policy is broken (missing, another rule,
// another principal, another action, a Deny) delivers nothing and counts a
// failed invocation.
func TestRuleTargetNeedsTheQueuePolicy(t *testing.T) {
	raw, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	base := string(raw)
	i := strings.Index(base, "\nOutputs:")
	if i < 0 {
		t.Fatal("template.yaml has no Outputs section")
	}
	withSubscriber := func(snippet string) []byte { return []byte(base[:i] + snippet + base[i:]) }
	policy := snippet(subscriberSnippet, "  SubscriberQueuePolicy:")
	cases := []struct {
		name, snippet string
		allowed       bool
		why           string
	}{
		{"the README's policy", subscriberSnippet, true, ""},
		{"no queue policy", strings.Replace(subscriberSnippet, policy, "", 1), false, "no AWS::SQS::QueuePolicy"},
		{"another rule's ARN", strings.Replace(subscriberSnippet, `!GetAtt SubscriberRule.Arn`, `arn:aws:events:us-east-1:000000000000:rule/herald/other`, 1), false, "no statement"},
		{"another principal", strings.Replace(subscriberSnippet, `{Service: events.amazonaws.com}`, `{Service: sns.amazonaws.com}`, 1), false, "no AWS::SQS::QueuePolicy"},
		{"another action", strings.Replace(subscriberSnippet, `Action: sqs:SendMessage`, `Action: sqs:ReceiveMessage`, 1), false, "no statement"},
		{"a Deny beside the Allow", subscriberSnippet + `          - Effect: Deny
            Principal: "*"
            Action: "sqs:*"
            Resource: "*"
`, false, "denied by SubscriberQueuePolicy"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmpl, err := ParseTemplate(withSubscriber(c.snippet), nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := CreateResources(context.Background(), tmpl, nil, nil, "herald-")
			if err != nil {
				t.Fatal(err)
			}
			q := QueueInfo{LogicalID: "SubscriberQueue", URL: "http://sqs.local/000000000000/herald-SubscriberQueue", ARN: "arn:aws:sqs:" + LocalRegion + ":" + LocalAccountID + ":herald-SubscriberQueue"}
			res.values["ref:SubscriberQueue"], res.values["getatt:SubscriberQueue.Arn"] = q.URL, q.ARN
			rule, err := res.Resolve("${getatt:SubscriberRule.Arn}")
			if err != nil || rule != "arn:aws:events:"+LocalRegion+":"+LocalAccountID+":rule/herald-events/herald-SubscriberRule" {
				t.Fatalf("rule ARN %q, %v", rule, err)
			}
			allowed, why, err := queuePolicyAllows(tmpl, res, q, rule)
			if err != nil || allowed != c.allowed || !strings.Contains(why, c.why) {
				t.Fatalf("allowed %v (%q, %v), want %v (%q)", allowed, why, err, c.allowed, c.why)
			}

			// The bus with that target: one matching event.
			var sends atomic.Int32
			fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var in struct{ MessageBody string }
				_ = json.NewDecoder(r.Body).Decode(&in)
				sends.Add(1)
				sum := md5.Sum([]byte(in.MessageBody))
				w.Header().Set("Content-Type", "application/x-amz-json-1.0")
				_ = json.NewEncoder(w).Encode(map[string]string{"MessageId": "m1", "MD5OfMessageBody": hex.EncodeToString(sum[:])})
			}))
			defer fake.Close()
			creds := credentials.NewStaticCredentialsProvider("k", "s", "")
			bus := &EventBus{Name: "herald", ARN: "arn:aws:events:us-east-1:000000000000:event-bus/herald", faults: NewFaults(nil, time.Now), now: time.Now,
				log: slog.New(slog.NewTextHandler(io.Discard, nil)),
				sqs: sqs.New(sqs.Options{Region: LocalRegion, BaseEndpoint: aws.String(fake.URL), Credentials: creds}),
				rules: []busRule{{name: "SubscriberRule", pattern: eventpattern.MustCompile(`{"source":["herald"]}`),
					targets: []ruleTarget{{id: "subscriber", url: q.URL, allowed: allowed, why: why}}}}}
			srv := httptest.NewServer(bus)
			defer srv.Close()
			eb := eventbridge.New(eventbridge.Options{Region: LocalRegion, BaseEndpoint: aws.String(srv.URL), Credentials: creds})
			out, err := eb.PutEvents(context.Background(), &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
				EventBusName: aws.String("herald"), Source: aws.String("herald"), DetailType: aws.String("Delivery State Change"), Detail: aws.String(`{"status":"failed"}`)}}})
			if err != nil || out.FailedEntryCount != 0 {
				t.Fatalf("PutEvents: %+v, %v (the bus accepts the event either way)", out, err)
			}
			evs := bus.Events()
			if c.allowed {
				if sends.Load() != 1 || bus.FailedInvocations("SubscriberRule") != 0 || len(evs[0].FailedInvocations) != 0 {
					t.Errorf("allowed: %d sends, %d failed invocations", sends.Load(), bus.FailedInvocations("SubscriberRule"))
				}
				return
			}
			if sends.Load() != 0 || bus.FailedInvocations("SubscriberRule") != 1 || len(evs) != 1 || len(evs[0].FailedInvocations) != 1 || evs[0].FailedInvocations[0] != "SubscriberRule/subscriber" {
				t.Errorf("refused: %d sends, %d failed invocations, events %+v", sends.Load(), bus.FailedInvocations("SubscriberRule"), evs)
			}
		})
	}
}

// snippet returns the resource starting at header in s (up to the next
// resource at the same indentation).
func snippet(s, header string) string {
	i := strings.Index(s, header)
	rest := s[i+len(header):]
	if j := strings.Index(rest, "\n  S"); j >= 0 {
		return s[i : i+len(header)+j+1]
	}
	return s[i:]
}
