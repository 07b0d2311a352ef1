package iam

import (
	"fmt"
	"net/mail"
	"net/url"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/apigatewaymanagementapi"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/pinpointsmsvoicev2"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// servicePrefixes map SDK service ids to IAM service prefixes.
var servicePrefixes = map[string]string{
	"DynamoDB":         "dynamodb",
	"DynamoDB Streams": "dynamodb",
	"SQS":              "sqs",
	"SESv2":            "ses",
	"SNS":              "sns",
	// AWS End User Messaging SMS (pinpoint-sms-voice-v2).
	"Pinpoint SMS Voice V2": "sms-voice",
	"SSM":                   "ssm",
	"Secrets Manager":       "secretsmanager",
	"EventBridge":           "events",
	// The WebSocket management API (@connections), called by the live
	// inbox's functions: every method is execute-api:ManageConnections.
	"ApiGatewayManagementApi": "execute-api",
}

// ManageConnectionsInput describes one call of a WebSocket API's management
// endpoint (PostToConnection, GetConnection, DeleteConnection): the
// runner's stand-in for the SDK input, from the HTTP request the function
// sent.
type ManageConnectionsInput struct {
	APIID, Stage, Method, ConnectionID string
}

// Account is the AWS account calls are made in, as authorization sees it:
// its region and id (they make the ARNs of resources named by name) and
// what SES knows of it.
type Account struct {
	Region, ID string
	SES        SESAccount
}

// SESAccount is what SES's authorization of a send depends on: the
// account's verified identities (domains and addresses) and whether it is
// in the SES sandbox, where a send is authorized against each recipient's
// identity too. The zero value is an account out of the sandbox that names
// no identity: a send is authorized against its From address's domain.
type SESAccount struct {
	Sandbox  bool
	Verified []string
}

// Describe says what IAM authorizes for one SDK operation in the account
// given by region and account id, with the zero SESAccount (Account.Describe).
func Describe(serviceID, operation string, input any, region, account string) ([]Request, error) {
	return Account{Region: region, ID: account}.Describe(serviceID, operation, input)
}

// Describe says what IAM authorizes for one SDK operation: one request per
// resource the call touches (a BatchGetItem over two tables is two), each
// of which must be allowed. An operation it cannot describe is an error:
// the caller denies it rather than guess.
func (acct Account) Describe(serviceID, operation string, input any) ([]Request, error) {
	region, account := acct.Region, acct.ID
	prefix, ok := servicePrefixes[serviceID]
	if !ok {
		return nil, fmt.Errorf("the local IAM check does not know service %q (internal/devstack/iam/requests.go)", serviceID)
	}
	action := prefix + ":" + operation
	one := func(resource string) []Request { return []Request{{Action: action, Resource: resource}} }
	table := func(name *string) string {
		n := deref(name)
		if strings.HasPrefix(n, "arn:") {
			return n
		}
		return "arn:aws:dynamodb:" + region + ":" + account + ":table/" + n
	}
	index := func(name, idx *string) string {
		if deref(idx) == "" {
			return table(name)
		}
		return table(name) + "/index/" + deref(idx)
	}
	queue := func(u *string) (string, error) { return queueARN(deref(u), region) }

	switch in := input.(type) {
	// ---------------------------------------------------------------- API Gateway
	case *ManageConnectionsInput:
		return []Request{{Action: "execute-api:ManageConnections",
			Resource: "arn:aws:execute-api:" + region + ":" + account + ":" + in.APIID + "/" + in.Stage + "/" + in.Method + "/@connections/" + in.ConnectionID}}, nil
	case *apigatewaymanagementapi.PostToConnectionInput, *apigatewaymanagementapi.GetConnectionInput, *apigatewaymanagementapi.DeleteConnectionInput:
		// The SDK operation's input does not name the API and stage (they are
		// the endpoint's): the call is authorized at the endpoint, from the
		// signed request, as a ManageConnectionsInput (the runner's
		// management client), as AWS authorizes it.
		return nil, nil
	// ---------------------------------------------------------------- DynamoDB
	case *dynamodb.GetItemInput:
		return one(table(in.TableName)), nil
	case *dynamodb.PutItemInput:
		return one(table(in.TableName)), nil
	case *dynamodb.UpdateItemInput:
		return one(table(in.TableName)), nil
	case *dynamodb.DeleteItemInput:
		return one(table(in.TableName)), nil
	case *dynamodb.QueryInput:
		return one(index(in.TableName, in.IndexName)), nil
	case *dynamodb.ScanInput:
		return one(index(in.TableName, in.IndexName)), nil
	case *dynamodb.DescribeTableInput:
		return one(table(in.TableName)), nil
	case *dynamodb.BatchGetItemInput:
		return perTable(action, in.RequestItems, table), nil
	case *dynamodb.BatchWriteItemInput:
		return perTable(action, in.RequestItems, table), nil
	case *dynamodb.TransactGetItemsInput:
		// No IAM action of its own: each item is authorized as a GetItem.
		var out []Request
		for _, it := range in.TransactItems {
			if it.Get != nil {
				out = append(out, Request{Action: "dynamodb:GetItem", Resource: table(it.Get.TableName)})
			}
		}
		return out, nil
	case *dynamodb.TransactWriteItemsInput:
		// Each item is authorized as its own action.
		var out []Request
		for _, it := range in.TransactItems {
			switch {
			case it.ConditionCheck != nil:
				out = append(out, Request{Action: "dynamodb:ConditionCheckItem", Resource: table(it.ConditionCheck.TableName)})
			case it.Put != nil:
				out = append(out, Request{Action: "dynamodb:PutItem", Resource: table(it.Put.TableName)})
			case it.Update != nil:
				out = append(out, Request{Action: "dynamodb:UpdateItem", Resource: table(it.Update.TableName)})
			case it.Delete != nil:
				out = append(out, Request{Action: "dynamodb:DeleteItem", Resource: table(it.Delete.TableName)})
			}
		}
		return out, nil

	// ---------------------------------------------------------------- EventBridge
	case *eventbridge.PutEventsInput:
		// One request per event bus the entries name (no name: the
		// account's default bus).
		var out []Request
		for _, e := range in.Entries {
			bus := deref(e.EventBusName)
			if bus == "" {
				bus = "default"
			}
			if !strings.HasPrefix(bus, "arn:") {
				bus = "arn:aws:events:" + region + ":" + account + ":event-bus/" + bus
			}
			if !slices.ContainsFunc(out, func(r Request) bool { return r.Resource == bus }) {
				out = append(out, Request{Action: action, Resource: bus})
			}
		}
		return out, nil

	// ---------------------------------------------------------------- SQS
	case *sqs.SendMessageInput:
		arn, err := queue(in.QueueUrl)
		return one(arn), err
	case *sqs.SendMessageBatchInput:
		arn, err := queue(in.QueueUrl)
		return []Request{{Action: "sqs:SendMessage", Resource: arn}}, err
	case *sqs.ReceiveMessageInput:
		arn, err := queue(in.QueueUrl)
		return one(arn), err
	case *sqs.DeleteMessageInput:
		arn, err := queue(in.QueueUrl)
		return one(arn), err
	case *sqs.DeleteMessageBatchInput:
		arn, err := queue(in.QueueUrl)
		return []Request{{Action: "sqs:DeleteMessage", Resource: arn}}, err
	case *sqs.ChangeMessageVisibilityInput:
		arn, err := queue(in.QueueUrl)
		return one(arn), err
	case *sqs.ChangeMessageVisibilityBatchInput:
		arn, err := queue(in.QueueUrl)
		return []Request{{Action: "sqs:ChangeMessageVisibility", Resource: arn}}, err
	case *sqs.GetQueueAttributesInput:
		arn, err := queue(in.QueueUrl)
		return one(arn), err
	case *sqs.GetQueueUrlInput:
		owner := account
		if o := deref(in.QueueOwnerAWSAccountId); o != "" {
			owner = o
		}
		return one("arn:aws:sqs:" + region + ":" + owner + ":" + deref(in.QueueName)), nil

	// ---------------------------------------------------------------- SES v2
	case *sesv2.SendEmailInput:
		return acct.sesSendEmail(in)

	// ---------------------------------------------------------------- SNS
	case *sns.PublishInput:
		switch {
		case deref(in.TopicArn) != "":
			return one(deref(in.TopicArn)), nil
		case deref(in.TargetArn) != "":
			return one(deref(in.TargetArn)), nil
		default:
			// A phone number has no ARN: only Resource "*" covers it.
			return one("*"), nil
		}
	case *sns.CheckIfPhoneNumberIsOptedOutInput:
		return one("*"), nil
	// Mobile push: the platform application, or the endpoint, by ARN.
	case *sns.CreatePlatformEndpointInput:
		return one(deref(in.PlatformApplicationArn)), nil
	case *sns.GetEndpointAttributesInput:
		return one(deref(in.EndpointArn)), nil
	case *sns.SetEndpointAttributesInput:
		return one(deref(in.EndpointArn)), nil
	case *sns.DeleteEndpointInput:
		return one(deref(in.EndpointArn)), nil

	// ---------------------------------------------------------------- End User Messaging SMS
	case *pinpointsmsvoicev2.SendTextMessageInput:
		return smsVoiceSendText(in, region, account)

	// ---------------------------------------------------------------- SSM, Secrets Manager
	case *ssm.GetParameterInput:
		return one(parameterARN(deref(in.Name), region, account)), nil
	case *ssm.GetParametersInput:
		var out []Request
		for _, n := range in.Names {
			out = append(out, Request{Action: action, Resource: parameterARN(n, region, account)})
		}
		return out, nil
	case *secretsmanager.GetSecretValueInput:
		id := deref(in.SecretId)
		if !strings.HasPrefix(id, "arn:") {
			// AWS authorizes against the secret's full ARN, whose suffix
			// only the service knows; scripts/iam/transform.py names the
			// template's secrets with the same fixed suffix.
			id = "arn:aws:secretsmanager:" + region + ":" + account + ":secret:" + id + "-Abc123"
		}
		return one(id), nil
	}
	return nil, fmt.Errorf("the local IAM check does not know how to authorize %s.%s (internal/devstack/iam/requests.go)", serviceID, operation)
}

func perTable[V any](action string, items map[string]V, table func(*string) string) []Request {
	names := make([]string, 0, len(items))
	for n := range items {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]Request, 0, len(names))
	for _, n := range names {
		out = append(out, Request{Action: action, Resource: table(&n)})
	}
	return out
}

