package devstack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack/cfnyaml"
	"github.com/heraldhq/herald/internal/devstack/controlplane"
	"github.com/heraldhq/herald/internal/webpush"
)

// The checks below hold the template to what AWS enforces at deploy or run
// time and no local emulator does (issue 12, section 2).

// unresolvedTemplate is template.yaml as plain JSON, intrinsics untouched
// ({"Ref": …}, {"Fn::Sub": …}), for properties the local resolution hides.
func unresolvedTemplate(t *testing.T) (raw []byte, doc struct {
	Parameters map[string]map[string]any
	Globals    map[string]map[string]any
	Resources  map[string]struct {
		Type                                string
		Condition                           string
		DeletionPolicy, UpdateReplacePolicy string
		Properties                          map[string]any
	}
}) {
	t.Helper()
	raw, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plain, err := cfnyaml.ToJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(plain, &doc); err != nil {
		t.Fatal(err)
	}
	return raw, doc
}

func TestTemplateParameters(t *testing.T) {
	_, doc := unresolvedTemplate(t)
	params := doc.Parameters
	pattern := func(name string) *regexp.Regexp {
		t.Helper()
		p, _ := params[name]["AllowedPattern"].(string)
		if p == "" {
			t.Fatalf("%s: no AllowedPattern", name)
		}
		return regexp.MustCompile(p)
	}
	whole := func(re *regexp.Regexp, s string) bool {
		loc := re.FindStringIndex(s)
		return loc != nil && loc[0] == 0 && loc[1] == len(s)
	}

	t.Run("concurrency within Lambda's 2..1000", func(t *testing.T) {
		for _, p := range []string{"HighMaximumConcurrency", "NormalMaximumConcurrency", "LowMaximumConcurrency"} {
			if params[p]["MinValue"] != 2.0 || params[p]["MaxValue"] != 1000.0 {
				t.Errorf("%s: MinValue %v MaxValue %v, want 2 and 1000", p, params[p]["MinValue"], params[p]["MaxValue"])
			}
		}
	})

	t.Run("durations are Go durations", func(t *testing.T) {
		var durations []string
		for name, p := range params {
			if d, _ := p["Description"].(string); strings.Contains(d, "Go duration") {
				durations = append(durations, name)
			}
		}
		if len(durations) < 3 {
			t.Fatalf("found duration parameters %v, want BackoffBase, BackoffCap, RateLimitWindow", durations)
		}
		for _, name := range durations {
			re := pattern(name)
			if def, _ := params[name]["Default"].(string); !whole(re, def) {
				t.Errorf("%s: default %q does not match its own pattern", name, def)
			}
			for _, ok := range []string{"20s", "15m", "1h30m", "500ms", "1.5s", "2h45m10s"} {
				if !whole(re, ok) {
					t.Errorf("%s: rejects %q", name, ok)
				}
			}
			for _, bad := range []string{"", "20", "s", "1 m", "1d", "-5s", "PT20S", "20 seconds"} {
				if whole(re, bad) {
					t.Errorf("%s: accepts %q", name, bad)
				}
			}
			// Everything the pattern accepts, Go parses.
			for _, v := range []string{"1ns", "3us", "0.5h", "10m0s", "1h1m1s1ms"} {
				if _, err := time.ParseDuration(v); whole(re, v) && err != nil {
					t.Errorf("%s: accepts %q, which time.ParseDuration rejects: %v", name, v, err)
				}
			}
		}
	})

	t.Run("VapidPublicKey is required and is a P-256 public key", func(t *testing.T) {
		p := params["VapidPublicKey"]
		if _, ok := p["Default"]; ok {
			t.Error("VapidPublicKey has a default: the stack would deploy without push keys and park every push in the DLQ")
		}
		re := pattern("VapidPublicKey")
		for range 20 {
			k, err := webpush.GenerateVAPIDKeys()
			if err != nil {
				t.Fatal(err)
			}
			if !whole(re, k.PublicKey) {
				t.Errorf("rejects the generated key %q", k.PublicKey)
			}
			if whole(re, k.PrivateKey) {
				t.Errorf("accepts a private key %q", k.PrivateKey)
			}
		}
		for _, bad := range []string{"", "BAAA", "B" + strings.Repeat("A", 85) + "=", "A" + strings.Repeat("A", 86)} {
			if whole(re, bad) {
				t.Errorf("accepts %q", bad)
			}
		}
	})

	t.Run("VapidPrivateKeyParameter is an SSM name with its slash", func(t *testing.T) {
		re := pattern("VapidPrivateKeyParameter")
		for _, ok := range []string{"/herald/vapid-private-key", "/prod/herald/vapid.key_1"} {
			if !whole(re, ok) {
				t.Errorf("rejects %q", ok)
			}
		}
		for _, bad := range []string{"", "/", "herald/vapid", "/herald//vapid", "/herald/vapid key", "arn:aws:ssm:us-east-1:1:parameter/x"} {
			if whole(re, bad) {
				t.Errorf("accepts %q (the policy's ARN is parameter${VapidPrivateKeyParameter})", bad)
			}
		}
	})

	t.Run("operations parameters", func(t *testing.T) {
		if params["LogRetentionDays"]["Default"] != 30.0 {
			t.Errorf("LogRetentionDays default %v, want 30", params["LogRetentionDays"]["Default"])
		}
		for _, p := range []string{"ApiThrottlingBurstLimit", "ApiThrottlingRateLimit"} {
			if params[p]["Type"] != "Number" || params[p]["MinValue"] == nil {
				t.Errorf("%s: want a Number parameter with a MinValue", p)
			}
		}
	})
}

