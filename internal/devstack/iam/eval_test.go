package iam

import (
	"encoding/json"
	"testing"
)

func statements(t *testing.T, doc string) []PolicyStatement {
	t.Helper()
	var d Document
	if err := json.Unmarshal([]byte(doc), &d); err != nil {
		t.Fatalf("policy %s: %v", doc, err)
	}
	var out []PolicyStatement
	for _, st := range d.Statement {
		if err := st.validate(); err != nil {
			t.Fatalf("policy %s: %v", doc, err)
		}
		out = append(out, PolicyStatement{Policy: "p", Statement: st})
	}
	return out
}

const (
	table = "arn:aws:dynamodb:us-east-1:111122223333:table/herald-Table"
	topic = "arn:aws:sns:us-east-1:111122223333:alerts"
)

// TestEvaluate follows AWS's policy evaluation logic for identity-based
// policies in one account.
func TestEvaluate(t *testing.T) {
	tests := []struct {
		name   string
		policy string
		req    Request
		want   Decision
	}{
		{"default deny: no statement", `{"Statement":[]}`,
			Request{Action: "dynamodb:GetItem", Resource: table}, ImplicitDeny},
		{"allow by exact action and resource", `{"Statement":{"Effect":"Allow","Action":"dynamodb:GetItem","Resource":"` + table + `"}}`,
			Request{Action: "dynamodb:GetItem", Resource: table}, Allowed},
		{"other action is denied by default", `{"Statement":{"Effect":"Allow","Action":"dynamodb:GetItem","Resource":"` + table + `"}}`,
			Request{Action: "dynamodb:BatchGetItem", Resource: table}, ImplicitDeny},
		{"actions are case-insensitive", `{"Statement":{"Effect":"Allow","Action":"DynamoDB:getitem","Resource":"*"}}`,
			Request{Action: "dynamodb:GetItem", Resource: table}, Allowed},
		{"action wildcard *", `{"Statement":{"Effect":"Allow","Action":"dynamodb:Get*","Resource":"*"}}`,
			Request{Action: "dynamodb:GetItem", Resource: table}, Allowed},
		{"action wildcard * does not cross services", `{"Statement":{"Effect":"Allow","Action":"sqs:*","Resource":"*"}}`,
			Request{Action: "dynamodb:GetItem", Resource: table}, ImplicitDeny},
		{"action wildcard ? is one character", `{"Statement":{"Effect":"Allow","Action":"dynamodb:?etItem","Resource":"*"}}`,
			Request{Action: "dynamodb:GetItem", Resource: table}, Allowed},
		{"action wildcard ? is exactly one character", `{"Statement":{"Effect":"Allow","Action":"dynamodb:?GetItem","Resource":"*"}}`,
			Request{Action: "dynamodb:GetItem", Resource: table}, ImplicitDeny},
		{"table grant does not cover an index", `{"Statement":{"Effect":"Allow","Action":"dynamodb:Query","Resource":"` + table + `"}}`,
			Request{Action: "dynamodb:Query", Resource: table + "/index/gsi1"}, ImplicitDeny},
		{"index wildcard covers an index", `{"Statement":{"Effect":"Allow","Action":"dynamodb:Query","Resource":"` + table + `/index/*"}}`,
			Request{Action: "dynamodb:Query", Resource: table + "/index/gsi1"}, Allowed},
		{"index wildcard does not cover the table", `{"Statement":{"Effect":"Allow","Action":"dynamodb:Query","Resource":"` + table + `/index/*"}}`,
			Request{Action: "dynamodb:Query", Resource: table}, ImplicitDeny},
		{"resources are case-sensitive", `{"Statement":{"Effect":"Allow","Action":"dynamodb:GetItem","Resource":"arn:aws:dynamodb:us-east-1:111122223333:table/herald-table"}}`,
			Request{Action: "dynamodb:GetItem", Resource: table}, ImplicitDeny},
		{"resource wildcard per ARN component", `{"Statement":{"Effect":"Allow","Action":"dynamodb:GetItem","Resource":"arn:aws:dynamodb:*:*:table/herald-*"}}`,
			Request{Action: "dynamodb:GetItem", Resource: table}, Allowed},
		{"region wildcard stays in its component", `{"Statement":{"Effect":"Allow","Action":"sqs:SendMessage","Resource":"arn:aws:sqs:us-*:q:*"}}`,
			Request{Action: "sqs:SendMessage", Resource: "arn:aws:sqs:us-east-1:111122223333:q"}, ImplicitDeny},
		{"region and account wildcards", `{"Statement":{"Effect":"Allow","Action":"sqs:SendMessage","Resource":"arn:aws:sqs:us-*:*:herald-*"}}`,
			Request{Action: "sqs:SendMessage", Resource: "arn:aws:sqs:us-east-1:111122223333:herald-q"}, Allowed},
		{"other account is not covered", `{"Statement":{"Effect":"Allow","Action":"dynamodb:GetItem","Resource":"arn:aws:dynamodb:us-east-1:444455556666:table/herald-Table"}}`,
			Request{Action: "dynamodb:GetItem", Resource: table}, ImplicitDeny},
		{"explicit deny wins over allow", `{"Statement":[
				{"Effect":"Allow","Action":"dynamodb:*","Resource":"*"},
				{"Effect":"Deny","Action":"dynamodb:DeleteItem","Resource":"` + table + `"}]}`,
			Request{Action: "dynamodb:DeleteItem", Resource: table}, ExplicitDeny},
		{"deny order does not matter", `{"Statement":[
				{"Effect":"Deny","Action":"dynamodb:DeleteItem","Resource":"*"},
				{"Effect":"Allow","Action":"dynamodb:DeleteItem","Resource":"*"}]}`,
			Request{Action: "dynamodb:DeleteItem", Resource: table}, ExplicitDeny},
		{"deny of another action leaves the allow", `{"Statement":[
				{"Effect":"Allow","Action":"dynamodb:*","Resource":"*"},
				{"Effect":"Deny","Action":"dynamodb:DeleteItem","Resource":"*"}]}`,
			Request{Action: "dynamodb:GetItem", Resource: table}, Allowed},
		{"NotAction allows everything else", `{"Statement":{"Effect":"Allow","NotAction":"dynamodb:DeleteItem","Resource":"*"}}`,
			Request{Action: "dynamodb:GetItem", Resource: table}, Allowed},
		{"NotAction does not allow the named action", `{"Statement":{"Effect":"Allow","NotAction":"dynamodb:Delete*","Resource":"*"}}`,
			Request{Action: "dynamodb:DeleteItem", Resource: table}, ImplicitDeny},
		{"NotResource allows other resources", `{"Statement":{"Effect":"Allow","Action":"sns:Publish","NotResource":"arn:aws:sns:*:*:*"}}`,
			Request{Action: "sns:Publish", Resource: "*"}, Allowed},
		{"NotResource excludes matching resources", `{"Statement":{"Effect":"Allow","Action":"sns:Publish","NotResource":"arn:aws:sns:*:*:*"}}`,
			Request{Action: "sns:Publish", Resource: topic}, ImplicitDeny},
		// The SMS function's shape: publish to phone numbers (no ARN), never to topics.
		{"phone publish: Resource * allows it", `{"Statement":[
				{"Effect":"Allow","Action":"sns:Publish","Resource":"*"},
				{"Effect":"Deny","Action":"sns:Publish","Resource":"arn:aws:sns:*:*:*"}]}`,
			Request{Action: "sns:Publish", Resource: "*"}, Allowed},
		{"phone publish policy: a topic is explicitly denied", `{"Statement":[
				{"Effect":"Allow","Action":"sns:Publish","Resource":"*"},
				{"Effect":"Deny","Action":"sns:Publish","Resource":"arn:aws:sns:*:*:*"}]}`,
			Request{Action: "sns:Publish", Resource: topic}, ExplicitDeny},
		{"no-resource action needs Resource *", `{"Statement":{"Effect":"Allow","Action":"sns:CheckIfPhoneNumberIsOptedOut","Resource":"arn:aws:sns:*:*:*"}}`,
			Request{Action: "sns:CheckIfPhoneNumberIsOptedOut", Resource: "*"}, ImplicitDeny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := Evaluate(statements(t, tt.policy), tt.req)
			if got != tt.want {
				t.Errorf("Evaluate(%s, %+v) = %s, want %s", tt.policy, tt.req, got, tt.want)
			}
		})
	}
}