// sesSendEmail authorizes SES v2 SendEmail as SES does: IAM action
// ses:SendEmail on the sending identity — FromEmailAddressIdentityArn when
// given, else the From address's identity — and, when one is named, the
// configuration set; in the sandbox also on each recipient's identity (SES
// checks that a sandbox send goes to verified identities, and authorizes
// the call against them). Every request carries the condition keys SES
// documents: ses:FromAddress, ses:FromDisplayName, ses:Recipients,
// ses:ApiVersion.
func (acct Account) sesSendEmail(in *sesv2.SendEmailInput) ([]Request, error) {
	ctx := map[string][]string{"ses:ApiVersion": {"2"}}
	arn := func(identity string) string {
		return "arn:aws:ses:" + acct.Region + ":" + acct.ID + ":identity/" + identity
	}
	identity := deref(in.FromEmailAddressIdentityArn)
	if from := deref(in.FromEmailAddress); from != "" {
		addr, err := mail.ParseAddress(from)
		if err != nil {
			return nil, fmt.Errorf("SendEmail FromEmailAddress: %w", err)
		}
		ctx["ses:FromAddress"] = []string{addr.Address}
		if addr.Name != "" {
			ctx["ses:FromDisplayName"] = []string{addr.Name}
		}
		if identity == "" {
			identity = arn(acct.SES.identity(addr.Address))
		}
	}
	if identity == "" {
		return nil, fmt.Errorf("SendEmail: no FromEmailAddress or FromEmailAddressIdentityArn")
	}
	var recipients []string
	if d := in.Destination; d != nil {
		recipients = slices.Concat(d.ToAddresses, d.CcAddresses, d.BccAddresses)
		ctx["ses:Recipients"] = recipients
	}
	out := []Request{{Action: "ses:SendEmail", Resource: identity, Context: ctx}}
	if acct.SES.Sandbox {
		for _, r := range recipients {
			addr, err := mail.ParseAddress(r)
			if err != nil {
				return nil, fmt.Errorf("SendEmail recipient: %w", err)
			}
			res := arn(acct.SES.identity(addr.Address))
			if !slices.ContainsFunc(out, func(q Request) bool { return q.Resource == res }) {
				out = append(out, Request{Action: "ses:SendEmail", Resource: res, Context: ctx})
			}
		}
	}
	if cs := deref(in.ConfigurationSetName); cs != "" {
		out = append(out, Request{Action: "ses:SendEmail", Resource: "arn:aws:ses:" + acct.Region + ":" + acct.ID + ":configuration-set/" + cs, Context: ctx})
	}
	return out, nil
}

