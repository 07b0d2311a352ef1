package iam

import (
	"strings"
	"testing"
)

const sample = `Resources:
  RelayFunction:
    Type: AWS::Serverless::Function
    Properties:
      Policies:
        - Statement:
            - Effect: Allow
              Action: [dynamodb:GetItem, dynamodb:BatchGetItem]
              Resource: !GetAtt Table.Arn
            - Effect: Allow
              Action: [sqs:SendMessage]
              Resource:
                - !GetAtt Q.Arn
            - Effect: Allow
              Action: [sns:Publish]
              Resource: "*"
  EmailFunction:
    Type: AWS::Serverless::Function
    Properties:
      Policies:
        - Statement:
            - Effect: Allow
              Action: [sqs:SendMessage]
              Resource: "*"
            - !If
              - HasFailover
              - Effect: Allow
                Action: [ses:SendEmail]
                Resource: "*"
              - !Ref AWS::NoValue
`

func TestRemoveAction(t *testing.T) {
	tests := []struct {
		function, action string
		wantGone         string // text that must disappear
		wantKept         []string
		wantErr          bool
	}{
		{"RelayFunction", "dynamodb:BatchGetItem", "dynamodb:BatchGetItem", []string{"Action: [dynamodb:GetItem]", "Resource: !GetAtt Table.Arn", "!GetAtt Q.Arn"}, false},
		{"RelayFunction", "sqs:SendMessage", "!GetAtt Q.Arn", []string{"Action: [dynamodb:GetItem, dynamodb:BatchGetItem]", "Action: [sns:Publish]", "EmailFunction:\n    Type: AWS::Serverless::Function\n    Properties:\n      Policies:\n        - Statement:\n            - Effect: Allow\n              Action: [sqs:SendMessage]"}, false},
		{"RelayFunction", "ses:SendEmail", "", nil, true},
		// A statement that is a branch of !If: the !If keeps three arguments.
		{"EmailFunction", "ses:SendEmail", "ses:SendEmail", []string{"- !If\n              - HasFailover\n              - !Ref AWS::NoValue\n              - !Ref AWS::NoValue\n"}, false},
		{"NoSuchFunction", "sqs:SendMessage", "", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.function+" "+tt.action, func(t *testing.T) {
			out, err := RemoveAction([]byte(sample), tt.function, tt.action)
			if tt.wantErr {
				if err == nil {
					t.Fatal("want an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := string(out)
			if strings.Contains(got, tt.wantGone) {
				t.Errorf("%q still in\n%s", tt.wantGone, got)
			}
			for _, k := range tt.wantKept {
				if !strings.Contains(got, k) {
					t.Errorf("%q lost from\n%s", k, got)
				}
			}
		})
	}
}