// TestParameterConstraintsEnforcedLocally: the local stack refuses values
// CloudFormation would refuse, so a bad override fails `make dev` too.
func TestParameterConstraintsEnforcedLocally(t *testing.T) {
	raw, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	key, err := webpush.GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, param, value string
		ok                 bool
	}{
		{"a Go duration", "BackoffBase", "1s", true},
		{"a number is not a duration", "BackoffBase", "20", false},
		{"concurrency at the maximum", "HighMaximumConcurrency", "1000", true},
		{"concurrency above the maximum", "HighMaximumConcurrency", "1001", false},
		{"a log level", "LogLevel", "DEBUG", true},
		{"not a log level", "LogLevel", "TRACE", false},
		{"a retention CloudWatch offers", "LogRetentionDays", "14", true},
		{"a retention CloudWatch does not offer", "LogRetentionDays", "10", false},
		{"a VAPID public key", "VapidPublicKey", key.PublicKey, true},
		{"a VAPID private key", "VapidPublicKey", key.PrivateKey, false},
		{"an SSM name without its slash", "VapidPrivateKeyParameter", "herald/vapid", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseTemplate(raw, map[string]string{tt.param: tt.value})
			if (err == nil) != tt.ok {
				t.Errorf("%s=%q: err %v, want ok %v", tt.param, tt.value, err, tt.ok)
			}
			if err != nil && !strings.Contains(err.Error(), tt.param) {
				t.Errorf("error %q does not name the parameter", err)
			}
		})
	}
}

func TestTemplateLogging(t *testing.T) {
	_, doc := unresolvedTemplate(t)
	fns := map[string]map[string]any{}
	for id, r := range doc.Resources {
		if r.Type == "AWS::Serverless::Function" {
			fns[id] = r.Properties
		}
	}

	t.Run("LOG_LEVEL comes from LogLevel; Lambda does not filter stdout", func(t *testing.T) {
		for id, p := range fns {
			env, _ := p["Environment"].(map[string]any)
			vars, _ := env["Variables"].(map[string]any)
			if jsonString(vars["LOG_LEVEL"]) != `{"Ref":"LogLevel"}` {
				t.Errorf("%s: LOG_LEVEL = %s, want !Ref LogLevel", id, jsonString(vars["LOG_LEVEL"]))
			}
		}
		// ApplicationLogLevel would make Lambda drop stdout lines below it,
		// and the EMF metric lines carry no level (issue 12).
		configs := []any{doc.Globals["Function"]["LoggingConfig"]}
		for _, p := range fns {
			configs = append(configs, p["LoggingConfig"])
		}
		for _, c := range configs {
			if lc, _ := c.(map[string]any); lc["ApplicationLogLevel"] != nil {
				t.Errorf("LoggingConfig %v sets ApplicationLogLevel: EMF metric lines would be filtered at WARN", lc)
			}
		}
		if lc, _ := doc.Globals["Function"]["LoggingConfig"].(map[string]any); lc["LogFormat"] != "JSON" {
			t.Errorf("Globals LoggingConfig %v, want LogFormat JSON", lc)
		}
	})

	t.Run("every function's main reads LOG_LEVEL (app.LambdaDeps)", func(t *testing.T) {
		makefile, err := os.ReadFile("../../Makefile")
		if err != nil {
			t.Fatal(err)
		}
		for id := range fns {
			// sam build runs build-<LogicalId>, which builds ./functions/<name>.
			m := regexp.MustCompile(`(?m)^build-` + id + `:\n\t.*\s\./functions/(\w+)\s*$`).FindSubmatch(makefile)
			if m == nil {
				t.Errorf("%s: no build-%s target building ./functions/<name>", id, id)
				continue
			}
			file := filepath.Join("../../functions", string(m[1]), "main.go")
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			ast.Inspect(f, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "LambdaDeps" {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == "app" {
						found = true
					}
				}
				return !found
			})
			if !found {
				t.Errorf("%s: %s does not call app.LambdaDeps, whose logger applies LOG_LEVEL", id, file)
			}
		}
	})

	t.Run("a log group per function with LogRetentionDays", func(t *testing.T) {
		groups := map[string]string{} // LogGroupName → retention
		for _, r := range doc.Resources {
			if r.Type == "AWS::Logs::LogGroup" {
				groups[jsonString(r.Properties["LogGroupName"])] = jsonString(r.Properties["RetentionInDays"])
			}
		}
		for id := range fns {
			name := `{"Fn::Sub":"/aws/lambda/${` + id + `}"}`
			ret, ok := groups[name]
			if !ok {
				t.Errorf("%s: no log group named /aws/lambda/${%s} (have %v)", id, id, groups)
				continue
			}
			if ret != `{"Ref":"LogRetentionDays"}` {
				t.Errorf("%s: retention %s, want !Ref LogRetentionDays", id, ret)
			}
		}
	})

	t.Run("HTTP API: access log without personal data, throttled default route", func(t *testing.T) {
		api := doc.Resources["HttpApi"].Properties
		als, _ := api["AccessLogSettings"].(map[string]any)
		dest := jsonString(als["DestinationArn"])
		m := regexp.MustCompile(`^\{"Fn::GetAtt":(?:\["(\w+)","Arn"\]|"(\w+)\.Arn")\}$`).FindStringSubmatch(dest)
		if m != nil && m[1] == "" {
			m[1] = m[2]
		}
		if m == nil || doc.Resources[m[1]].Type != "AWS::Logs::LogGroup" ||
			jsonString(doc.Resources[m[1]].Properties["RetentionInDays"]) != `{"Ref":"LogRetentionDays"}` {
			t.Errorf("AccessLogSettings.DestinationArn %s: want a log group of the stack with LogRetentionDays", dest)
		}
		format, _ := als["Format"].(string)
		var fields map[string]string
		if err := json.Unmarshal([]byte(format), &fields); err != nil {
			t.Errorf("access log format is not a JSON line: %v", err)
		}
		for _, want := range []string{"$context.requestId", "$context.routeKey", "$context.status"} {
			if !strings.Contains(format, want) {
				t.Errorf("access log lacks %s", want)
			}
		}
		for _, pii := range []string{"sourceIp", "userAgent", "querystring", "$context.path"} {
			if strings.Contains(format, pii) {
				t.Errorf("access log carries %s (personal data, or the unsubscribe token)", pii)
			}
		}
		drs, _ := api["DefaultRouteSettings"].(map[string]any)
		if jsonString(drs["ThrottlingBurstLimit"]) != `{"Ref":"ApiThrottlingBurstLimit"}` || jsonString(drs["ThrottlingRateLimit"]) != `{"Ref":"ApiThrottlingRateLimit"}` {
			t.Errorf("DefaultRouteSettings %v: want throttling from ApiThrottlingBurstLimit and ApiThrottlingRateLimit", drs)
		}
	})
}

