package eventpattern_test

import (
	"testing"

	"github.com/heraldhq/herald/internal/devstack/eventpattern"
)

const event = `{
  "version": "0", "id": "6a7e8feb", "detail-type": "Delivery State Change", "source": "herald",
  "account": "111122223333", "time": "2026-01-02T03:04:05Z", "region": "us-east-1", "resources": ["arn:aws:ec2:1", "arn:aws:ec2:2"],
  "detail": {"caller": "billing", "status": "bounced", "channel": "email", "attempts": 3, "ratio": 0.5,
             "campaignId": null, "empty": "", "sourceIp": "10.0.0.17", "tags": ["a", "b"],
             "nested": {"deep": "Value"}, "objs": [{"k": "x"}, {"k": "y"}]}
}`

func TestMatch(t *testing.T) {
	cases := []struct {
		name, pattern string
		want          bool
	}{
		{"issue's rule", `{"source":["herald"],"detail-type":["Delivery State Change"],"detail":{"caller":["billing"],"status":["failed","bounced"]}}`, true},
		{"other caller", `{"detail":{"caller":["shop"]}}`, false},
		{"exact is case-sensitive", `{"detail":{"caller":["Billing"]}}`, false},
		{"prefix", `{"detail":{"caller":[{"prefix":"bil"}]}}`, true},
		{"prefix no", `{"detail":{"caller":[{"prefix":"shop"}]}}`, false},
		{"prefix ignore case", `{"detail":{"caller":[{"prefix":{"equals-ignore-case":"BIL"}}]}}`, true},
		{"suffix", `{"detail":{"status":[{"suffix":"ced"}]}}`, true},
		{"suffix ignore case", `{"detail":{"status":[{"suffix":{"equals-ignore-case":"CED"}}]}}`, true},
		{"equals-ignore-case", `{"detail":{"caller":[{"equals-ignore-case":"BILLING"}]}}`, true},
		{"anything-but value", `{"detail":{"status":[{"anything-but":"sent"}]}}`, true},
		{"anything-but list hit", `{"detail":{"status":[{"anything-but":["sent","bounced"]}]}}`, false},
		{"anything-but number", `{"detail":{"attempts":[{"anything-but":[3]}]}}`, false},
		{"anything-but missing field", `{"detail":{"missing":[{"anything-but":"x"}]}}`, false},
		{"anything-but prefix", `{"detail":{"caller":[{"anything-but":{"prefix":"bi"}}]}}`, false},
		{"anything-but suffix", `{"detail":{"caller":[{"anything-but":{"suffix":"zz"}}]}}`, true},
		{"anything-but ignore case", `{"detail":{"caller":[{"anything-but":{"equals-ignore-case":["BILLING"]}}]}}`, false},
		{"anything-but wildcard", `{"detail":{"caller":[{"anything-but":{"wildcard":"b*g"}}]}}`, false},
		{"numeric range", `{"detail":{"attempts":[{"numeric":[">",0,"<=",5]}]}}`, true},
		{"numeric out", `{"detail":{"attempts":[{"numeric":[">",3]}]}}`, false},
		{"numeric equal float", `{"detail":{"ratio":[{"numeric":["=",0.5]}]}}`, true},
		{"numeric on string", `{"detail":{"caller":[{"numeric":[">",0]}]}}`, false},
		{"number exact compares numerically", `{"detail":{"attempts":[3.0]}}`, true},
		{"exists true", `{"detail":{"status":[{"exists":true}]}}`, true},
		{"exists false on present", `{"detail":{"status":[{"exists":false}]}}`, false},
		{"exists false on missing", `{"detail":{"resourceId":[{"exists":false}]}}`, true},
		{"exists true on missing", `{"detail":{"resourceId":[{"exists":true}]}}`, false},
		{"exists on an object is no leaf", `{"detail":{"nested":[{"exists":true}]}}`, false},
		{"exists false under a missing object", `{"missing":{"x":[{"exists":false}]}}`, true},
		{"null", `{"detail":{"campaignId":[null]}}`, true},
		{"null is not missing", `{"detail":{"resourceId":[null]}}`, false},
		{"empty string", `{"detail":{"empty":[""]}}`, true},
		{"wildcard", `{"detail":{"caller":[{"wildcard":"b*l*g"}]}}`, true},
		{"wildcard no", `{"detail":{"caller":[{"wildcard":"b*x"}]}}`, false},
		{"wildcard escaped star", `{"detail":{"caller":[{"wildcard":"bill\\*"}]}}`, false},
		{"cidr", `{"detail":{"sourceIp":[{"cidr":"10.0.0.0/24"}]}}`, true},
		{"cidr no", `{"detail":{"sourceIp":[{"cidr":"10.0.1.0/24"}]}}`, false},
		{"event array any element", `{"detail":{"tags":["b"]}}`, true},
		{"event array none", `{"detail":{"tags":["c"]}}`, false},
		{"resources array", `{"resources":["arn:aws:ec2:2"]}`, true},
		{"array of objects", `{"detail":{"objs":{"k":["y"]}}}`, true},
		{"nested", `{"detail":{"nested":{"deep":["Value"]}}}`, true},
		{"$or", `{"detail":{"$or":[{"caller":["shop"]},{"status":["bounced"]}]}}`, true},
		{"$or none", `{"detail":{"$or":[{"caller":["shop"]},{"status":["sent"]}]}}`, false},
		{"all fields must match", `{"source":["herald"],"detail":{"caller":["shop"]}}`, false},
	}
	for _, c := range cases {
		p, err := eventpattern.Compile(c.pattern)
		if err != nil {
			t.Errorf("%s: compile: %v", c.name, err)
			continue
		}
		got, err := p.Match([]byte(event))
		if err != nil || got != c.want {
			t.Errorf("%s: %s = %v (%v), want %v", c.name, c.pattern, got, err, c.want)
		}
	}
}

func TestCompileRefuses(t *testing.T) {
	for _, p := range []string{
		`[]`, `{}`, `{"source":"herald"}`, `{"source":[]}`, `{"source":[{"prefix":1}]}`,
		`{"source":[{"unknown":"x"}]}`, `{"a":[{"numeric":[">"]}]}`, `{"a":[{"numeric":["~",1]}]}`,
		`{"a":[{"exists":"yes"}]}`, `{"a":[{"cidr":"nope"}]}`, `{"$or":[{"a":["x"]}]}`, `{"a":[{"prefix":"x","suffix":"y"}]}`,
	} {
		if _, err := eventpattern.Compile(p); err == nil {
			t.Errorf("Compile(%s) accepted", p)
		}
	}
}
