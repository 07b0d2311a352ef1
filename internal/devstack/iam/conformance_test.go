package iam

import (
	"strings"
	"testing"
)

func TestConformance(t *testing.T) {
	p, err := ParsePolicies([]byte(`{"functions":{"RelayFunction":{"role":"RelayFunctionRole","roleArn":"arn:aws:iam::1:role/herald-RelayFunctionRole",
		"policies":[{"name":"RelayFunctionRolePolicy0","document":{"Statement":[
			{"Effect":"Allow","Action":["dynamodb:GetItem","dynamodb:Query"],"Resource":["arn:aws:dynamodb:r:1:table/t","arn:aws:dynamodb:r:1:table/t/index/*"]},
			{"Effect":"Allow","Action":"dynamodb:GetRecords","Resource":"arn:aws:dynamodb:r:1:table/t/stream/s"},
			{"Effect":"Allow","Action":"sqs:SendMessage","Resource":["arn:aws:sqs:r:1:high","arn:aws:sqs:r:1:low"]}]}}]}},
		"serviceNeeds":[{"function":"RelayFunction","action":"dynamodb:GetRecords","resource":"arn:aws:dynamodb:r:1:table/t/stream/s","why":"mapping"},
			{"function":"RelayFunction","action":"dynamodb:GetShardIterator","resource":"arn:aws:dynamodb:r:1:table/t/stream/s","why":"mapping"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	records := []Record{{Source: "e2e/a", Calls: []Call{
		{Function: "RelayFunction", Action: "dynamodb:Query", Resource: "arn:aws:dynamodb:r:1:table/t"},
		{Function: "RelayFunction", Action: "dynamodb:BatchGetItem", Resource: "arn:aws:dynamodb:r:1:table/t"},
		{Function: "RelayFunction", Action: "sqs:SendMessage", Resource: "arn:aws:sqs:r:1:high"},
	}}}
	justified := []Justification{{Function: "RelayFunction", Action: "sqs:Send*", Resource: "arn:aws:sqs:*:*:low", Reason: "low priority"}}
	r := Conformance(p, records, justified)
	if r.OK() {
		t.Error("OK() with a denied call and unexercised grants")
	}
	if len(r.Denied) != 1 || r.Denied[0].Action != "dynamodb:BatchGetItem" || r.Denied[0].Sources[0] != "e2e/a" {
		t.Errorf("Denied = %+v, want the BatchGetItem seen in e2e/a", r.Denied)
	}
	if len(r.NeedsDenied) != 1 || r.NeedsDenied[0].Action != "dynamodb:GetShardIterator" {
		t.Errorf("NeedsDenied = %+v, want GetShardIterator", r.NeedsDenied)
	}
	var unused []string
	for _, g := range r.Unexercised {
		unused = append(unused, g.Action+" "+g.Resource)
	}
	want := []string{
		"dynamodb:GetItem arn:aws:dynamodb:r:1:table/t",
		"dynamodb:GetItem arn:aws:dynamodb:r:1:table/t/index/*",
		"dynamodb:Query arn:aws:dynamodb:r:1:table/t/index/*",
	}
	if strings.Join(unused, "\n") != strings.Join(want, "\n") {
		t.Errorf("Unexercised =\n%s\nwant\n%s", strings.Join(unused, "\n"), strings.Join(want, "\n"))
	}
	if len(r.Kept) != 1 || r.Kept[0].Resource != "arn:aws:sqs:r:1:low" || r.Kept[0].Reason != "low priority" {
		t.Errorf("Kept = %+v, want the low queue with its reason", r.Kept)
	}
}

// A passing report is two lines unless verbose; a failing one is whole.
func TestWriteBrief(t *testing.T) {
	pass := &Report{Exercised: map[string]int{"ApiFunction": 3, "RelayFunction": 2}}
	pass.Kept = append(pass.Kept, struct {
		Grant
		Reason string
	}{Grant{Function: "ApiFunction", Action: "sqs:SendMessage", Resource: "arn:q"}, "the batch route's retry"})
	var b strings.Builder
	pass.WriteBrief(&b, false)
	if strings.Count(b.String(), "\n") != 2 || strings.Contains(b.String(), "the batch route's retry") || !strings.Contains(b.String(), "5 distinct") {
		t.Errorf("brief report:\n%s", b.String())
	}
	b.Reset()
	pass.WriteBrief(&b, true)
	if !strings.Contains(b.String(), "kept   ") || !strings.Contains(b.String(), "the batch route's retry") {
		t.Errorf("verbose report lacks the kept grants:\n%s", b.String())
	}
	fail := &Report{Exercised: map[string]int{"ApiFunction": 1}, Unexercised: []Grant{{Function: "ApiFunction", Action: "sqs:DeleteMessage", Resource: "arn:q"}}}
	b.Reset()
	fail.WriteBrief(&b, false)
	if !strings.Contains(b.String(), "UNUSED") {
		t.Errorf("failing report hides what to fix:\n%s", b.String())
	}
}