func TestAlarmTopicEncryption(t *testing.T) {
	_, doc := unresolvedTemplate(t)
	topic := doc.Resources["AlarmTopic"]
	key := jsonString(topic.Properties["KmsMasterKeyId"])
	if strings.Contains(key, "alias/aws/") {
		t.Fatalf("AlarmTopic uses an AWS-managed key %s: CloudWatch cannot publish to it", key)
	}
	if key == "" || key == "null" {
		return // no SSE is the other acceptable choice
	}
	m := regexp.MustCompile(`^\{"Ref":"(\w+)"\}$`).FindStringSubmatch(key)
	if m == nil || doc.Resources[m[1]].Type != "AWS::KMS::Key" {
		t.Fatalf("AlarmTopic KmsMasterKeyId %s: want a key of this stack", key)
	}
	k := doc.Resources[m[1]]
	if k.Condition != topic.Condition {
		t.Errorf("%s: condition %q, the topic's is %q", m[1], k.Condition, topic.Condition)
	}
	if k.Properties["EnableKeyRotation"] != true {
		t.Errorf("%s: key rotation off", m[1])
	}
	var policy struct {
		Statement []struct {
			Effect    string
			Principal map[string]any
			Action    any
		}
	}
	if err := json.Unmarshal([]byte(jsonString(k.Properties["KeyPolicy"])), &policy); err != nil {
		t.Fatal(err)
	}
	granted := map[string]bool{}
	for _, s := range policy.Statement {
		if s.Effect != "Allow" || jsonString(s.Principal["Service"]) != "cloudwatch.amazonaws.com" {
			continue
		}
		var actions []string
		if err := json.Unmarshal([]byte(jsonString(s.Action)), &actions); err != nil {
			actions = []string{jsonString(s.Action)}
		}
		for _, a := range actions {
			granted[a] = true
		}
	}
	if !granted["kms:Decrypt"] || !granted["kms:GenerateDataKey*"] {
		t.Errorf("%s: the key policy must let cloudwatch.amazonaws.com kms:Decrypt and kms:GenerateDataKey*, grants %v", m[1], granted)
	}
	checkServiceGrantConditions(t, m[1], k.Properties["KeyPolicy"], "cloudwatch.amazonaws.com", false)
}

// checkServiceGrantConditions: every statement of a key policy granting
// service is conditioned on this account (aws:SourceAccount), and, with
// sourceArn, on one of its resources (aws:SourceArn).
func checkServiceGrantConditions(t *testing.T, key string, keyPolicy any, service string, sourceArn bool) {
	t.Helper()
	var policy struct {
		Statement []struct {
			Effect    string
			Principal map[string]any
			Condition map[string]map[string]any
		}
	}
	if err := json.Unmarshal([]byte(jsonString(keyPolicy)), &policy); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range policy.Statement {
		if s.Effect != "Allow" || jsonString(s.Principal["Service"]) != service {
			continue
		}
		n++
		account := jsonString(s.Condition["StringEquals"]["aws:SourceAccount"])
		if account != `{"Ref":"AWS::AccountId"}` {
			t.Errorf("%s: the grant to %s has no aws:SourceAccount condition on this account (%s)", key, service, account)
		}
		if arn := s.Condition["StringLike"]["aws:SourceArn"]; sourceArn && arn == nil {
			t.Errorf("%s: the grant to %s has no aws:SourceArn condition", key, service)
		}
	}
	if n == 0 {
		t.Errorf("%s: no grant to %s", key, service)
	}
}

// TestFeedbackTopicEncryption: the SES feedback topic carries email
// addresses: it is encrypted with a key of this stack that SES may use,
// for this account's configuration set only.
func TestFeedbackTopicEncryption(t *testing.T) {
	_, doc := unresolvedTemplate(t)
	key := jsonString(doc.Resources["FeedbackTopic"].Properties["KmsMasterKeyId"])
	m := regexp.MustCompile(`^\{"Ref":"(\w+)"\}$`).FindStringSubmatch(key)
	if m == nil || doc.Resources[m[1]].Type != "AWS::KMS::Key" {
		t.Fatalf("FeedbackTopic KmsMasterKeyId %s: want a key of this stack (an AWS-managed key cannot be granted to SES)", key)
	}
	k := doc.Resources[m[1]]
	if k.Properties["EnableKeyRotation"] != true {
		t.Errorf("%s: key rotation off", m[1])
	}
	checkServiceGrantConditions(t, m[1], k.Properties["KeyPolicy"], "ses.amazonaws.com", true)
}

