package devstack

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/devstack/controlplane"
)

// breakTemplate is template.yaml with the first match of re replaced by
// repl; the test fails when the anchor is gone, so a later template change
// cannot turn a rule's test into one that passes for the wrong reason.
func breakTemplate(t *testing.T, raw string, re, repl string) string {
	t.Helper()
	rx := regexp.MustCompile(re)
	loc := rx.FindStringSubmatchIndex(raw)
	if loc == nil {
		t.Fatalf("template.yaml has no %q to break", re)
	}
	out := rx.ExpandString(nil, repl, raw, loc)
	return raw[:loc[0]] + string(out) + raw[loc[1]:]
}

// TestTemplateControlPlaneRules breaks a copy of template.yaml once per rule
// AWS's control plane enforces on Herald's resources and sees the template
// refused, naming the rule, with AWS's message; the template as committed
// passes (every other template test loads it through the same check).
func TestTemplateControlPlaneRules(t *testing.T) {
	rawBytes, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	raw := string(rawBytes)
	if _, err := ParseTemplate(rawBytes, nil); err != nil {
		t.Fatalf("the committed template is refused: %v", err)
	}
	manyGSIs := "" // 21 with the template's own
	for i := range 21 - strings.Count(raw, "\n        - IndexName: ") {
		manyGSIs += fmt.Sprintf("        - IndexName: extra%d\n          KeySchema: [{AttributeName: pk, KeyType: HASH}]\n          Projection: {ProjectionType: KEYS_ONLY}\n", i)
	}
	manyFilters := strings.Repeat("          - Pattern: '{\"eventName\":[\"REMOVE\"]}'\n", 4)
	cases := []ruleCase{
		{controlplane.RuleMappingConflict, `FunctionName: !Ref RelayHighFunction`, `FunctionName: !Ref RelayFunction`,
			"ResourceConflictException: The event source arn (${getatt:Table.StreamArn}) and function (RelayFunction) provided mapping already exists"},
		{controlplane.RuleStreamReaders, `(?m)^  # -+ channel workers\n`,
			"  ThirdStreamMapping:\n    Type: AWS::Lambda::EventSourceMapping\n    Properties:\n      FunctionName: !Ref EmailFunction\n      EventSourceArn: !GetAtt Table.StreamArn\n      StartingPosition: LATEST\n      FunctionResponseTypes: [ReportBatchItemFailures]\n$0",
			"More than 2 processes are reading from the same streams shard at the same time"},
		{controlplane.RuleSQSVisibility, `(EmailHighQueue:\n(?:    .*\n)*?      VisibilityTimeout: )\d+`, `${1}20`,
			"InvalidParameterValueException: Queue visibility timeout: 20 seconds is less than Function timeout: 30 seconds"},
		{controlplane.RuleSQSBatchWindow, `(EmailHighMapping:\n(?:    .*\n)*?      BatchSize: )\d+`, `${1}50`,
			"Maximum batch window in seconds must be greater than 0 if maximum batch size is greater than 10"},
		{controlplane.RuleStartingPosition, `(?m)^      StartingPosition: \w+\n`, ``, "StartingPosition is required"},
		{controlplane.RuleStartingPosition, `(?m)^(      StartingPosition: )\w+`, `${1}EARLIEST`, "startingPosition"},
		{controlplane.RuleBatchSize, `(RelayStreamMapping:\n(?:    .*\n)*?      BatchSize: )\d+`, `${1}10001`, "BatchSize 10001 is out of bounds"},
		{controlplane.RuleBatchSize, `(EmailHighMapping:\n(?:    .*\n)*?      BatchSize: )\d+`, "${1}10001\n      MaximumBatchingWindowInSeconds: 1", "BatchSize 10001 is out of bounds"},
		{controlplane.RuleBatchWindow, `(?m)^(      MaximumBatchingWindowInSeconds: )\d+`, `${1}301`, "maximumBatchingWindowInSeconds"},
		{controlplane.RuleRecordAge, `(?m)^(      MaximumRecordAgeInSeconds: )-?\d+`, `${1}30`, "MaximumRecordAgeInSeconds 30"},
		{controlplane.RuleRetryAttempts, `(?m)^(      MaximumRetryAttempts: )-?\d+`, `${1}10001`, "maximumRetryAttempts"},
		{controlplane.RuleParallelization, `(?m)^      StartingPosition: \w+\n`, "$0      ParallelizationFactor: 11\n", "parallelizationFactor"},
		{controlplane.RuleFilterCount, `(RelayStreamMapping:\n(?:    .*\n)*?        Filters:\n)`, "${1}" + manyFilters, "exceeds the limit of 5 filters"},
		{controlplane.RuleMaximumConcurrency, `MaximumConcurrency: !Ref HighMaximumConcurrency`, `MaximumConcurrency: 1`, "scalingConfig.maximumConcurrency"},
		{controlplane.RuleStreamOnlyOnSQS, `(EmailHighMapping:\n(?:    .*\n)*?      BatchSize: \d+\n)`, "${1}      BisectBatchOnFunctionError: true\n", "Unsupported BisectBatchOnFunctionError parameter for the SQS event source"},
		{controlplane.RuleFunctionTimeout, `(RelayFunction:\n(?:    .*\n)*?      Timeout: )\d+`, `${1}901`, "at 'timeout'"},
		{controlplane.RuleFunctionMemory, `(?m)^(    MemorySize: )\d+`, `${1}64`, "at 'memorySize'"},
		{controlplane.RuleUnreservedConcurrency, `(RelayFunction:\n(?:    .*\n)*?      Timeout: \d+\n)`, "${1}      ReservedConcurrentExecutions: 901\n",
			"decreases account's UnreservedConcurrentExecution below its minimum value of [100]"},
		{controlplane.RuleReservedRange, `ReserveChannelConcurrency: !Not \[!Equals \[!Ref ChannelReservedConcurrency, "-1"\]\]`, `ReserveChannelConcurrency: !Equals ["a", "a"]`,
			"Value '-1' at 'reservedConcurrentExecutions' failed to satisfy constraint: Member must have value greater than or equal to 0"},
		{controlplane.RuleProtectedCreateRollback, `DeletionProtectionEnabled: !If \[ProtectTable, true, false\]`, `DeletionProtectionEnabled: true`,
			"ROLLBACK_FAILED: a failed create deletes Table (DeletionPolicy RetainExceptOnCreate), and the service refuses: \"Resource cannot be deleted as it is currently protected against deletion."},
		{controlplane.RuleQueueVisibility, `(EmailHighQueue:\n(?:    .*\n)*?      VisibilityTimeout: )\d+`, `${1}43201`, "Invalid value for the parameter VisibilityTimeout"},
		{controlplane.RuleQueueRetention, `(?m)^(      MessageRetentionPeriod: )\d+`, `${1}1209601`, "Invalid value for the parameter MessageRetentionPeriod"},
		{controlplane.RuleQueueDelay, `(EmailHighQueue:\n(?:    .*\n)*?      VisibilityTimeout: \d+\n)`, "${1}      DelaySeconds: 901\n", "DelaySeconds"},
		{controlplane.RuleQueueWait, `(EmailHighQueue:\n(?:    .*\n)*?      VisibilityTimeout: \d+\n)`, "${1}      ReceiveMessageWaitTimeSeconds: 21\n", "ReceiveMessageWaitTimeSeconds"},
		{controlplane.RuleQueueMessageSize, `(EmailHighQueue:\n(?:    .*\n)*?      VisibilityTimeout: \d+\n)`, "${1}      MaximumMessageSize: 512\n", "MaximumMessageSize"},
		{controlplane.RuleMaxReceiveCount, `(EmailHighQueue:\n(?:    .*\n)*?        maxReceiveCount: )\S+`, `${1}1001`, "valid values are from 1 to 1000"},
		{controlplane.RuleDLQSameType, `(EmailDLQ:\n(?:    .*\n)*?    Properties:\n)`, "${1}      FifoQueue: true\n", "Dead-letter target must be the same type of queue"},
		{controlplane.RuleGSICount, `(?m)^(      GlobalSecondaryIndexes:\n)`, "${1}" + manyGSIs, "at most 20 global secondary indexes"},
		{controlplane.RuleCorsWildcardCreds, `(\n          )allowOrigins: !Ref CorsAllowedOrigins\n`,
			"${1}allowOrigins: [\"*\"]${1}allowCredentials: true\n", "allow-credentials is not supported with a wildcard"},
		{controlplane.RuleCorsMaxAge, `(x-amazon-apigateway-cors:\n(?:          .*\n)*?          )maxAge: 600\n`,
			"${1}maxAge: 86401\n", "MaxAge 86401 is out of range"},
		{controlplane.RuleCorsObject, `(x-amazon-apigateway-cors:)\n(?:          .*\n)+`,
			"${1} !Ref CorsAllowedOrigins\n", "x-amazon-apigateway-cors is an array"},
		{controlplane.RuleWebSocketSelection, `(?m)^      RouteSelectionExpression: .*\n`, "", "RouteSelectionExpression is required"},
		{controlplane.RuleWebSocketAuthConnect, `(LiveDefaultRoute:\n(?:    .*\n)*?      RouteKey: \$default\n)`,
			"${1}      AuthorizationType: CUSTOM\n      AuthorizerId: !Ref LiveAuthorizer\n", "authorization is restricted to the $connect route"},
		{controlplane.RuleWebSocketAuthorizerType, `(LiveAuthorizer:\n(?:    .*\n)*?      AuthorizerType: )REQUEST`, "${1}JWT", "Only REQUEST authorizers"},
		{controlplane.RuleWebSocketIdentity, `route\.request\.querystring\.token`, "$$request.querystring.token", "Invalid identity source"},
		{controlplane.RuleEventBusName, `(?m)^(      Name: )!Join \["-", \[!Ref AWS::StackName, !Ref EventBusName\]\]`, "${1}default", "Event bus name \"default\""},
		{controlplane.RuleEventBusName, `(?m)^(      Name: )!Join \["-", \[!Ref AWS::StackName, !Ref EventBusName\]\]`, "${1}\"herald events\"", "must be 1 to 256 characters"},
		{controlplane.RuleAlarmText, `(ProviderRefusedAlarm:\n(?:    .*\n)*?      AlarmDescription: ")`, "${1}" + strings.Repeat("x", 1000), "'alarmDescription'"},
		{controlplane.RuleAlarmActions, `(ProviderRefusedAlarm:\n(?:    .*\n)*?      AlarmActions: \[)`, "${1}a, b, c, d, e, ", "'AlarmActions'"},
		{controlplane.RuleAlarmPeriod, `(ProviderRefusedAlarm:\n(?:    .*\n)*?            Period: )300`, "${1}90", "Period must be 10, 20, 30 or a multiple of 60"},
		{controlplane.RuleAlarmMetrics, `(ProviderRefusedAlarm:\n(?:    .*\n)*?        - Id: )sms`, "${1}email", "must be unique"},
		{controlplane.RuleAlarmMetrics, `(ProviderRefusedAlarm:\n(?:    .*\n)*?        - Id: )email`, "${1}Email", "start with a lowercase letter"},
		{controlplane.RuleAlarmReturnData, `(ProviderRefusedAlarm:\n(?:    .*\n)*?          )ReturnData: true`, "${1}ReturnData: false", "Exactly one element of the metrics list should return data (0 do)"},
		{controlplane.RuleAlarmReturnData, `(ProviderRefusedAlarm:\n(?:    .*\n)*?        - Id: email\n)          ReturnData: false\n`, "${1}", "Exactly one element of the metrics list should return data (2 do)"},
		{controlplane.RuleAlarmMetricsSingle, `(ProviderRefusedAlarm:\n(?:    .*\n)*?      EvaluationPeriods: 1\n)`, "${1}      Statistic: Sum\n", "Statistic should not be set if list of Metrics is set"},
	}
	// One parse per group of breaks, not per break: a parse is about a second
	// under -race and the check reports every violation of a template, so
	// breaks of different rules in disjoint parts of the template are checked
	// together. A group that misses a rule's violation runs that break alone
	// to tell a rule no longer enforced from breaks that interfere.
	for _, group := range groupRuleBreaks(t, raw, cases) {
		names := make([]string, len(group))
		for i, b := range group {
			names[i] = b.rule
		}
		t.Run(strings.Join(names, "+"), func(t *testing.T) {
			t.Parallel() // CPU only
			_, err := ParseTemplate([]byte(applyRuleBreaks(raw, group)), nil)
			var cpErr *controlplane.Error
			if !errors.As(err, &cpErr) {
				t.Fatalf("broken template loaded (err %v); want it refused for %s", err, strings.Join(names, ", "))
			}
			for _, b := range group {
				if b.refusedBy(cpErr) {
					continue
				}
				_, alone := ParseTemplate([]byte(applyRuleBreaks(raw, []ruleBreak{b})), nil)
				var aloneErr *controlplane.Error
				if errors.As(alone, &aloneErr) && b.refusedBy(aloneErr) {
					t.Errorf("%s is refused alone but not beside %v: the group's breaks interfere", b.rule, names)
					continue
				}
				t.Errorf("refused with\n%v\nwant rule %s and %q", alone, b.rule, b.message)
			}
		})
	}
}

