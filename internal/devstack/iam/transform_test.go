package iam

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestTransformCoversTheTemplate: the transform yields a role for every
// function of template.yaml and what Lambda needs of it for every event
// source mapping (both stream readers of the relay, every queue mapping) and
// every dead-letter queue, read from the template so that a function or
// mapping added later is checked by `make aws-check` too.
func TestTransformCoversTheTemplate(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	resources := func(typ string) []string {
		var ids []string
		for _, m := range regexp.MustCompile(`(?m)^  (\w+):\n(?:    .*\n)*?    Type: `+regexp.QuoteMeta(typ)+`\s*$`).FindAllStringSubmatch(string(raw), -1) {
			ids = append(ids, m[1])
		}
		return ids
	}
	functions, mappings := resources("AWS::Serverless::Function"), resources("AWS::Lambda::EventSourceMapping")
	if len(functions) < 8 || len(mappings) < 13 {
		t.Fatalf("found functions %v and mappings %v in template.yaml: is the pattern broken?", functions, mappings)
	}
	p := transformed(t)
	for _, fn := range functions {
		if _, ok := p.Role(fn); !ok {
			t.Errorf("%s: no role in the transform", fn)
		}
	}
	nextResource := regexp.MustCompile(`\n  \w+:\n`)
	needs := map[string][]string{} // mapping id → actions
	for _, n := range p.ServiceNeeds {
		id, _, _ := strings.Cut(n.Why, " ")
		needs[id] = append(needs[id], n.Action)
	}
	for _, m := range mappings {
		want := []string{"sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"}
		_, block, _ := strings.Cut(string(raw), "\n  "+m+":\n")
		if loc := nextResource.FindStringIndex(block); loc != nil {
			block = block[:loc[0]]
		}
		if strings.Contains(block, "EventSourceArn: !GetAtt Table.StreamArn") {
			want = []string{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"}
		}
		got := slices.Clone(needs[m])
		got = slices.DeleteFunc(got, func(a string) bool { return a == "sqs:SendMessage" }) // its on-failure destination
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: service needs %v, want %v", m, needs[m], want)
		}
	}
	if !slices.ContainsFunc(p.ServiceNeeds, func(n ServiceNeed) bool {
		return n.Function == "FeedbackFunction" && n.Action == "sqs:SendMessage" && strings.HasPrefix(n.Why, "DeadLetterConfig")
	}) {
		t.Error("FeedbackFunction: no service need for its dead-letter queue")
	}
}

// TestActiveTracingMayWriteTraces: with Tracing=Active (the parameter's
// opt-in) every function's role may send its segments to X-Ray: the SAM
// transform attaches AWSXrayWriteOnlyAccess whatever the parameter's value, so
// switching tracing on needs no IAM change.
func TestActiveTracingMayWriteTraces(t *testing.T) {
	root := repoRoot(t)
	p, err := Transform(context.Background(), TransformOptions{Root: root,
		Stack: Stack{Name: "herald", Prefix: "herald-", Region: testRegion, Account: testAccount}, Params: map[string]string{"Tracing": "Active"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.FunctionNames()) < 8 {
		t.Fatalf("only %v", p.FunctionNames())
	}
	for _, fn := range p.FunctionNames() {
		r, _ := p.Role(fn)
		for _, action := range []string{"xray:PutTraceSegments", "xray:PutTelemetryRecords"} {
			if d, _ := r.Evaluate(Request{Action: action, Resource: "*"}); d != Allowed {
				t.Errorf("%s: %s not allowed with Tracing=Active", fn, action)
			}
		}
	}
}
