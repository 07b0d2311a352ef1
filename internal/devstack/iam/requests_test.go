package iam

import (
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/pinpointsmsvoicev2"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	sestypes "github.com/aws/aws-sdk-go-v2/service/sesv2/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

func TestDescribe(t *testing.T) {
	const (
		region, account = "us-east-1", "000000000000"
		tbl             = "arn:aws:dynamodb:us-east-1:000000000000:table/herald-Table"
		q               = "arn:aws:sqs:us-east-1:000000000000:herald-EmailHighQueue"
	)
	queueURL := aws.String("http://127.0.0.1:4566/000000000000/herald-EmailHighQueue")
	tests := []struct {
		service, op string
		input       any
		want        []Request
	}{
		{"DynamoDB", "GetItem", &dynamodb.GetItemInput{TableName: aws.String("herald-Table")},
			[]Request{{Action: "dynamodb:GetItem", Resource: tbl}}},
		{"DynamoDB", "Query", &dynamodb.QueryInput{TableName: aws.String("herald-Table"), IndexName: aws.String("gsi1")},
			[]Request{{Action: "dynamodb:Query", Resource: tbl + "/index/gsi1"}}},
		{"DynamoDB", "Query", &dynamodb.QueryInput{TableName: aws.String("herald-Table")},
			[]Request{{Action: "dynamodb:Query", Resource: tbl}}},
		{"DynamoDB", "UpdateItem", &dynamodb.UpdateItemInput{TableName: aws.String(tbl)},
			[]Request{{Action: "dynamodb:UpdateItem", Resource: tbl}}},
		{"DynamoDB", "BatchGetItem", &dynamodb.BatchGetItemInput{RequestItems: map[string]ddbtypes.KeysAndAttributes{"herald-Table": {}, "other": {}}},
			[]Request{{Action: "dynamodb:BatchGetItem", Resource: tbl}, {Action: "dynamodb:BatchGetItem", Resource: "arn:aws:dynamodb:us-east-1:000000000000:table/other"}}},
		{"DynamoDB", "BatchWriteItem", &dynamodb.BatchWriteItemInput{RequestItems: map[string][]ddbtypes.WriteRequest{"herald-Table": nil}},
			[]Request{{Action: "dynamodb:BatchWriteItem", Resource: tbl}}},
		{"DynamoDB", "TransactWriteItems", &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
			{ConditionCheck: &ddbtypes.ConditionCheck{TableName: aws.String("herald-Table")}},
			{Put: &ddbtypes.Put{TableName: aws.String("herald-Table")}},
			{Update: &ddbtypes.Update{TableName: aws.String("herald-Table")}},
			{Delete: &ddbtypes.Delete{TableName: aws.String("herald-Table")}},
		}}, []Request{
			{Action: "dynamodb:ConditionCheckItem", Resource: tbl}, {Action: "dynamodb:PutItem", Resource: tbl},
			{Action: "dynamodb:UpdateItem", Resource: tbl}, {Action: "dynamodb:DeleteItem", Resource: tbl}}},
		{"EventBridge", "PutEvents", &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{
			{EventBusName: aws.String("herald")}, {EventBusName: aws.String("herald")},
			{EventBusName: aws.String("arn:aws:events:us-east-1:000000000000:event-bus/other")}, {}}},
			[]Request{{Action: "events:PutEvents", Resource: "arn:aws:events:us-east-1:000000000000:event-bus/herald"},
				{Action: "events:PutEvents", Resource: "arn:aws:events:us-east-1:000000000000:event-bus/other"},
				{Action: "events:PutEvents", Resource: "arn:aws:events:us-east-1:000000000000:event-bus/default"}}},
		{"SQS", "SendMessage", &sqs.SendMessageInput{QueueUrl: queueURL},
			[]Request{{Action: "sqs:SendMessage", Resource: q}}},
		{"SQS", "SendMessageBatch", &sqs.SendMessageBatchInput{QueueUrl: aws.String("https://sqs.us-east-1.amazonaws.com/000000000000/herald-EmailHighQueue")},
			[]Request{{Action: "sqs:SendMessage", Resource: q}}},
		{"SQS", "DeleteMessageBatch", &sqs.DeleteMessageBatchInput{QueueUrl: queueURL},
			[]Request{{Action: "sqs:DeleteMessage", Resource: q}}},
		{"SQS", "ChangeMessageVisibility", &sqs.ChangeMessageVisibilityInput{QueueUrl: queueURL},
			[]Request{{Action: "sqs:ChangeMessageVisibility", Resource: q}}},
		{"SQS", "GetQueueUrl", &sqs.GetQueueUrlInput{QueueName: aws.String("herald-EmailHighQueue")},
			[]Request{{Action: "sqs:GetQueueUrl", Resource: q}}},
		{"SESv2", "SendEmail", &sesv2.SendEmailInput{
			FromEmailAddress:     aws.String("Herald <notifications@example.com>"),
			ConfigurationSetName: aws.String("herald-EmailConfigurationSet"),
			Destination:          &sestypes.Destination{ToAddresses: []string{"u1@example.org"}},
		}, func() []Request {
			ctx := map[string][]string{"ses:ApiVersion": {"2"}, "ses:FromAddress": {"notifications@example.com"},
				"ses:FromDisplayName": {"Herald"}, "ses:Recipients": {"u1@example.org"}}
			return []Request{
				{Action: "ses:SendEmail", Resource: "arn:aws:ses:us-east-1:000000000000:identity/example.com", Context: ctx},
				{Action: "ses:SendEmail", Resource: "arn:aws:ses:us-east-1:000000000000:configuration-set/herald-EmailConfigurationSet", Context: ctx},
			}
		}()},
		{"Pinpoint SMS Voice V2", "SendTextMessage", &pinpointsmsvoicev2.SendTextMessageInput{
			DestinationPhoneNumber: aws.String("+15555550100"), OriginationIdentity: aws.String("arn:aws:sms-voice:us-east-1:000000000000:pool/pool-1"),
			ConfigurationSetName: aws.String("herald"),
		}, []Request{
			{Action: "sms-voice:SendTextMessage", Resource: "arn:aws:sms-voice:us-east-1:000000000000:pool/pool-1"},
			{Action: "sms-voice:SendTextMessage", Resource: "arn:aws:sms-voice:us-east-1:000000000000:configuration-set/herald"},
		}},
		{"Pinpoint SMS Voice V2", "SendTextMessage", &pinpointsmsvoicev2.SendTextMessageInput{
			DestinationPhoneNumber: aws.String("+15555550100"), OriginationIdentity: aws.String("arn:aws:sms-voice:us-east-1:111122223333:phone-number/phone-1"),
		}, []Request{{Action: "sms-voice:SendTextMessage", Resource: "arn:aws:sms-voice:us-east-1:111122223333:phone-number/phone-1"}}},
		{"SNS", "Publish", &sns.PublishInput{PhoneNumber: aws.String("+15555550100")},
			[]Request{{Action: "sns:Publish", Resource: "*"}}},
		{"SNS", "Publish", &sns.PublishInput{TopicArn: aws.String("arn:aws:sns:us-east-1:000000000000:t")},
			[]Request{{Action: "sns:Publish", Resource: "arn:aws:sns:us-east-1:000000000000:t"}}},
		{"SNS", "CheckIfPhoneNumberIsOptedOut", &sns.CheckIfPhoneNumberIsOptedOutInput{},
			[]Request{{Action: "sns:CheckIfPhoneNumberIsOptedOut", Resource: "*"}}},
		{"SNS", "CreatePlatformEndpoint", &sns.CreatePlatformEndpointInput{PlatformApplicationArn: aws.String("arn:aws:sns:us-east-1:000000000000:app/GCM/a")},
			[]Request{{Action: "sns:CreatePlatformEndpoint", Resource: "arn:aws:sns:us-east-1:000000000000:app/GCM/a"}}},
		{"SNS", "GetEndpointAttributes", &sns.GetEndpointAttributesInput{EndpointArn: aws.String("arn:aws:sns:us-east-1:000000000000:endpoint/GCM/a/1")},
			[]Request{{Action: "sns:GetEndpointAttributes", Resource: "arn:aws:sns:us-east-1:000000000000:endpoint/GCM/a/1"}}},
		{"SNS", "SetEndpointAttributes", &sns.SetEndpointAttributesInput{EndpointArn: aws.String("arn:aws:sns:us-east-1:000000000000:endpoint/GCM/a/1")},
			[]Request{{Action: "sns:SetEndpointAttributes", Resource: "arn:aws:sns:us-east-1:000000000000:endpoint/GCM/a/1"}}},
		{"SNS", "DeleteEndpoint", &sns.DeleteEndpointInput{EndpointArn: aws.String("arn:aws:sns:us-east-1:000000000000:endpoint/APNS/a/1")},
			[]Request{{Action: "sns:DeleteEndpoint", Resource: "arn:aws:sns:us-east-1:000000000000:endpoint/APNS/a/1"}}},
		{"SNS", "Publish", &sns.PublishInput{TargetArn: aws.String("arn:aws:sns:us-east-1:000000000000:endpoint/APNS/a/1")},
			[]Request{{Action: "sns:Publish", Resource: "arn:aws:sns:us-east-1:000000000000:endpoint/APNS/a/1"}}},
		{"SSM", "GetParameter", &ssm.GetParameterInput{Name: aws.String("/herald/vapid-private-key")},
			[]Request{{Action: "ssm:GetParameter", Resource: "arn:aws:ssm:us-east-1:000000000000:parameter/herald/vapid-private-key"}}},
		{"Secrets Manager", "GetSecretValue", &secretsmanager.GetSecretValueInput{SecretId: aws.String("arn:aws:secretsmanager:us-east-1:000000000000:secret:s-Abc123")},
			[]Request{{Action: "secretsmanager:GetSecretValue", Resource: "arn:aws:secretsmanager:us-east-1:000000000000:secret:s-Abc123"}}},
	}
	for _, tt := range tests {
		t.Run(tt.service+"."+tt.op, func(t *testing.T) {
			got, err := Describe(tt.service, tt.op, tt.input, region, account)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Describe = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestDescribeUnknownIsAnError(t *testing.T) {
	if _, err := Describe("SQS", "PurgeQueue", &sqs.PurgeQueueInput{}, "us-east-1", "0"); err == nil {
		t.Error("Describe(SQS.PurgeQueue) = nil error: an operation without a mapping must be refused")
	}
	if _, err := Describe("S3", "GetObject", nil, "us-east-1", "0"); err == nil {
		t.Error("Describe(S3.GetObject) = nil error")
	}
	// An identity by number or id: only the service knows its ARN.
	if _, err := Describe("Pinpoint SMS Voice V2", "SendTextMessage", &pinpointsmsvoicev2.SendTextMessageInput{OriginationIdentity: aws.String("+15555550100")}, "us-east-1", "0"); err == nil {
		t.Error("Describe(SendTextMessage from a number) = nil error")
	}
}