// ruleCase is one way to break a rule AWS's control plane enforces: the
// first match of re in template.yaml becomes repl, and the template is
// refused with message under rule.
type ruleCase struct{ rule, re, repl, message string }

// ruleBreak is a case with its match in the committed template.
type ruleBreak struct {
	ruleCase
	start, end int
}

func (b ruleBreak) refusedBy(err *controlplane.Error) bool {
	for _, v := range err.Violations {
		if v.Rule == b.rule && strings.Contains(v.String(), b.message) {
			return true
		}
	}
	return false
}

// groupRuleBreaks places each break in the first group with no break of
// its rule and no edit touching its match (so each edit is made as it would
// be alone); it fails when a break's anchor is gone from the template.
func groupRuleBreaks(t *testing.T, raw string, cases []ruleCase) [][]ruleBreak {
	t.Helper()
	var groups [][]ruleBreak
next:
	for _, c := range cases {
		loc := regexp.MustCompile(c.re).FindStringIndex(raw)
		if loc == nil {
			t.Fatalf("template.yaml has no %q to break", c.re)
		}
		b := ruleBreak{c, loc[0], loc[1]}
	group:
		for i, g := range groups {
			for _, other := range g {
				if other.rule == b.rule || (b.start <= other.end && other.start <= b.end) {
					continue group
				}
			}
			groups[i] = append(g, b)
			continue next
		}
		groups = append(groups, []ruleBreak{b})
	}
	return groups
}

