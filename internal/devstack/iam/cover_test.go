package iam

import (
	"fmt"
	"slices"
	"testing"
)

func TestUncovered(t *testing.T) {
	call := func(fn, action, resource string) Call {
		return Call{Function: fn, Action: action, Resource: resource}
	}
	scan := call("CampaignFunction", "dynamodb:Scan", "arn:aws:dynamodb:r:1:table/t/index/gsi4")
	put := call("CampaignFunction", "dynamodb:PutItem", "arn:aws:dynamodb:r:1:table/t")
	retry := call("EmailFunction", "sqs:ChangeMessageVisibility", "arn:aws:sqs:r:1:herald-EmailLowQueue")
	records := []Record{
		{Source: "internal/e2e/campaigns", Calls: []Call{put}},
		{Source: "internal/e2e/campaignscale", Calls: []Call{put, scan, retry}},
		{Source: "internal/e2e/ops", Calls: []Call{scan}},
	}
	retries := []Justification{{Function: "EmailFunction", Action: "sqs:ChangeMessageVisibility", Resource: "arn:aws:sqs:*:*:herald-Email*Queue", Reason: "retry"}}
	tests := []struct {
		name      string
		subset    []string
		justified []Justification
		want      []string // "function action resource <- sources"
	}{
		{"every package", []string{"internal/e2e/campaigns", "internal/e2e/campaignscale", "internal/e2e/ops"}, nil, nil},
		{"a left-out package's calls made by a kept one", []string{"internal/e2e/campaigns", "internal/e2e/ops"}, retries, nil},
		{"a call only a left-out package makes", []string{"internal/e2e/campaigns", "internal/e2e/ops"}, nil,
			[]string{"EmailFunction sqs:ChangeMessageVisibility arn:aws:sqs:r:1:herald-EmailLowQueue <- [internal/e2e/campaignscale]"}},
		{"two left-out packages", []string{"internal/e2e/campaigns"}, retries,
			[]string{"CampaignFunction dynamodb:Scan arn:aws:dynamodb:r:1:table/t/index/gsi4 <- [internal/e2e/campaignscale internal/e2e/ops]"}},
		{"no package kept", nil, nil, []string{
			"CampaignFunction dynamodb:PutItem arn:aws:dynamodb:r:1:table/t <- [internal/e2e/campaigns internal/e2e/campaignscale]",
			"CampaignFunction dynamodb:Scan arn:aws:dynamodb:r:1:table/t/index/gsi4 <- [internal/e2e/campaignscale internal/e2e/ops]",
			"EmailFunction sqs:ChangeMessageVisibility arn:aws:sqs:r:1:herald-EmailLowQueue <- [internal/e2e/campaignscale]",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, f := range Uncovered(records, tt.subset, tt.justified) {
				got = append(got, fmt.Sprintf("%s %s %s <- %v", f.Function, f.Action, f.Resource, f.Sources))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Uncovered =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}
