package devstack

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"testing"
)

// TestEventBusNameFitsWithAnyStackName: the bus is <stack name>-<EventBusName>;
// a stack name has at most 128 characters (CloudFormation, CreateStack) and
// a bus name at most 256 (EventBridge, CreateEventBus), so the parameter's
// AllowedPattern keeps the suffix to 127, and it allows only the
// characters a bus name may have.
func TestEventBusNameFitsWithAnyStackName(t *testing.T) {
	_, doc := unresolvedTemplate(t)
	if name, _ := json.Marshal(doc.Resources["EventBus"].Properties["Name"]); string(name) != `{"Fn::Join":["-",[{"Ref":"AWS::StackName"},{"Ref":"EventBusName"}]]}` {
		t.Fatalf("EventBus Name %s, want <stack name>-<EventBusName>", name)
	}
	p := doc.Parameters["EventBusName"]
	pattern := fmt.Sprint(p["AllowedPattern"])
	m := regexp.MustCompile(`^\^\[([^\]]+)\]\{1,(\d+)\}\$$`).FindStringSubmatch(pattern)
	if m == nil {
		t.Fatalf("EventBusName AllowedPattern %q: want ^[chars]{1,N}$", pattern)
	}
	const maxStackName, maxBusName = 128, 256
	if n, _ := strconv.Atoi(m[2]); maxStackName+1+n > maxBusName {
		t.Errorf("EventBusName allows %d characters: with a %d-character stack name the bus name has %d, over %d", n, maxStackName, maxStackName+1+n, maxBusName)
	}
	if suffix := regexp.MustCompile(`^[` + m[1] + `]+$`); !suffix.MatchString(`/.-_azAZ09`) || suffix.MatchString(" ") || suffix.MatchString(":") {
		t.Errorf("EventBusName allows %q: want exactly a bus name's [/.\\-_A-Za-z0-9]", m[1])
	}
	if !regexp.MustCompile(pattern).MatchString(fmt.Sprint(p["Default"])) {
		t.Errorf("EventBusName's default %v does not match its own pattern", p["Default"])
	}
}