// applyRuleBreaks makes the group's edits from the last match to the first,
// so each is made at its place in the committed template.
func applyRuleBreaks(raw string, group []ruleBreak) string {
	sorted := slices.Clone(group)
	slices.SortFunc(sorted, func(a, b ruleBreak) int { return b.start - a.start })
	for _, b := range sorted {
		rx := regexp.MustCompile(b.re)
		loc := rx.FindStringSubmatchIndex(raw[b.start:])
		for i := range loc {
			if loc[i] >= 0 {
				loc[i] += b.start
			}
		}
		out := rx.ExpandString(nil, b.repl, raw, loc)
		raw = raw[:loc[0]] + string(out) + raw[loc[1]:]
	}
	return raw
}

// TestFreshAccountDeploys: the template's defaults pass the control plane's
// rules on a new account's Lambda quota (10: reserving any concurrency would
// fail the create), a reservation does not, and deletion protection is
// refused only with a policy that deletes the resource when a create fails.
func TestFreshAccountDeploys(t *testing.T) {
	raw, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fresh := controlplane.Options{AccountConcurrency: controlplane.NewAccountConcurrency}
	tm, err := ParseTemplate(raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := controlplane.Check(tm.Resolved, fresh); err != nil {
		t.Errorf("defaults on a new account (quota %d): %v", fresh.AccountConcurrency, err)
	}
	reserving, err := ParseTemplate(raw, map[string]string{"ChannelReservedConcurrency": "35", "RelayHighReservedConcurrency": "30"})
	if err != nil {
		t.Fatalf("reservations on the default 1,000: %v", err)
	}
	var cpErr *controlplane.Error
	err = controlplane.Check(reserving.Resolved, fresh)
	if !errors.As(err, &cpErr) || !cpErr.Has(controlplane.RuleUnreservedConcurrency) || !strings.Contains(err.Error(), "below its minimum value of [10]") {
		t.Errorf("135 reserved on a quota of 10: %v, want %s with minimum [10]", err, controlplane.RuleUnreservedConcurrency)
	}
	if err := controlplane.Check(reserving.Resolved, controlplane.Options{AccountConcurrency: 235}); err != nil {
		t.Errorf("135 reserved on a quota of 235 (100 left): %v", err)
	}
	if err := controlplane.Check(reserving.Resolved, controlplane.Options{AccountConcurrency: 234}); err == nil {
		t.Error("135 reserved on a quota of 234 (99 left): accepted")
	}
	// Retained even when the create fails: protection cannot block a delete
	// that never happens.
	retained := breakTemplate(t, string(raw), `(?m)^(  Table:\n    Type: AWS::DynamoDB::Table\n    DeletionPolicy: )RetainExceptOnCreate`, "${1}Retain")
	if _, err := ParseTemplate([]byte(retained), map[string]string{"TableDeletionProtection": "true"}); err != nil {
		t.Errorf("DeletionPolicy Retain with deletion protection: %v, want it accepted", err)
	}
	if _, err := ParseTemplate(raw, map[string]string{"TableDeletionProtection": "true"}); !errors.As(err, &cpErr) || !cpErr.Has(controlplane.RuleProtectedCreateRollback) {
		t.Errorf("RetainExceptOnCreate with TableDeletionProtection=true: %v, want %s", err, controlplane.RuleProtectedCreateRollback)
	}
}

// TestTemplateUpdateFromRelease: more than one GSI created or deleted in a
// table's update from the released template is refused, one is not; the
// release marker names a commit whose template this clone has.
func TestTemplateUpdateFromRelease(t *testing.T) {
	released, rev, err := controlplane.ReleasedTemplate("../..")
	if err != nil {
		t.Fatalf("released template: %v", err)
	}
	current, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := controlplane.CheckUpdate(released, current); err != nil {
		t.Fatalf("the committed template does not update from the release %s: %v", rev, err)
	}
	index := func(name string) string {
		return fmt.Sprintf("        - IndexName: %s\n          KeySchema: [{AttributeName: pk, KeyType: HASH}]\n          Projection: {ProjectionType: KEYS_ONLY}\n", name)
	}
	one := breakTemplate(t, string(released), `(?m)^(      GlobalSecondaryIndexes:\n)`, "${1}"+index("gsiNew"))
	if err := controlplane.CheckUpdate(released, []byte(one)); err != nil {
		t.Errorf("one GSI added refused: %v", err)
	}
	two := breakTemplate(t, one, `(?m)^(      GlobalSecondaryIndexes:\n)`, "${1}"+index("gsiNewer"))
	err = controlplane.CheckUpdate(released, []byte(two))
	var cpErr *controlplane.Error
	if !errors.As(err, &cpErr) || !cpErr.Has(controlplane.RuleGSIUpdate) || !strings.Contains(err.Error(), "Cannot perform more than one GSI creation or deletion in a single update") {
		t.Errorf("two GSIs added: %v; want %s", err, controlplane.RuleGSIUpdate)
	}
	// One added and one deleted is two changes too.
	swapped := breakTemplate(t, one, `(?m)^        - IndexName: gsi4\n`, "        - IndexName: gsi4renamed\n")
	if err := controlplane.CheckUpdate(released, []byte(swapped)); !errors.As(err, &cpErr) || !cpErr.Has(controlplane.RuleGSIUpdate) {
		t.Errorf("a GSI added and one renamed: %v; want %s", err, controlplane.RuleGSIUpdate)
	}
}

// TestTemplateUpdateNotesStreamReplaced: a table's StreamViewType changed
// from the released template is a release note (CloudFormation accepts it,
// but DynamoDB creates a new stream and the mappings reading it are
// replaced), naming both relay mappings; an unchanged stream is none.
func TestTemplateUpdateNotesStreamReplaced(t *testing.T) {
	released, _, err := controlplane.ReleasedTemplate("../..")
	if err != nil {
		t.Fatalf("released template: %v", err)
	}
	if notes, err := controlplane.UpdateNotes(released, released); err != nil || len(notes) != 0 {
		t.Fatalf("the released template against itself: %v %v", notes, err)
	}
	viewRe := regexp.MustCompile(`(?m)^        StreamViewType: (\S+)\n`)
	m := viewRe.FindSubmatch(released)
	if m == nil {
		t.Fatal("the released template's table has no StreamViewType")
	}
	other := "NEW_AND_OLD_IMAGES"
	if string(m[1]) == other {
		other = "NEW_IMAGE"
	}
	changed := breakTemplate(t, string(released), `(?m)^(        StreamViewType: )\S+\n`, "${1}"+other+"\n")
	notes, err := controlplane.UpdateNotes(released, []byte(changed))
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || notes[0].Rule != controlplane.RuleStreamReplaced || notes[0].Resource != "Table" ||
		!strings.Contains(notes[0].Message, "RelayHighStreamMapping, RelayStreamMapping") || !strings.Contains(notes[0].Message, "new stream") ||
		!strings.Contains(notes[0].Message, string(m[1])+" -> "+other) {
		t.Errorf("notes %v, want one %s on Table naming both relay mappings", notes, controlplane.RuleStreamReplaced)
	}
	// Not a refusal: CloudFormation performs the update.
	if err := controlplane.CheckUpdate(released, []byte(changed)); err != nil {
		t.Errorf("a stream view change refused: %v", err)
	}
	// The committed template: a note exactly when its view differs from the release's.
	current, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	notes, err = controlplane.UpdateNotes(released, current)
	if err != nil {
		t.Fatal(err)
	}
	streamNotes := 0
	for _, n := range notes {
		if n.Rule == controlplane.RuleStreamReplaced {
			streamNotes++
		}
	}
	cur := viewRe.FindSubmatch(current)
	if want := cur != nil && string(cur[1]) != string(m[1]); (streamNotes == 1) != want {
		t.Errorf("committed template (%s, released %s): notes %v", cur[1], m[1], notes)
	}
}

// TestTemplateUpdateNotesOffByDefault: deletion protection and reserved
// concurrency, on in a release before they became parameters off by
// default, are release notes on the update (with the defaults it would turn
// them off), one per resource; the same template is none.
func TestTemplateUpdateNotesOffByDefault(t *testing.T) {
	raw, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	current := string(raw)
	released := breakTemplate(t, current, `DeletionProtectionEnabled: !If \[ProtectTable, true, false\]`, "DeletionProtectionEnabled: true")
	released = regexp.MustCompile(`!If \[Reserve\w+Concurrency, (!Ref \w+), !Ref AWS::NoValue\]`).ReplaceAllString(released, "$1")
	notes, err := controlplane.UpdateNotes([]byte(released), raw)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, n := range notes {
		if n.Rule != controlplane.RuleStreamReplaced {
			got[n.Resource] = n.Rule
		}
	}
	want := map[string]string{
		"Table":             controlplane.RuleProtectionNowParameter,
		"EmailFunction":     controlplane.RuleReservationNowParameter,
		"SmsFunction":       controlplane.RuleReservationNowParameter,
		"PushFunction":      controlplane.RuleReservationNowParameter,
		"RelayHighFunction": controlplane.RuleReservationNowParameter,
	}
	if !maps.Equal(got, want) {
		t.Errorf("notes %v, want %v", notes, want)
	}
	if notes, err := controlplane.UpdateNotes(raw, raw); err != nil || len(notes) != 0 {
		t.Errorf("the template against itself: %v %v", notes, err)
	}
}

// TestStartRefusesWhatAWSRefuses: herald dev's loading path (Start) returns
// the control-plane error for a template Lambda would refuse, without waiting
// for the emulators booting meanwhile (it stops them); and for one whose
// update from the release CloudFormation would refuse.
func TestStartRefusesWhatAWSRefuses(t *testing.T) {
	raw, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name, re, repl, want string
	}{
		{"two mappings of the stream to one function", `FunctionName: !Ref RelayHighFunction`, `FunctionName: !Ref RelayFunction`,
			"ResourceConflictException: The event source arn"},
		{"two GSIs created in one update", `(?m)^(      GlobalSecondaryIndexes:\n)`,
			"${1}        - IndexName: a1\n          KeySchema: [{AttributeName: pk, KeyType: HASH}]\n          Projection: {ProjectionType: KEYS_ONLY}\n" +
				"        - IndexName: a2\n          KeySchema: [{AttributeName: pk, KeyType: HASH}]\n          Projection: {ProjectionType: KEYS_ONLY}\n",
			"Cannot perform more than one GSI creation or deletion in a single update"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
			if err := os.WriteFile(path, []byte(breakTemplate(t, string(raw), tc.re, tc.repl)), 0o644); err != nil {
				t.Fatal(err)
			}
			// make test's shared DynamoDB Local (a database of this stack's
			// own access key) when there is one, not a JVM of its own.
			st, err := Start(context.Background(), Config{Root: "../..", Template: path, APIAddr: "127.0.0.1:0", DynamoDB: os.Getenv(SharedDynamoDBEnv)})
			if err == nil {
				st.Stop()
				t.Fatal("the stack started")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Start = %v; want %q", err, tc.want)
			}
		})
	}
}
