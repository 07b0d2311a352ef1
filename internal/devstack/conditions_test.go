package devstack

import (
	"strings"
	"testing"
)

// TestConditionsResolvedAsCloudFormationDoes: Fn::If takes the branch its
// condition gives with the parameters' values (Fn::Equals comparing a Number
// parameter with a string, as CloudFormation compares them), AWS::NoValue
// removes the property or list item, and a resource whose condition is false
// is not created.
func TestConditionsResolvedAsCloudFormationDoes(t *testing.T) {
	const tmpl = `
Parameters:
  Reserve:
    Type: Number
    Default: -1
    MinValue: -1
  Topic:
    Type: String
    Default: ""
Conditions:
  Reserves: !Not [!Equals [!Ref Reserve, "-1"]]
  NoTopic: !Equals [!Ref Topic, ""]
  ReservesWithTopic: !And [!Condition Reserves, !Not [!Condition NoTopic]]
Resources:
  Queue:
    Type: AWS::SQS::Queue
    Properties:
      DelaySeconds: !If [Reserves, !Ref Reserve, !Ref AWS::NoValue]
      Tags:
        - !If [ReservesWithTopic, {Key: topic, Value: !Ref Topic}, !Ref AWS::NoValue]
        - {Key: always, Value: "yes"}
  Extra:
    Type: AWS::SQS::Queue
    Condition: NoTopic
`
	queue := func(t *testing.T, overrides map[string]string) (map[string]any, bool) {
		t.Helper()
		tm, err := ParseTemplate([]byte(tmpl), overrides)
		if err != nil {
			t.Fatal(err)
		}
		resources := tm.Document["Resources"].(map[string]any)
		if !strings.Contains(string(tm.Resolved), `"always"`) {
			t.Errorf("resolved template lost the unconditional tag: %s", tm.Resolved)
		}
		_, extra := resources["Extra"]
		return resources["Queue"].(map[string]any)["Properties"].(map[string]any), extra
	}

	props, extra := queue(t, nil)
	if v, ok := props["DelaySeconds"]; ok {
		t.Errorf("default (-1): DelaySeconds = %v, want the property removed (AWS::NoValue)", v)
	}
	if tags := props["Tags"].([]any); len(tags) != 1 {
		t.Errorf("default: tags %v, want only the unconditional one", tags)
	}
	if !extra {
		t.Error("Topic empty: resource Extra (Condition NoTopic) missing")
	}

	props, extra = queue(t, map[string]string{"Reserve": "40", "Topic": "t1"})
	if props["DelaySeconds"] != 40.0 {
		t.Errorf("Reserve=40: DelaySeconds = %v, want 40", props["DelaySeconds"])
	}
	if tags := props["Tags"].([]any); len(tags) != 2 || !strings.Contains(jsonString(tags[0]), `"t1"`) {
		t.Errorf("Reserve=40 Topic=t1: tags %v, want the topic's and the unconditional one", tags)
	}
	if extra {
		t.Error("Topic set: resource Extra (Condition NoTopic false) created")
	}
}

// TestTemplateConditionalGrants: the committed template's per-platform
// grants (Fn::If on HasApnsApplication …) appear only for a configured
// platform, with no null statement left where one is not.
func TestTemplateConditionalGrants(t *testing.T) {
	const apns = "arn:aws:sns:us-east-1:000000000000:app/APNS/herald-ios"
	off, err := LoadTemplate("../../template.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	on, err := LoadTemplate("../../template.yaml", map[string]string{"ApnsApplicationArn": apns})
	if err != nil {
		t.Fatal(err)
	}
	policies := func(tm *Template) string {
		fn := tm.Document["Resources"].(map[string]any)["ApiFunction"].(map[string]any)
		return jsonString(fn["Properties"].(map[string]any)["Policies"])
	}
	if p := policies(off); strings.Contains(p, "sns:CreatePlatformEndpoint") || strings.Contains(p, "null") {
		t.Errorf("no platform configured: ApiFunction policies %s, want no endpoint grant and no null statement", p)
	}
	if p := policies(on); !strings.Contains(p, `"sns:CreatePlatformEndpoint"],"Effect":"Allow","Resource":"`+apns+`"`) {
		t.Errorf("ApnsApplicationArn set: ApiFunction policies %s, want sns:CreatePlatformEndpoint on %s", p, apns)
	}
}