// TestDeletionPolicies: what survives `sam delete` (docs/decisions.md).
func TestDeletionPolicies(t *testing.T) {
	_, doc := unresolvedTemplate(t)
	for id, r := range doc.Resources {
		want := ""
		switch {
		case r.Type == "AWS::DynamoDB::Table":
			want = "Retain"
		case r.Type == "AWS::SQS::Queue" && r.Properties["RedrivePolicy"] == nil:
			want = "Retain" // a DLQ: the parked messages are the evidence
		case r.Type == "AWS::SQS::Queue":
			want = "Delete" // a work queue: its state is in the table
		default:
			continue
		}
		// Retained, except when the stack's first deploy fails: then nothing
		// holds data yet, and nothing is left behind (RetainExceptOnCreate
		// exists for DeletionPolicy only).
		deletion := want
		if want == "Retain" {
			deletion = "RetainExceptOnCreate"
		}
		if r.DeletionPolicy != deletion || r.UpdateReplacePolicy != want {
			t.Errorf("%s: DeletionPolicy %q UpdateReplacePolicy %q, want %s and %s", id, r.DeletionPolicy, r.UpdateReplacePolicy, deletion, want)
		}
	}
}

// TestSamLocalEnv: `sam local invoke --env-vars` sets only variables the
// function declares (Globals included) and drops the rest silently; names
// follow LocalStack's <stack>-<LogicalId>-<suffix> for the resource the
// template's variable refers to.
func TestSamLocalEnv(t *testing.T) {
	tm, err := LoadTemplate("../../template.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../../infra/sam-local/env.json")
	if err != nil {
		t.Fatal(err)
	}
	var envFile map[string]map[string]string
	if err := json.Unmarshal(raw, &envFile); err != nil {
		t.Fatal(err)
	}
	declared := map[string]map[string]string{}
	for _, fn := range tm.Functions() {
		declared[fn.LogicalID] = fn.Env
	}
	ref := regexp.MustCompile(`^\$\{ref:(\w+)\}$`)
	for section, vars := range envFile {
		targets := []string{section}
		if section == "Parameters" {
			targets = slices.Sorted(func(yield func(string) bool) {
				for id := range declared {
					if !yield(id) {
						return
					}
				}
			})
		} else if _, ok := declared[section]; !ok {
			t.Errorf("env.json: %s is not a function of the template", section)
			continue
		}
		for k, v := range vars {
			for _, fn := range targets {
				tv, ok := declared[fn][k]
				if !ok {
					t.Errorf("env.json %s.%s: %s does not declare %s, sam local would drop it", section, k, fn, k)
					continue
				}
				// (An empty value is a choice: no configuration set.)
				if m := ref.FindStringSubmatch(tv); m != nil && v != "" && tm.GetAllEventsEventBusResources()[m[1]] != nil {
					// A bus is named by its Name property, not by the stack.
					if want := tm.GetAllEventsEventBusResources()[m[1]].Name; v != want {
						t.Errorf("env.json %s.%s = %q: the template names the bus %s %q", section, k, v, m[1], want)
					}
				} else if m != nil && v != "" && !strings.Contains(v, "herald-"+m[1]+"-") {
					t.Errorf("env.json %s.%s = %q: the template refers to %s, LocalStack names it herald-%s-<suffix>", section, k, v, m[1], m[1])
				}
			}
		}
	}
	for _, k := range []string{"AWS_ENDPOINT_URL"} {
		if envFile["Parameters"][k] == "" {
			t.Errorf("env.json Parameters.%s missing: sam local would call AWS", k)
		}
	}

	// sam local resolves !Ref of a resource to its logical id ("Table"),
	// so every variable naming a resource of the stack must be set in
	// env.json, or the function would address a table or queue that does
	// not exist. Read from the template, so a function or variable added
	// later is held to it too.
	_, doc := unresolvedTemplate(t)
	// A variable env.json may leave out because another one it sets takes
	// precedence in the code.
	supersededBy := map[string]string{"UNSUBSCRIBE_SECRET_ARN": "UNSUBSCRIBE_SECRET"}
	for id, r := range doc.Resources {
		if r.Type != "AWS::Serverless::Function" {
			continue
		}
		if _, ok := envFile[id]; !ok {
			t.Errorf("env.json has no %s section", id)
		}
		env, _ := r.Properties["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		for k, v := range vars {
			res := referencedResource(jsonString(v), doc.Resources)
			if res == "" {
				continue
			}
			if _, ok := envFile[id][k]; ok {
				continue
			}
			if other := supersededBy[k]; other != "" && envFile[id][other] != "" {
				continue
			}
			t.Errorf("env.json %s.%s missing: the template sets it from %s, which sam local would pass as the logical id", id, k, res)
		}
	}
}

// referencedResource returns a resource of the stack that an unresolved
// value refers to (Ref, Fn::GetAtt, or ${Id} / ${Id.Attr} in Fn::Sub), or "".
func referencedResource[R any](value string, resources map[string]R) string {
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`"Ref":"(\w+)"`),
		regexp.MustCompile(`"Fn::GetAtt":\[?"(\w+)`),
		regexp.MustCompile(`\$\{(\w+)[.}]`),
	} {
		for _, m := range re.FindAllStringSubmatch(value, -1) {
			if _, ok := resources[m[1]]; ok {
				return m[1]
			}
		}
	}
	return ""
}