// TestConditions covers the operators and keys the template uses or may use
// (ses:FromAddress, ses:Recipients) under AWS's rules for missing keys,
// IfExists and multi-valued keys.
func TestConditions(t *testing.T) {
	identity := "arn:aws:ses:us-east-1:111122223333:identity/example.com"
	ses := func(cond string) string {
		return `{"Statement":{"Effect":"Allow","Action":"ses:SendEmail","Resource":"*","Condition":` + cond + `}}`
	}
	from := func(addr string, to ...string) Request {
		ctx := map[string][]string{"ses:FromAddress": {addr}}
		if len(to) > 0 {
			ctx["ses:Recipients"] = to
		}
		return Request{Action: "ses:SendEmail", Resource: identity, Context: ctx}
	}
	noKeys := Request{Action: "ses:SendEmail", Resource: identity}
	tests := []struct {
		name   string
		policy string
		req    Request
		want   Decision
	}{
		{"StringEquals matches", ses(`{"StringEquals":{"ses:FromAddress":"notifications@example.com"}}`), from("notifications@example.com"), Allowed},
		{"StringEquals is case-sensitive", ses(`{"StringEquals":{"ses:FromAddress":"Notifications@example.com"}}`), from("notifications@example.com"), ImplicitDeny},
		{"condition key names are case-insensitive", ses(`{"StringEquals":{"SES:fromaddress":"notifications@example.com"}}`), from("notifications@example.com"), Allowed},
		{"StringEqualsIgnoreCase", ses(`{"StringEqualsIgnoreCase":{"ses:FromAddress":"Notifications@Example.com"}}`), from("notifications@example.com"), Allowed},
		{"StringLike wildcard", ses(`{"StringLike":{"ses:FromAddress":"*@example.com"}}`), from("notifications@example.com"), Allowed},
		{"StringLike other domain", ses(`{"StringLike":{"ses:FromAddress":"*@example.com"}}`), from("x@evil.example"), ImplicitDeny},
		{"any of the policy's values", ses(`{"StringEquals":{"ses:FromAddress":["a@example.com","notifications@example.com"]}}`), from("notifications@example.com"), Allowed},
		{"missing key: condition false", ses(`{"StringLike":{"ses:FromAddress":"*"}}`), noKeys, ImplicitDeny},
		{"missing key with IfExists: true", ses(`{"StringLikeIfExists":{"ses:FromAddress":"*@example.com"}}`), noKeys, Allowed},
		{"IfExists still checks a present key", ses(`{"StringLikeIfExists":{"ses:FromAddress":"*@example.com"}}`), from("x@evil.example"), ImplicitDeny},
		{"missing key with a negated operator: true", ses(`{"StringNotEquals":{"ses:FromAddress":"x@evil.example"}}`), noKeys, Allowed},
		{"StringNotLike", ses(`{"StringNotLike":{"ses:FromAddress":"*@evil.example"}}`), from("x@evil.example"), ImplicitDeny},
		{"Null true: key absent", ses(`{"Null":{"ses:FromAddress":"true"}}`), noKeys, Allowed},
		{"Null false: key present", ses(`{"Null":{"ses:FromAddress":"false"}}`), from("a@example.com"), Allowed},
		{"Null false: key absent", ses(`{"Null":{"ses:FromAddress":"false"}}`), noKeys, ImplicitDeny},
		{"ForAllValues: every recipient matches", ses(`{"ForAllValues:StringLike":{"ses:Recipients":"*@example.com"}}`), from("n@example.com", "a@example.com", "b@example.com"), Allowed},
		{"ForAllValues: one recipient outside", ses(`{"ForAllValues:StringLike":{"ses:Recipients":"*@example.com"}}`), from("n@example.com", "a@example.com", "b@other.example"), ImplicitDeny},
		{"ForAllValues: no values is true", ses(`{"ForAllValues:StringLike":{"ses:Recipients":"*@example.com"}}`), from("n@example.com"), Allowed},
		{"ForAnyValue: one recipient matches", ses(`{"ForAnyValue:StringEquals":{"ses:Recipients":"b@other.example"}}`), from("n@example.com", "a@example.com", "b@other.example"), Allowed},
		{"ForAnyValue: no values is false", ses(`{"ForAnyValue:StringEquals":{"ses:Recipients":"b@other.example"}}`), from("n@example.com"), ImplicitDeny},
		{"all operators must hold", ses(`{"StringLike":{"ses:FromAddress":"*@example.com"},"ForAllValues:StringLike":{"ses:Recipients":"*@example.com"}}`), from("n@example.com", "x@other.example"), ImplicitDeny},
		{"ArnLike", `{"Statement":{"Effect":"Allow","Action":"sqs:SendMessage","Resource":"*","Condition":{"ArnLike":{"aws:SourceArn":"arn:aws:sns:*:111122223333:*"}}}}`,
			Request{Action: "sqs:SendMessage", Resource: "arn:aws:sqs:us-east-1:111122223333:q", Context: map[string][]string{"aws:SourceArn": {topic}}}, Allowed},
		{"ArnLike other account", `{"Statement":{"Effect":"Allow","Action":"sqs:SendMessage","Resource":"*","Condition":{"ArnLike":{"aws:SourceArn":"arn:aws:sns:*:444455556666:*"}}}}`,
			Request{Action: "sqs:SendMessage", Resource: "arn:aws:sqs:us-east-1:111122223333:q", Context: map[string][]string{"aws:SourceArn": {topic}}}, ImplicitDeny},
		{"Bool", `{"Statement":{"Effect":"Deny","Action":"*","Resource":"*","Condition":{"Bool":{"aws:SecureTransport":false}}}}`,
			Request{Action: "sqs:SendMessage", Resource: "*", Context: map[string][]string{"aws:SecureTransport": {"false"}}}, ExplicitDeny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := Evaluate(statements(t, tt.policy), tt.req)
			if got != tt.want {
				t.Errorf("Evaluate(%s, %+v) = %s, want %s", tt.policy, tt.req, got, tt.want)
			}
		})
	}
}

func TestValidateRejects(t *testing.T) {
	for _, doc := range []string{
		`{"Effect":"allow","Action":"s3:*","Resource":"*"}`,
		`{"Effect":"Allow","Resource":"*"}`,
		`{"Effect":"Allow","Action":"s3:*","NotAction":"s3:Get*","Resource":"*"}`,
		`{"Effect":"Allow","Action":"s3:*"}`,
		`{"Effect":"Allow","Action":"sqs:*","Resource":"arn:aws:sqs:q"}`,
		`{"Effect":"Allow","Action":"s3:*","Resource":"*","Principal":"*"}`,
		`{"Effect":"Allow","Action":"s3:*","Resource":"*","Condition":{"DateGreaterThan":{"aws:CurrentTime":"2020-01-01T00:00:00Z"}}}`,
		`{"Effect":"Allow","Action":"s3:*","Resource":"*","Condition":{"ForSome:StringLike":{"k":"v"}}}`,
	} {
		var st Statement
		if err := json.Unmarshal([]byte(doc), &st); err != nil {
			t.Fatal(err)
		}
		if err := st.validate(); err == nil {
			t.Errorf("validate(%s) = nil, want an error", doc)
		}
	}
}
