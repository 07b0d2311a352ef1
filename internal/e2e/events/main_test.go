// Package events tests delivery and campaign events end to end on a private
// local stack (DeliveryEvents all) whose template is the repository's plus
// the README's subscriber: a rule on caller "billing" and statuses failed
// and bounced, targeting its own SQS queue. Faults are global to the stack,
// so the tests here do not run in parallel.
package events

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

// subscriber is the README's "a service subscribing" snippet: its own queue,
// a rule on the bus, and the queue policy EventBridge needs to send to it.
const subscriber = `
  BillingFailuresQueue:
    Type: AWS::SQS::Queue
    Properties:
      MessageRetentionPeriod: 1209600
      SqsManagedSseEnabled: true
  BillingFailuresRule:
    Type: AWS::Events::Rule
    Properties:
      EventBusName: !Ref EventBus
      EventPattern:
        source: [herald]
        detail-type: [Delivery State Change]
        detail:
          caller: [{suffix: /billing}]
          status: [failed, bounced]
      Targets:
        - Id: billing-failures
          Arn: !GetAtt BillingFailuresQueue.Arn
  BillingFailuresQueuePolicy:
    Type: AWS::SQS::QueuePolicy
    Properties:
      Queues: [!Ref BillingFailuresQueue]
      PolicyDocument:
        Statement:
          - Effect: Allow
            Principal: {Service: events.amazonaws.com}
            Action: sqs:SendMessage
            Resource: !GetAtt BillingFailuresQueue.Arn
            Condition:
              ArnEquals: {"aws:SourceArn": !GetAtt BillingFailuresRule.Arn}
`

func TestMain(m *testing.M) {
	os.Exit(stacktest.RunEdited(m, func(tmpl string) (string, error) {
		i := strings.Index(tmpl, "\nOutputs:")
		if i < 0 {
			return "", fmt.Errorf("no Outputs section")
		}
		return tmpl[:i] + subscriber + tmpl[i:], nil
	}, devstack.Config{Overrides: map[string]string{"DeliveryEvents": "all", "MaxReceiveCount": "3",
		// Campaigns settle within seconds (TestCampaignEvents).
		"CampaignReconcileDelay": "1s"}}, stacktest.Options{}))
}