func TestBuildConfiguration(t *testing.T) {
	tm, err := LoadTemplate("../../template.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("Makefile .PHONY names every build-<LogicalId>", func(t *testing.T) {
		if _, err := exec.LookPath("make"); err != nil {
			t.Skip("no make")
		}
		// make's database shows .PHONY with its variables expanded.
		out, _ := exec.Command("make", "-C", "../..", "-pRrq", ":").Output()
		var phony []string
		for _, l := range strings.Split(string(out), "\n") {
			if rest, ok := strings.CutPrefix(l, ".PHONY: "); ok {
				phony = append(phony, strings.Fields(rest)...)
			}
		}
		for id := range tm.GetAllServerlessFunctionResources() {
			if !slices.Contains(phony, "build-"+id) {
				t.Errorf(".PHONY lacks build-%s (has %v)", id, phony)
			}
		}
	})
	t.Run("sam build runs in source", func(t *testing.T) {
		raw, err := os.ReadFile("../../samconfig.toml")
		if err != nil {
			t.Fatal(err)
		}
		_, section, _ := strings.Cut(string(raw), "[default.build.parameters]")
		section, _, _ = strings.Cut(section, "\n[")
		if !regexp.MustCompile(`(?m)^build_in_source\s*=\s*true\s*$`).MatchString(section) {
			t.Error("samconfig.toml [default.build.parameters] must set build_in_source = true (else sam build copies the repository once per function)")
		}
	})
}

// TestCfnLint runs cfn-lint (informational findings included) when it is
// installed: the virtualenv `make deps` makes when the machine's python3
// lacks the pinned version (scripts/iam/python-deps.sh), else the PATH's.
func TestCfnLint(t *testing.T) {
	lint, err := filepath.Abs("../../.cache/python/bin/cfn-lint")
	if _, serr := os.Stat(lint); err != nil || serr != nil {
		if lint, err = exec.LookPath("cfn-lint"); err != nil {
			t.Skip("cfn-lint not installed (make deps)")
		}
	}
	cmd := exec.Command(lint, "--include-checks", "I", "--", "template.yaml")
	cmd.Dir = "../.."
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Errorf("cfn-lint --include-checks I template.yaml: %v\n%s", err, out.String())
	}
}

// TestSampleEventsCoverEverySource: for `sam local invoke`, events/ holds a
// sample of every kind of event each function of the template receives
// (HTTP API, stream, queue, SNS, schedule), named <function>-*.json, read
// from the template so that a function or event source added later needs
// its sample too. (internal/app's tests decode each sample into its
// aws-lambda-go type and its bodies with the production decoders.)
func TestSampleEventsCoverEverySource(t *testing.T) {
	_, doc := unresolvedTemplate(t)
	kindOf := func(raw []byte) string {
		var ev struct {
			RouteKey   string `json:"routeKey"`
			DetailType string `json:"detail-type"`
			// A Lambda REQUEST authorizer's event (the live inbox's $connect).
			Type      string `json:"type"`
			MethodArn string `json:"methodArn"`
			// A WebSocket route's event (the live inbox's routes).
			RequestContext struct {
				EventType    string `json:"eventType"`
				ConnectionID string `json:"connectionId"`
			} `json:"requestContext"`
			Records []struct {
				EventSource  string `json:"eventSource"`
				SNSSource    string `json:"EventSource"`
				DynamoStream struct {
					StreamViewType string
				} `json:"dynamodb"`
			}
		}
		if err := json.Unmarshal(raw, &ev); err != nil {
			return ""
		}
		switch {
		case ev.Type == "REQUEST" && ev.MethodArn != "":
			return "Authorizer"
		case ev.RequestContext.ConnectionID != "" && ev.RequestContext.EventType != "":
			return "WebSocket"
		case ev.RouteKey != "":
			return "HttpApi"
		case ev.DetailType == "Scheduled Event":
			return "Schedule"
		case len(ev.Records) > 0 && ev.Records[0].SNSSource == "aws:sns":
			return "SNS"
		case len(ev.Records) > 0 && ev.Records[0].EventSource == "aws:sqs":
			return "SQS"
		case len(ev.Records) > 0 && ev.Records[0].EventSource == "aws:dynamodb":
			return "DynamoDB:" + ev.Records[0].DynamoStream.StreamViewType
		}
		return ""
	}
	table, _ := doc.Resources["Table"].Properties["StreamSpecification"].(map[string]any)
	want := map[string]map[string]bool{} // function → event kinds it receives
	add := func(fn, kind string) {
		if want[fn] == nil {
			want[fn] = map[string]bool{}
		}
		want[fn][kind] = true
	}
	for id, r := range doc.Resources {
		switch r.Type {
		case "AWS::Serverless::Function":
			add(id, "") // at least one sample
			events, _ := r.Properties["Events"].(map[string]any)
			for _, e := range events {
				typ, _ := e.(map[string]any)["Type"].(string)
				add(id, typ)
			}
		case "AWS::Lambda::EventSourceMapping":
			fn := regexp.MustCompile(`^\{"Ref":"(\w+)"\}$`).FindStringSubmatch(jsonString(r.Properties["FunctionName"]))
			if fn == nil {
				t.Errorf("%s: FunctionName %s is not a Ref to a function", id, jsonString(r.Properties["FunctionName"]))
				continue
			}
			src := jsonString(r.Properties["EventSourceArn"])
			switch {
			case strings.Contains(src, "StreamArn"):
				add(fn[1], "DynamoDB:"+jsonString(table["StreamViewType"]))
			case regexp.MustCompile(`"Fn::GetAtt":\[?"\w+`).MatchString(src) && strings.Contains(src, "Arn"):
				add(fn[1], "SQS")
			default:
				t.Errorf("%s: event source %s: which sample kind is it?", id, src)
			}
		}
	}
	files, _ := filepath.Glob("../../events/*.json")
	have := map[string]map[string]bool{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		kind := kindOf(raw)
		if kind == "" {
			t.Errorf("events/%s: not an event any function of the template receives", name)
		}
		stem, _, _ := strings.Cut(name, "-")
		fn := ""
		for id := range want {
			if strings.EqualFold(strings.TrimSuffix(id, "Function"), stem) {
				fn = id
			}
		}
		if fn == "" {
			t.Errorf("events/%s: no function %q in the template", name, stem)
			continue
		}
		if have[fn] == nil {
			have[fn] = map[string]bool{"": true}
		}
		have[fn][kind] = true
	}
	for fn, kinds := range want {
		for kind := range kinds {
			if !have[fn][kind] {
				t.Errorf("events/: no sample %s for %s (events/%s-….json)", kind, fn, strings.ToLower(strings.TrimSuffix(fn, "Function")))
			}
		}
	}
}