// smsVoiceSendText authorizes End User Messaging SMS's SendTextMessage as
// the Service Authorization Reference lists it: action
// sms-voice:SendTextMessage on the origination identity (phone number,
// pool or sender ID) and, when one is named, on the configuration set.
// An identity given by id, number or sender id resolves to an ARN only in
// the service, so the local check wants ARNs, as Herald's parameter does.
func smsVoiceSendText(in *pinpointsmsvoicev2.SendTextMessageInput, region, account string) ([]Request, error) {
	const action = "sms-voice:SendTextMessage"
	identity := deref(in.OriginationIdentity)
	if !strings.HasPrefix(identity, "arn:") {
		return nil, fmt.Errorf("SendTextMessage OriginationIdentity %q: the local IAM check authorizes an ARN only (the service resolves ids and numbers)", identity)
	}
	out := []Request{{Action: action, Resource: identity}}
	if cs := deref(in.ConfigurationSetName); cs != "" {
		if !strings.HasPrefix(cs, "arn:") {
			cs = "arn:aws:sms-voice:" + region + ":" + account + ":configuration-set/" + cs
		}
		out = append(out, Request{Action: action, Resource: cs})
	}
	return out, nil
}

// identity is the identity SES resolves an address to: the address itself
// when it is a verified identity, else its domain or the closest verified
// parent domain (a verified domain covers its subdomains); with none
// verified, the address's domain (SES then refuses the send as unverified,
// which is no authorization matter).
func (a SESAccount) identity(address string) string {
	verified := func(id string) bool {
		return slices.ContainsFunc(a.Verified, func(v string) bool { return strings.EqualFold(v, id) })
	}
	if verified(address) {
		return address
	}
	_, domain, _ := strings.Cut(address, "@")
	for d := domain; d != ""; {
		if verified(d) {
			return d
		}
		_, parent, ok := strings.Cut(d, ".")
		if !ok || !strings.Contains(parent, ".") {
			break
		}
		d = parent
	}
	return domain
}

// queueARN turns a queue URL (https://sqs.<region>.amazonaws.com/<account>/<name>,
// or an emulator's http://127.0.0.1:port/<account>/<name>) into its ARN.
func queueARN(raw, region string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Path == "" {
		return "", fmt.Errorf("queue URL %q: want …/<account>/<name>", raw)
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) < 2 {
		return "", fmt.Errorf("queue URL %q: want …/<account>/<name>", raw)
	}
	acct, name := parts[len(parts)-2], parts[len(parts)-1]
	return "arn:aws:sqs:" + region + ":" + acct + ":" + name, nil
}

func parameterARN(name, region, account string) string {
	if strings.HasPrefix(name, "arn:") {
		return name
	}
	if !strings.HasPrefix(name, "/") {
		name = "/" + name
	}
	return "arn:aws:ssm:" + region + ":" + account + ":parameter" + name
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