// deployDoc is docs/deploy.md, the deploy walkthrough.
func deployDoc(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("../../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// docSection is the text of doc from the heading that starts with heading
// to the next heading of its level.
func docSection(t *testing.T, doc, heading string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "\n"+heading)
	if !ok {
		t.Fatalf("docs/deploy.md has no section %q", heading)
	}
	level := heading[:strings.Index(heading, " ")+1]
	end := strings.Index(rest, "\n"+level)
	if end < 0 {
		return rest
	}
	return rest[:end]
}

// TestDeployWalkthrough: docs/deploy.md names every parameter `sam deploy
// --guided` asks for, and every output a deployer needs there: the API URL
// and alarm topic, and each retained resource (table, DLQs) its teardown
// must remove by hand. Read from the template, so a parameter or DLQ added
// later needs its line.
func TestDeployWalkthrough(t *testing.T) {
	section := deployDoc(t)
	_, doc := unresolvedTemplate(t)
	for name := range doc.Parameters {
		if !strings.Contains(section, "`"+name+"`") {
			t.Errorf("docs/deploy.md does not name parameter `%s`", name)
		}
	}
	tm, err := LoadTemplate("../../template.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	outputs := []string{"ApiUrl", "AlarmNotificationTopic"}
	for name, o := range tm.Outputs {
		value := jsonString(o)
		for id, r := range doc.Resources {
			if strings.HasPrefix(r.DeletionPolicy, "Retain") && strings.Contains(value, "${ref:"+id+"}") {
				outputs = append(outputs, name)
			}
		}
	}
	if len(outputs) < 9 {
		t.Errorf("outputs of retained resources: %v, want the table and every DLQ", outputs)
	}
	teardown := docSection(t, section, "## 9. Teardown")
	for _, name := range outputs {
		if !strings.Contains(section, name) {
			t.Errorf("docs/deploy.md does not name output %s", name)
		}
		if name != "ApiUrl" && name != "AlarmNotificationTopic" && !strings.Contains(teardown, name) {
			t.Errorf("docs/deploy.md's teardown does not remove retained %s", name)
		}
	}
}

// TestDeployDayZero: the walkthrough starts with the requests AWS takes
// days to answer, each named in its table.
func TestDeployDayZero(t *testing.T) {
	doc := deployDoc(t)
	day0 := docSection(t, doc, "## Day 0")
	if strings.Index(doc, "\n## Day 0") > strings.Index(doc, "\n## 1. ") {
		t.Error("docs/deploy.md: the day-0 list comes after step 1")
	}
	for _, want := range []string{"SES production access", "SES sending rate", "Leaving the SMS sandbox", "SMS spend limit", "Origination identity", "Lambda concurrency"} {
		if !strings.Contains(day0, "**"+want) {
			t.Errorf("day-0 list lacks %q", want)
		}
	}
}

// docArray is the bash array NAME=( … ) of a shell block of doc, as the
// words bash makes of it (single quotes removed, $VARS replaced by vars).
func docArray(t *testing.T, doc, name string, vars map[string]string) []string {
	t.Helper()
	m := regexp.MustCompile(`(?s)\n` + name + `=\((.*?)\)\n`).FindStringSubmatch(doc)
	if m == nil {
		t.Fatalf("docs/deploy.md has no %s=( … ) line", name)
	}
	var words []string
	for _, w := range regexp.MustCompile(`'[^']*'|\S+`).FindAllString(m[1], -1) {
		if strings.HasPrefix(w, "'") {
			w = strings.Trim(w, "'")
		} else {
			w = regexp.MustCompile(`\$[A-Z_]+`).ReplaceAllStringFunc(w, func(v string) string {
				val, ok := vars[v[1:]]
				if !ok {
					t.Errorf("%s uses %s, which the walkthrough does not set", name, v)
				}
				return val
			})
		}
		words = append(words, w)
	}
	return words
}

// TestDeployParameterLines: the trial line gives every required parameter
// a value a trial can use, passes CloudFormation's parameter constraints and
// the control-plane rules on a new account's Lambda quota (10); the
// production line sets what `make aws-lint` checks (the Makefile's
// PRODUCTION_PARAMS) with the same values, plus the account's own values and
// the protection its update turns on.
func TestDeployParameterLines(t *testing.T) {
	doc := deployDoc(t)
	key := "B" + strings.Repeat("A", 86)
	vars := map[string]string{"ME": "you@example.com", "VAPID_PUBLIC_KEY": key}
	if !regexp.MustCompile(`(?m)^ME=\S+`).MatchString(doc) || !strings.Contains(doc, "eval \"$(go run ./cmd/herald vapid-keys)\"") {
		t.Error("docs/deploy.md does not set ME and VAPID_PUBLIC_KEY before its parameter lines")
	}
	parse := func(name string) map[string]string {
		o, err := controlplane.ParseParameterOverrides(strings.Join(docArray(t, doc, name, vars), " "))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return o
	}
	trial := parse("TRIAL")
	_, raw := unresolvedTemplate(t)
	for name, p := range raw.Parameters {
		if _, hasDefault := p["Default"]; !hasDefault && trial[name] == "" {
			t.Errorf("trial line: required parameter %s has no value", name)
		}
	}
	if trial["EmailFrom"] == "" || trial["SesIdentity"] == "" {
		t.Error("trial line: EmailFrom and SesIdentity must be the deployer's own (the defaults are example.com)")
	}
	tm, err := LoadTemplate("../../template.yaml", trial)
	if err != nil {
		t.Fatalf("trial line refused: %v", err)
	}
	if err := controlplane.Check(tm.Resolved, controlplane.Options{AccountConcurrency: controlplane.NewAccountConcurrency}); err != nil {
		t.Errorf("trial line on a new account: %v", err)
	}
	if !strings.Contains(doc, `sam deploy --parameter-overrides "${TRIAL[@]}" TableDeletionProtection=true`) {
		t.Error("docs/deploy.md does not turn the table's deletion protection on after the trial's create")
	}

	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + ` := (.*)$`).FindSubmatch(makefile)
		if m == nil {
			t.Fatalf("Makefile has no %s", name)
		}
		return string(m[1])
	}
	checked, err := controlplane.ParseParameterOverrides(mk("PRODUCTION_PARAMS"))
	if err != nil {
		t.Fatal(err)
	}
	production := parse("PRODUCTION")
	for k, v := range checked {
		if production[k] != v {
			t.Errorf("production line: %s=%q, make aws-lint checks %q", k, production[k], v)
		}
	}
	// Beyond what make aws-lint checks: the account's own values, and the
	// protection an update turns on (a create must not: its rollback).
	own := []string{"EmailFrom", "SesIdentity", "VapidPublicKey", "CorsAllowedOrigins", "JwtIssuer", "JwtAudience"}
	for k := range production {
		if _, ok := checked[k]; !ok && !slices.Contains(own, k) && k != "TableDeletionProtection" {
			t.Errorf("production line sets %s, which make aws-lint's PRODUCTION_PARAMS does not check", k)
		}
	}
	if production["TableDeletionProtection"] != "true" {
		t.Error("production line: TableDeletionProtection=true missing")
	}
	for name := range raw.Parameters {
		if _, hasDefault := raw.Parameters[name]["Default"]; !hasDefault && production[name] == "" {
			t.Errorf("production line: required parameter %s has no value", name)
		}
	}
	if !strings.Contains(docSection(t, doc, "## 8. Production"), fmt.Sprintf("the %s of the day-0 request", humanInt(mk("PRODUCTION_CONCURRENCY")))) {
		t.Errorf("docs/deploy.md's production profile does not name the quota make aws-lint assumes (%s)", mk("PRODUCTION_CONCURRENCY"))
	}
}

// humanInt writes "1000" as "1,000".
func humanInt(s string) string {
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// TestDeployWalkthroughSmokeAndPolicy: the walkthrough's SigV4 smoke test
// takes its region from the API (no fixed us-east-1), sends no empty
// session-token header and no placeholder a shell cannot run, and expects
// API Gateway's own answers: 403 for an unsigned request to an IAM route
// that exists, 404 for a method and path that is no route. Its per-role
// execute-api:Invoke policies together cover every IAM route of the
// template and no route that takes a JWT or nothing (where IAM grants
// nothing), and the intake-only role reaches no user's contacts.
func TestDeployWalkthroughSmokeAndPolicy(t *testing.T) {
	doc := deployDoc(t)
	smoke := docSection(t, doc, "## 6. Smoke test")
	if strings.Contains(smoke, "aws:amz:us-east-1") {
		t.Error("smoke test signs for us-east-1 whatever the stack's region")
	}
	if strings.Contains(smoke, "x-amz-security-token: ${AWS_SESSION_TOKEN:-}") {
		t.Error("smoke test sends an empty x-amz-security-token header without a session token")
	}
	if strings.Contains(smoke, "/<id>") {
		t.Error("smoke test has a <id> placeholder: read the id from the answer")
	}
	tm := transformedTemplate(t, "../../template.yaml", nil)
	routes := tm.Routes()
	routeOf := func(method, path string) (Route, bool) {
		for _, r := range routes {
			if r.Method == method && regexp.MustCompile("^"+regexp.MustCompile(`\\\{[^}]+\\\}`).ReplaceAllString(regexp.QuoteMeta(r.Path), "[^/]+")+"$").MatchString(path) {
				return r, true
			}
		}
		return Route{}, false
	}
	var answers [][]string
	for _, a := range regexp.MustCompile(`(?m)^curl ([^\n]*?)"\$API(/[^"]*)"[ \t]+# ([^:\n]+): (\d{3})[ \t]*$`).FindAllStringSubmatch(smoke, -1) {
		if !strings.Contains(a[1], "${sign[@]}") {
			answers = append(answers, a)
		}
	}
	if len(answers) < 2 {
		t.Fatalf("smoke test: %d unsigned requests with an expected status, want a 403 and a 404", len(answers))
	}
	for _, a := range answers {
		method := "GET"
		if m := regexp.MustCompile(`-X (\w+)`).FindStringSubmatch(a[1]); m != nil {
			method = m[1]
		}
		r, exists := routeOf(method, a[2])
		switch a[4] {
		case "403":
			if !exists || r.Auth != "AWS_IAM" {
				t.Errorf("smoke test expects 403 for unsigned %s %s: API Gateway answers that only for an IAM route that exists (route %v)", method, a[2], r)
			}
		case "404":
			if exists {
				t.Errorf("smoke test expects 404 for %s %s, but it is route %s", method, a[2], r.Key())
			}
		default:
			t.Errorf("smoke test expects %s for %s %s", a[4], method, a[2])
		}
	}

	trust := docSection(t, doc, "## 7. Who may call what")
	for _, claim := range []string{"any notification type", "any email address", "read and replace any user's"} {
		if !strings.Contains(trust, claim) {
			t.Errorf("trust model does not say %q", claim)
		}
	}
	blocks := regexp.MustCompile("(?s)```json\n(.*?)```").FindAllStringSubmatch(trust, -1)
	if len(blocks) < 3 {
		t.Fatalf("trust model: %d example policies, want one per caller role (intake, user admin, campaigns)", len(blocks))
	}
	covers := func(patterns []*regexp.Regexp, r Route) bool {
		arn := r.Method + regexp.MustCompile(`\{[^}]+\}`).ReplaceAllString(r.Path, "x")
		for _, p := range patterns {
			if p.MatchString(arn) {
				return true
			}
		}
		return false
	}
	var all [][]*regexp.Regexp
	for i, b := range blocks {
		var policy struct {
			Statement []struct {
				Action   string
				Resource []string
			}
		}
		if err := json.Unmarshal([]byte(b[1]), &policy); err != nil {
			t.Fatalf("example policy %d: %v", i+1, err)
		}
		var patterns []*regexp.Regexp
		for _, st := range policy.Statement {
			if st.Action != "execute-api:Invoke" {
				t.Errorf("example policy action %q, want execute-api:Invoke", st.Action)
			}
			for _, r := range st.Resource {
				_, route, ok := strings.Cut(r, ":API_ID/*/")
				if !ok || !strings.HasPrefix(r, "arn:aws:execute-api:REGION:ACCOUNT_ID:") {
					t.Errorf("resource %q: want arn:aws:execute-api:REGION:ACCOUNT_ID:API_ID/*/METHOD/path", r)
					continue
				}
				patterns = append(patterns, regexp.MustCompile("^"+strings.ReplaceAll(regexp.QuoteMeta(route), `\*`, ".*")+"$"))
			}
		}
		all = append(all, patterns)
	}
	iam := 0
	for _, r := range routes {
		union := false
		for i, patterns := range all {
			if !covers(patterns, r) {
				continue
			}
			union = true
			if r.Auth != "AWS_IAM" && !strings.HasPrefix(r.Path, "/v1/users/") {
				// Profile routes share /v1/users/* with the JWT inbox
				// routes, where an IAM grant is inert; nothing else may be.
				t.Errorf("example policy %d grants %s, a route without IAM auth (%s)", i+1, r.Key(), r.Auth)
			}
			if i == 0 && strings.HasPrefix(r.Path, "/v1/users/") {
				t.Errorf("the intake-only policy grants %s", r.Key())
			}
		}
		if r.Auth == "AWS_IAM" {
			iam++
			if !union {
				t.Errorf("no example policy allows the service route %s", r.Key())
			}
		}
	}
	if iam < 10 {
		t.Fatalf("template has %d IAM routes: route parsing broke", iam)
	}
}

// TestDocumentedCfnLintIsMakes: the walkthrough's cfn-lint command is the
// one `make aws-lint` (and so make aws-check) runs, found where `make deps`
// installs it (the virtualenv's bin first, as the Makefile's CFN_LINT).
func TestDocumentedCfnLintIsMakes(t *testing.T) {
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	_, recipe, ok := strings.Cut(string(makefile), "\naws-lint:\n\t")
	if !ok {
		t.Fatal("Makefile has no aws-lint target")
	}
	recipe, _, _ = strings.Cut(recipe, "\n")
	made := strings.Replace(recipe, "$(CFN_LINT)", "cfn-lint", 1)
	venv := regexp.MustCompile(`(?m)^VENV := (\S+)$`).FindSubmatch(makefile)
	if venv == nil || !strings.Contains(string(makefile), "CFN_LINT = $(if $(wildcard $(VENV)/bin/cfn-lint),$(VENV)/bin/cfn-lint,cfn-lint)") {
		t.Fatal("Makefile: VENV and CFN_LINT are not what this test reads")
	}
	prefix := `PATH="$PWD/` + string(venv[1]) + `/bin:$PATH" `
	var documented []string
	for _, line := range strings.Split(deployDoc(t), "\n") {
		if strings.Contains(line, "cfn-lint template.yaml") {
			cmd, _, _ := strings.Cut(line, "#")
			documented = append(documented, strings.TrimSpace(cmd))
		}
	}
	if len(documented) != 1 || documented[0] != prefix+made {
		t.Errorf("docs/deploy.md runs %q, make aws-lint runs %q with %s/bin first", documented, made, venv[1])
	}
}
