package devstack

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/awslabs/goformation/v7/cloudformation/cloudwatch"

	"github.com/heraldhq/herald/internal/devstack/cfnyaml"
	"github.com/heraldhq/herald/internal/metrics"
)

// returnedExpression is the expression a metric math alarm watches (its
// query with ReturnData).
func returnedExpression(a *cloudwatch.Alarm) string {
	for _, q := range a.Metrics {
		if aws.ToBool(q.ReturnData) {
			return aws.ToString(q.Expression)
		}
	}
	return ""
}

// TestTemplateInvariants checks the deployable template for the properties the
// design depends on, by parsing it with goformation.
func TestTemplateInvariants(t *testing.T) {
	tm, err := LoadTemplate("../../template.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("functions are arm64 provided.al2023 with tracing and a make target", func(t *testing.T) {
		g := tm.GlobalFunction()
		fns := tm.GetAllServerlessFunctionResources()
		if len(fns) < 6 {
			t.Fatalf("only %d functions", len(fns))
		}
		for id, fn := range fns {
			runtime, _ := g["Runtime"].(string)
			if fn.Runtime != nil {
				runtime = *fn.Runtime
			}
			arch := g["Architectures"]
			if fn.Architectures != nil {
				arch = fn.Architectures
			}
			tracing, _ := g["Tracing"].(string)
			if fn.Tracing != nil {
				tracing = *fn.Tracing
			}
			if runtime != "provided.al2023" || !strings.Contains(jsonString(arch), `"arm64"`) || tracing != tm.Params["Tracing"] {
				t.Errorf("%s: runtime %q, architectures %v, tracing %q", id, runtime, arch, tracing)
			}
			if fn.AWSCloudFormationMetadata["BuildMethod"] != "makefile" {
				t.Errorf("%s: Metadata.BuildMethod must be makefile", id)
			}
			if !regexp.MustCompile(`(?m)^build-` + id + `:`).Match(makefile) {
				t.Errorf("%s: no build-%s target in the Makefile", id, id)
			}
		}
		// Tracing is the Tracing parameter (PassThrough by default, Active
		// opt-in) on every function; the cost benchmark and the capacity
		// model price X-Ray traces from the effective mode.
		if tm.Params["Tracing"] != "PassThrough" {
			t.Errorf("Tracing parameter default %q, want PassThrough", tm.Params["Tracing"])
		}
		active, err := LoadTemplate("../../template.yaml", map[string]string{"Tracing": "Active"})
		if err != nil {
			t.Fatal(err)
		}
		for _, spec := range active.Functions() {
			if spec.Tracing != "Active" {
				t.Errorf("%s: effective tracing %q with Tracing=Active", spec.LogicalID, spec.Tracing)
			}
		}
		for _, spec := range tm.Functions() {
			if spec.Tracing != "PassThrough" {
				t.Errorf("%s: effective tracing %q by default, want PassThrough", spec.LogicalID, spec.Tracing)
			}
		}
	})

	timeouts := map[string]int{}
	for _, fn := range tm.Functions() {
		timeouts[fn.LogicalID] = fn.Timeout
	}
	queues := tm.GetAllSQSQueueResources()
	workQueue := regexp.MustCompile(`^(Email|Sms|Push)(High|Normal|Low)Queue$`)

	t.Run("nine work queues redrive to their channel DLQ", func(t *testing.T) {
		n := 0
		for id, q := range queues {
			if !workQueue.MatchString(id) {
				continue
			}
			n++
			rp, _ := q.RedrivePolicy.(map[string]any)
			channel := workQueue.FindStringSubmatch(id)[1]
			if rp == nil || rp["deadLetterTargetArn"] != "${getatt:"+channel+"DLQ.Arn}" {
				t.Errorf("%s: redrive policy %v, want the %sDLQ", id, q.RedrivePolicy, channel)
			}
			if rp != nil && jsonString(rp["maxReceiveCount"]) != tm.Params["MaxReceiveCount"] {
				t.Errorf("%s: maxReceiveCount %v is not the MaxReceiveCount parameter", id, rp["maxReceiveCount"])
			}
		}
		if n != 9 {
			t.Errorf("%d work queues, want 9", n)
		}
		if tm.Params["MaxReceiveCount"] != "6" {
			t.Errorf("MaxReceiveCount default %q, want 6", tm.Params["MaxReceiveCount"])
		}
		// Every DLQ (a queue without a redrive policy of its own) keeps its
		// messages 14 days, SQS's maximum.
		for id, q := range queues {
			if q.RedrivePolicy == nil && (q.MessageRetentionPeriod == nil || *q.MessageRetentionPeriod != 1209600) {
				t.Errorf("%s: a DLQ must keep its messages 14 days", id)
			}
		}
	})

	t.Run("mappings", func(t *testing.T) {
		perFunction := map[string]map[string]int{}
		for id, m := range tm.GetAllLambdaEventSourceMappingResources() {
			fn := strings.TrimSuffix(strings.TrimPrefix(m.FunctionName, "${ref:"), "}")
			reports := false
			for _, r := range m.FunctionResponseTypes {
				reports = reports || r == "ReportBatchItemFailures"
			}
			if !reports {
				t.Errorf("%s: must report batch item failures", id)
			}
			src := aws.ToString(m.EventSourceArn)
			if strings.Contains(src, "StreamArn") {
				// The bulk and the high-priority relay, one mapping each.
				if (fn != "RelayFunction" && fn != "RelayHighFunction") || !aws.ToBool(m.BisectBatchOnFunctionError) || m.MaximumRetryAttempts == nil ||
					*m.MaximumRetryAttempts < 0 || m.MaximumRecordAgeInSeconds == nil || *m.MaximumRecordAgeInSeconds != -1 ||
					m.DestinationConfig == nil || m.DestinationConfig.OnFailure == nil ||
					aws.ToString(m.DestinationConfig.OnFailure.Destination) != "${getatt:RelayDLQ.Arn}" || m.FilterCriteria == nil {
					t.Errorf("%s: stream mapping must bisect, bound retries, never discard a record for its age (MaximumRecordAgeInSeconds -1: a backlog is relayed late), filter, and fail to the relay DLQ", id)
				}
				if !strings.Contains(aws.ToString(m.FilterCriteria.Filters[0].Pattern), `"INSERT"`) {
					t.Errorf("%s: filter must select INSERT", id)
				}
				continue
			}
			queueID := strings.TrimSuffix(strings.TrimPrefix(src, "${getatt:"), ".Arn}")
			q, ok := queues[queueID]
			if !ok {
				t.Errorf("%s: source %s is not a queue of this template", id, src)
				continue
			}
			if q.VisibilityTimeout == nil || *q.VisibilityTimeout < 6*timeouts[fn] {
				t.Errorf("%s: visibility timeout of %s must be ≥ 6 × %s's %ds timeout", id, queueID, fn, timeouts[fn])
			}
			if m.ScalingConfig == nil || m.ScalingConfig.MaximumConcurrency == nil {
				t.Errorf("%s: ScalingConfig.MaximumConcurrency required", id)
				continue
			}
			if queueID == "ReleaseQueue" {
				// The scheduler's release messages: one per due partition,
				// parked in their own DLQ.
				rp, _ := q.RedrivePolicy.(map[string]any)
				if fn != "SchedulerFunction" || rp == nil || rp["deadLetterTargetArn"] != "${getatt:ReleaseDLQ.Arn}" {
					t.Errorf("%s: the release queue must feed the scheduler and redrive to ReleaseDLQ (%v)", id, q.RedrivePolicy)
				}
				continue
			}
			if queueID == "LiveQueue" {
				// Live-inbox posts, parked in their own DLQ when malformed.
				rp, _ := q.RedrivePolicy.(map[string]any)
				if fn != "LivePostFunction" || rp == nil || rp["deadLetterTargetArn"] != "${getatt:LiveDLQ.Arn}" {
					t.Errorf("%s: the live queue must feed the live poster and redrive to LiveDLQ (%v)", id, q.RedrivePolicy)
				}
				continue
			}
			if queueID == "CampaignQueue" {
				// Campaign fan-out steps, parked in their own DLQ.
				rp, _ := q.RedrivePolicy.(map[string]any)
				if fn != "CampaignFunction" || rp == nil || rp["deadLetterTargetArn"] != "${getatt:CampaignDLQ.Arn}" {
					t.Errorf("%s: the campaign queue must feed the campaign function and redrive to CampaignDLQ (%v)", id, q.RedrivePolicy)
				}
				continue
			}
			prio := workQueue.FindStringSubmatch(queueID)[2]
			if lowPriorityQueue(queueID) != (prio == "Low") {
				t.Errorf("%s: the runner bounds its local pollers as low priority: %v, want %v", queueID, lowPriorityQueue(queueID), prio == "Low")
			}
			if perFunction[fn] == nil {
				perFunction[fn] = map[string]int{}
			}
			perFunction[fn][prio] = *m.ScalingConfig.MaximumConcurrency
		}
		for fn, c := range perFunction {
			if len(c) != 3 || !(c["High"] > c["Normal"] && c["Normal"] > c["Low"]) {
				t.Errorf("%s: concurrency per priority %v, want one mapping each with high > normal > low", fn, c)
			}
		}
		if len(perFunction) != 3 {
			t.Errorf("%d channel functions with SQS mappings, want 3", len(perFunction))
		}
	})

	t.Run("table", func(t *testing.T) {
		tbl, err := tm.GetDynamoDBTableWithName("Table")
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToString(tbl.BillingMode) != "PAY_PER_REQUEST" || tbl.SSESpecification == nil || !tbl.SSESpecification.SSEEnabled ||
			tbl.PointInTimeRecoverySpecification == nil || !aws.ToBool(tbl.PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled) ||
			tbl.TimeToLiveSpecification == nil || aws.ToString(tbl.TimeToLiveSpecification.AttributeName) != "ttl" ||
			tbl.StreamSpecification == nil || !strings.Contains(tbl.StreamSpecification.StreamViewType, "NEW_") {
			t.Errorf("table must be on-demand, encrypted, PITR, TTL on ttl, with a NEW image stream")
		}
		// Unprotected for the first create (its rollback must delete the
		// table), protected by an update with TableDeletionProtection=true.
		if aws.ToBool(tbl.DeletionProtectionEnabled) {
			t.Error("table has DeletionProtectionEnabled by default: a failed first create cannot roll back")
		}
		_, err = LoadTemplate("../../template.yaml", map[string]string{"TableDeletionProtection": "true"})
		if err == nil {
			t.Error("TableDeletionProtection=true loads as a create: want it refused by the control-plane rules (an update turns it on)")
		} else if !strings.Contains(err.Error(), "deletion-protection-blocks-create-rollback") {
			t.Errorf("TableDeletionProtection=true: %v, want the create-rollback rule", err)
		}
		// The delivery events (internal/events) compare a MODIFY's old and
		// new images: without the old one every update republishes a state.
		if tbl.StreamSpecification != nil && tbl.StreamSpecification.StreamViewType != "NEW_AND_OLD_IMAGES" {
			t.Errorf("stream view %s, want NEW_AND_OLD_IMAGES (the events compare old and new status)", tbl.StreamSpecification.StreamViewType)
		}
	})

	t.Run("least privilege", func(t *testing.T) {
		// Every Resource '*' must be explained by a comment just above it.
		lines := strings.Split(string(raw), "\n")
		for i, l := range lines {
			if strings.Contains(l, `Resource: "*"`) || strings.Contains(l, `Resource: '*'`) {
				explained := false
				for j := i - 1; j >= 0 && j >= i-6; j-- {
					if strings.Contains(lines[j], "#") && strings.Contains(strings.ToLower(lines[j]), "requires") {
						explained = true
					}
				}
				if !explained {
					t.Errorf("template.yaml:%d: Resource '*' without a comment saying why AWS requires it", i+1)
				}
			}
		}
	})

	t.Run("HTTP API auth", func(t *testing.T) {
		if !strings.Contains(string(raw), "EnableIamAuthorizer: true") || !strings.Contains(string(raw), "DefaultAuthorizer: AWS_IAM") {
			t.Error("service routes must default to AWS_IAM")
		}
		for _, p := range []string{"JwtIssuer", "JwtAudience"} {
			if _, ok := tm.Params[p]; !ok {
				t.Errorf("parameter %s missing", p)
			}
		}
		routes := transformedTemplate(t, "../../template.yaml", nil).Routes()
		if len(routes) < 20 {
			t.Fatalf("%d routes in the transformed template", len(routes))
		}
		for _, r := range routes {
			user := strings.Contains(r.Path, "/inbox") || r.Path == "/v1/push/config" || strings.HasSuffix(r.Path, "/presence") || strings.HasPrefix(r.Path, "/v1/me/")
			if user && r.Auth != "UserJwt" {
				t.Errorf("%s: user route must use the UserJwt authorizer", r.Key())
			}
			if !user && r.Auth != "AWS_IAM" && !strings.HasPrefix(r.Path, "/v1/unsubscribe") {
				t.Errorf("%s: service route must use AWS_IAM, has %s", r.Key(), r.Auth)
			}
		}
	})

	t.Run("email feedback: configuration set → SNS topic → feedback function", func(t *testing.T) {
		found := false
		for id, d := range tm.GetAllSESConfigurationSetEventDestinationResources() {
			ed := d.EventDestination
			types := strings.Join(ed.MatchingEventTypes, ",")
			if d.ConfigurationSetName != "${ref:EmailConfigurationSet}" || ed.SnsDestination == nil || ed.SnsDestination.TopicARN != "${ref:FeedbackTopic}" ||
				!aws.ToBool(ed.Enabled) || !strings.Contains(types, "delivery") || !strings.Contains(types, "bounce") || !strings.Contains(types, "complaint") {
				t.Errorf("%s: want delivery, bounce and complaint of EmailConfigurationSet published to FeedbackTopic", id)
			}
			found = true
		}
		if !found {
			t.Error("no SES event destination")
		}
		fn, err := tm.GetServerlessFunctionWithName("FeedbackFunction")
		if err != nil {
			t.Fatal(err)
		}
		subscribed := false
		for _, ev := range fn.Events {
			raw, _ := json.Marshal(ev.Properties)
			var p struct{ Topic string }
			_ = json.Unmarshal(raw, &p)
			subscribed = subscribed || (ev.Type == "SNS" && p.Topic == "${ref:FeedbackTopic}")
		}
		if !subscribed || fn.DeadLetterQueue == nil {
			t.Error("FeedbackFunction must subscribe to FeedbackTopic and park failed events in a DLQ")
		}
		policies := tm.GetAllSNSTopicPolicyResources()
		if p, ok := policies["FeedbackTopicPolicy"]; !ok || !strings.Contains(jsonString(p.PolicyDocument), "ses.amazonaws.com") || !strings.Contains(jsonString(p.PolicyDocument), "AWS:SourceArn") {
			t.Error("FeedbackTopicPolicy must let SES (this configuration set only) publish")
		}
		email, _ := tm.GetServerlessFunctionWithName("EmailFunction")
		if email == nil || email.Environment == nil || email.Environment.Variables["SES_CONFIGURATION_SET"] != "${ref:EmailConfigurationSet}" {
			t.Error("EmailFunction must send with the configuration set")
		}
	})

	t.Run("outputs", func(t *testing.T) {
		// herald dlq finds a deployment by these (internal/ops).
		// Every queue's URL, read from the template.
		want := []string{"ApiUrl", "TableName"}
		for id := range queues {
			want = append(want, id+"Url")
		}
		for _, o := range want {
			if _, ok := tm.Outputs[o]; !ok {
				t.Errorf("output %s missing", o)
			}
		}
	})
}

// TestTemplateOperations checks the alarms and the dashboard: every DLQ
// alarms on one visible message, every channel on its failure ratio, high
// priority on its p95 latency, all notifying the alarm topic, and they read
// the metrics internal/metrics emits, under the names and dimensions it uses.
func TestTemplateOperations(t *testing.T) {
	tm, err := LoadTemplate("../../template.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := tm.Params["AlarmTopicArn"]; !ok || p != "" {
		t.Errorf("parameter AlarmTopicArn must exist with an empty default (a topic is created then), got %q", p)
	}
	topic, ok := tm.Resources["AlarmTopic"]
	if !ok || topic.AWSCloudFormationType() != "AWS::SNS::Topic" || !strings.Contains(string(raw), "Condition: CreateAlarmTopic") {
		t.Error("AlarmTopic: an SNS topic created when AlarmTopicArn is empty")
	}
	alarms := tm.GetAllCloudWatchAlarmResources()
	// Conditions are not evaluated locally: read the actions unresolved.
	plain, err := cfnyaml.ToJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	var unresolved struct {
		Resources map[string]struct {
			Properties struct{ AlarmActions, OKActions []any }
		}
	}
	if err := json.Unmarshal(plain, &unresolved); err != nil {
		t.Fatal(err)
	}
	topicAction := `[{"Fn::If":["CreateAlarmTopic",{"Ref":"AlarmTopic"},{"Ref":"AlarmTopicArn"}]}]`
	notifies := func(id string) {
		a := alarms[id]
		p := unresolved.Resources[id].Properties
		if jsonString(p.AlarmActions) != topicAction || jsonString(p.OKActions) != topicAction {
			t.Errorf("%s: must notify the alarm topic (actions %s, OK actions %s)", id, jsonString(p.AlarmActions), jsonString(p.OKActions))
		}
		if a.TreatMissingData == nil || *a.TreatMissingData != "notBreaching" {
			t.Errorf("%s: missing data must not breach (no traffic is not an incident)", id)
		}
	}
	isMetric := func(name string) bool {
		for _, n := range metrics.Names() {
			if string(n) == name {
				return true
			}
		}
		return false
	}

	t.Run("every DLQ alarms on one visible message", func(t *testing.T) {
		// Every queue without a redrive policy of its own is a DLQ (of a
		// work queue, a stream mapping, an asynchronous invocation), read
		// from the template so that the next one cannot be missed.
		var dlqs []string
		for id, q := range tm.GetAllSQSQueueResources() {
			if q.RedrivePolicy == nil {
				dlqs = append(dlqs, id)
			}
		}
		slices.Sort(dlqs)
		if len(dlqs) < 7 {
			t.Errorf("DLQs %v: want at least the channels', relay's, feedback's, release's and campaign's", dlqs)
		}
		for _, dlq := range dlqs {
			found := ""
			for id, a := range alarms {
				if aws.ToString(a.Namespace) == "AWS/SQS" && len(a.Dimensions) == 1 && a.Dimensions[0].Name == "QueueName" &&
					a.Dimensions[0].Value == "${getatt:"+dlq+".QueueName}" {
					found = id
					if aws.ToString(a.MetricName) != "ApproximateNumberOfMessagesVisible" || a.Threshold == nil || *a.Threshold != 1 ||
						a.ComparisonOperator != "GreaterThanOrEqualToThreshold" || aws.ToInt(a.Period) > 300 {
						t.Errorf("%s: want ApproximateNumberOfMessagesVisible ≥ 1 within 5 minutes", id)
					}
				}
			}
			if found == "" {
				t.Errorf("no alarm on %s", dlq)
				continue
			}
			notifies(found)
		}
	})

	t.Run("failure ratio per channel over 15 minutes", func(t *testing.T) {
		for _, ch := range []string{"email", "sms", "push"} {
			found := ""
			for id, a := range alarms {
				stats := map[string]string{} // metric name → query id
				for _, q := range a.Metrics {
					if q.MetricStat == nil || q.MetricStat.Metric == nil {
						continue
					}
					m := q.MetricStat.Metric
					if aws.ToString(m.Namespace) == metrics.DefaultNamespace && len(m.Dimensions) == 1 &&
						m.Dimensions[0].Name == metrics.DimChannel && m.Dimensions[0].Value == ch {
						name := aws.ToString(m.MetricName)
						stats[name] = q.Id
						if (name == string(metrics.Failed) || name == string(metrics.Sent)) && (q.MetricStat.Period != 900 || q.MetricStat.Stat != "Sum") {
							t.Errorf("%s: %s must be summed over 900 s", id, name)
						}
					}
				}
				if stats["Failed"] == "" || stats["Sent"] == "" {
					continue
				}
				found = id
				expr := returnedExpression(a)
				f, s := stats["Failed"], stats["Sent"]
				if !strings.Contains(expr, "100 * FILL("+f+", 0) / (FILL("+s+", 0) + FILL("+f+", 0))") ||
					a.Threshold == nil || *a.Threshold != 5 || a.ComparisonOperator != "GreaterThanThreshold" {
					t.Errorf("%s: want 100·Failed/(Sent+Failed) > 5, got %q %v %s", id, expr, aws.ToFloat64(a.Threshold), a.ComparisonOperator)
				}
			}
			if found == "" {
				t.Errorf("no failure-ratio alarm for %s", ch)
				continue
			}
			notifies(found)
		}
	})

	t.Run("a provider's refusal of the account alarms on every channel", func(t *testing.T) {
		found := ""
		for id, a := range alarms {
			channels := map[string]string{} // channel → query id
			for _, q := range a.Metrics {
				if q.MetricStat == nil || q.MetricStat.Metric == nil || aws.ToString(q.MetricStat.Metric.MetricName) != string(metrics.ProviderRefused) {
					continue
				}
				m := q.MetricStat.Metric
				if aws.ToString(m.Namespace) == metrics.DefaultNamespace && len(m.Dimensions) == 1 && m.Dimensions[0].Name == metrics.DimChannel &&
					q.MetricStat.Stat == "Sum" && q.MetricStat.Period <= 300 {
					channels[m.Dimensions[0].Value] = q.Id
				}
			}
			if len(channels) == 0 {
				continue
			}
			found = id
			expr := returnedExpression(a)
			for _, ch := range []string{"email", "sms", "push"} {
				if channels[ch] == "" || !strings.Contains(expr, "FILL("+channels[ch]+", 0)") {
					t.Errorf("%s: %s's ProviderRefused (summed over at most 5 minutes) is not in %q", id, ch, expr)
				}
			}
			if a.Threshold == nil || *a.Threshold != 0 || a.ComparisonOperator != "GreaterThanThreshold" {
				t.Errorf("%s: want > 0 (one refusal is an incident)", id)
			}
		}
		if found == "" {
			t.Fatal("no alarm on ProviderRefused (SES sending paused, refused push credentials)")
		}
		notifies(found)
	})

	t.Run("high priority: p95 latency or a waiting message above 60 s", func(t *testing.T) {
		found := ""
		for id, a := range alarms {
			var latency string
			waits := map[string]string{} // queue logical id → query id
			for _, q := range a.Metrics {
				if q.MetricStat == nil || q.MetricStat.Metric == nil {
					continue
				}
				m := q.MetricStat.Metric
				switch aws.ToString(m.MetricName) {
				case string(metrics.DeliveryLatency):
					if aws.ToString(m.Namespace) == metrics.DefaultNamespace && q.MetricStat.Stat == "p95" && len(m.Dimensions) == 1 &&
						m.Dimensions[0].Name == metrics.DimPriority && m.Dimensions[0].Value == "high" {
						latency = q.Id
					}
				case "ApproximateAgeOfOldestMessage":
					if len(m.Dimensions) == 1 && q.MetricStat.Stat == "Maximum" {
						waits[strings.TrimSuffix(strings.TrimPrefix(m.Dimensions[0].Value, "${getatt:"), ".QueueName}")] = q.Id
					}
				}
			}
			if latency == "" {
				continue
			}
			found = id
			expr := returnedExpression(a)
			// Nothing sent must not read as healthy: the alarm takes the
			// worst of the p95 and each high queue's oldest message (s → ms).
			if !strings.HasPrefix(expr, "MAX([") || !strings.Contains(expr, "FILL("+latency+", 0)") {
				t.Errorf("%s: expression %q must be MAX over FILL(%s, 0) and the queue waits", id, expr, latency)
			}
			for _, q := range []string{"EmailHighQueue", "SmsHighQueue", "PushHighQueue"} {
				if waits[q] == "" || !strings.Contains(expr, "1000 * FILL("+waits[q]+", 0)") {
					t.Errorf("%s: the oldest message of %s (in ms) is not in %q", id, q, expr)
				}
			}
			if a.Threshold == nil || *a.Threshold != 60000 || a.ComparisonOperator != "GreaterThanThreshold" {
				t.Errorf("%s: want > 60000 ms", id)
			}
		}
		if found == "" {
			t.Fatal("no latency alarm")
		}
		notifies(found)
	})

	t.Run("per function: Errors and Throttles", func(t *testing.T) {
		for fn := range tm.GetAllServerlessFunctionResources() {
			for _, metric := range []string{"Errors", "Throttles"} {
				found := ""
				for id, a := range alarms {
					if aws.ToString(a.Namespace) == "AWS/Lambda" && aws.ToString(a.MetricName) == metric &&
						len(a.Dimensions) == 1 && a.Dimensions[0].Name == "FunctionName" && a.Dimensions[0].Value == "${ref:"+fn+"}" {
						found = id
						if aws.ToString(a.Statistic) != "Sum" || a.Threshold == nil || *a.Threshold != 1 || a.ComparisonOperator != "GreaterThanOrEqualToThreshold" {
							t.Errorf("%s: want Sum of %s ≥ 1", id, metric)
						}
					}
				}
				if found == "" {
					t.Errorf("no %s alarm for %s", metric, fn)
					continue
				}
				notifies(found)
			}
		}
	})

	t.Run("relay iterator age and high-priority queue age", func(t *testing.T) {
		want := map[string]string{ // dimension value → metric
			"${ref:RelayFunction}":               "IteratorAge",
			"${getatt:EmailHighQueue.QueueName}": "ApproximateAgeOfOldestMessage",
			"${getatt:SmsHighQueue.QueueName}":   "ApproximateAgeOfOldestMessage",
			"${getatt:PushHighQueue.QueueName}":  "ApproximateAgeOfOldestMessage",
		}
		for dim, metric := range want {
			found := ""
			for id, a := range alarms {
				if aws.ToString(a.MetricName) == metric && len(a.Dimensions) == 1 && a.Dimensions[0].Value == dim {
					found = id
					if aws.ToString(a.Statistic) != "Maximum" || a.Threshold == nil || a.ComparisonOperator != "GreaterThanThreshold" {
						t.Errorf("%s: want Maximum %s above a threshold", id, metric)
					}
				}
			}
			if found == "" {
				t.Errorf("no %s alarm on %s", metric, dim)
				continue
			}
			notifies(found)
		}
	})

	t.Run("capacity: the table and each index throttled, normal and low queue age, SES reputation, SMS, API 5xx and 429", func(t *testing.T) {
		// Throttle events of the table and of every index it declares.
		want := []string{""}
		for _, table := range tm.GetAllDynamoDBTableResources() {
			for _, g := range table.GlobalSecondaryIndexes {
				want = append(want, g.IndexName)
			}
		}
		if len(want) < 4 {
			t.Errorf("indexes %v", want[1:])
		}
		for _, index := range want {
			found := ""
			for id, a := range alarms {
				read, write := false, false
				for _, q := range a.Metrics {
					if q.MetricStat == nil || aws.ToString(q.MetricStat.Metric.Namespace) != "AWS/DynamoDB" {
						continue
					}
					gsi := ""
					for _, d := range q.MetricStat.Metric.Dimensions {
						if d.Name == "GlobalSecondaryIndexName" {
							gsi = d.Value
						}
					}
					if gsi != index {
						continue
					}
					read = read || aws.ToString(q.MetricStat.Metric.MetricName) == "ReadThrottleEvents"
					write = write || aws.ToString(q.MetricStat.Metric.MetricName) == "WriteThrottleEvents"
				}
				if read && write {
					found = id
				}
			}
			if found == "" {
				t.Errorf("no throttle alarm (read and write throttle events) on %q", index)
				continue
			}
			notifies(found)
		}
		// Every normal and low work queue: the age of its oldest message.
		for id := range tm.GetAllSQSQueueResources() {
			if !strings.HasSuffix(id, "NormalQueue") && !strings.HasSuffix(id, "LowQueue") {
				continue
			}
			found := ""
			for aid, a := range alarms {
				if aws.ToString(a.MetricName) == "ApproximateAgeOfOldestMessage" && len(a.Dimensions) == 1 && a.Dimensions[0].Value == "${getatt:"+id+".QueueName}" {
					found = aid
				}
			}
			if found == "" {
				t.Errorf("no queue age alarm on %s", id)
				continue
			}
			notifies(found)
		}
		for _, m := range []struct{ ns, name string }{{"AWS/SES", "Reputation.BounceRate"}, {"AWS/SES", "Reputation.ComplaintRate"},
			{"AWS/SNS", "SMSSuccessRate"}, {"AWS/SNS", "SMSMonthToDateSpentUSD"}, {"AWS/ApiGateway", "5xx"}, {"Herald/HttpApi", "Throttled429"}} {
			found := ""
			for id, a := range alarms {
				if aws.ToString(a.Namespace) == m.ns && aws.ToString(a.MetricName) == m.name {
					found = id
				}
			}
			if found == "" {
				t.Errorf("no alarm on %s %s", m.ns, m.name)
				continue
			}
			notifies(found)
		}
		if !strings.Contains(string(raw), "MetricName: Throttled429") || !strings.Contains(string(raw), `FilterPattern: '{ $.status = "429" }'`) {
			t.Error("429s are not counted from the access log")
		}
	})

	t.Run("due entries behind the scheduler's watermark", func(t *testing.T) {
		found := ""
		for id, a := range alarms {
			if aws.ToString(a.Namespace) == metrics.DefaultNamespace && aws.ToString(a.MetricName) == string(metrics.DueBehindWatermark) {
				found = id
				// The scheduler records it without dimensions (one sweep a minute).
				if len(a.Dimensions) != 0 || aws.ToString(a.Statistic) != "Sum" || a.Threshold == nil || *a.Threshold != 1 ||
					a.ComparisonOperator != "GreaterThanOrEqualToThreshold" {
					t.Errorf("%s: want the Sum of DueBehindWatermark, no dimensions, ≥ 1", id)
				}
			}
		}
		if found == "" {
			t.Fatal("no alarm on DueBehindWatermark")
		}
		notifies(found)
	})

	// PutMetricAlarm's rules (CloudWatch API reference): a name of 1–255
	// characters (the stack's name takes up to 128), a description of at
	// most 1,024, a period of 10, 20, 30 or a multiple of 60 seconds, and
	// period × evaluation periods at most a day below an hour's period, at
	// most seven days otherwise.
	t.Run("every alarm within PutMetricAlarm's limits", func(t *testing.T) {
		const localStack, longestStack = "herald-local", 128
		for id, a := range alarms {
			if n := len(aws.ToString(a.AlarmName)) - len(localStack) + longestStack; n > 255 {
				t.Errorf("%s: a name of %d characters under a 128-character stack name, more than 255", id, n)
			}
			if n := len(aws.ToString(a.AlarmDescription)); n > 1024 {
				t.Errorf("%s: a description of %d characters, more than 1,024", id, n)
			}
			periods := []int{aws.ToInt(a.Period)}
			for _, q := range a.Metrics {
				if q.MetricStat != nil {
					periods = append(periods, q.MetricStat.Period)
				}
			}
			for _, p := range periods {
				if p == 0 {
					continue // no period here: a metric-math alarm's is on its queries
				}
				if p != 10 && p != 20 && p != 30 && p%60 != 0 {
					t.Errorf("%s: period %d s, want 10, 20, 30 or a multiple of 60", id, p)
				}
				limit := 86400
				if p >= 3600 {
					limit = 604800
				}
				if span := p * a.EvaluationPeriods; span > limit {
					t.Errorf("%s: period × evaluation periods = %d s, more than %d", id, span, limit)
				}
			}
		}
	})

	t.Run("alarms read metrics the code emits", func(t *testing.T) {
		for id, a := range alarms {
			if aws.ToString(a.Namespace) == metrics.DefaultNamespace && !isMetric(aws.ToString(a.MetricName)) {
				t.Errorf("%s: metric %q is not emitted by internal/metrics", id, aws.ToString(a.MetricName))
			}
			for _, q := range a.Metrics {
				if q.MetricStat != nil && aws.ToString(q.MetricStat.Metric.Namespace) == metrics.DefaultNamespace && !isMetric(aws.ToString(q.MetricStat.Metric.MetricName)) {
					t.Errorf("%s: metric %q is not emitted by internal/metrics", id, aws.ToString(q.MetricStat.Metric.MetricName))
				}
			}
		}
	})

	t.Run("dashboard", func(t *testing.T) {
		dashboards := tm.GetAllCloudWatchDashboardResources()
		if len(dashboards) != 1 {
			t.Fatalf("%d dashboards, want 1", len(dashboards))
		}
		for id, d := range dashboards {
			var body struct {
				Widgets []struct {
					Type       string `json:"type"`
					Properties struct {
						Title   string `json:"title"`
						Alarms  []string
						Metrics [][]any `json:"metrics"`
					} `json:"properties"`
				} `json:"widgets"`
			}
			if err := json.Unmarshal([]byte(d.DashboardBody), &body); err != nil {
				t.Fatalf("%s: body is not JSON: %v", id, err)
			}
			var titles []string
			for _, w := range body.Widgets {
				titles = append(titles, w.Properties.Title)
				if w.Type == "alarm" && len(w.Properties.Alarms) != len(alarms) {
					t.Errorf("%s: the alarm widget shows %d alarms, the template has %d", id, len(w.Properties.Alarms), len(alarms))
				}
			}
			for _, want := range []string{"DLQ depth", "Failure ratio", "latency", "per provider"} {
				if !strings.Contains(strings.Join(titles, "|"), want) {
					t.Errorf("%s: no %q panel in %v", id, want, titles)
				}
			}
			// Every Herald metric a panel names is one internal/metrics
			// emits, and sends and failures are shown per provider (issue 38).
			searched := map[string]string{} // metric name → the dimensions it is searched by
			for _, w := range body.Widgets {
				for _, row := range w.Properties.Metrics {
					if len(row) >= 2 && row[0] == metrics.DefaultNamespace {
						if name := fmt.Sprint(row[1]); !isMetric(name) {
							t.Errorf("%s: panel %q shows %s, which internal/metrics does not emit", id, w.Properties.Title, name)
						}
					}
					if len(row) == 0 {
						continue
					}
					opts, _ := row[0].(map[string]any)
					expr, _ := opts["expression"].(string)
					for _, m := range dashboardSearch.FindAllStringSubmatch(expr, -1) {
						if !isMetric(m[2]) {
							t.Errorf("%s: panel %q searches %s, which internal/metrics does not emit", id, w.Properties.Title, m[2])
						}
						searched[m[2]] = m[1]
					}
				}
			}
			for _, name := range []metrics.Name{metrics.ProviderSent, metrics.ProviderFailed} {
				if !strings.Contains(searched[string(name)], metrics.DimProvider) {
					t.Errorf("%s: no panel shows %s by %s (searched: %v)", id, name, metrics.DimProvider, searched)
				}
			}
			// Every DLQ (a queue without a redrive policy of its own) is on
			// the DLQ panel. Locally ${Queue.QueueName} resolves to "", so
			// the panel is read from the unresolved Fn::Sub body.
			var dlqPanel string
			var sub struct {
				Resources map[string]struct {
					Properties struct{ DashboardBody map[string]string }
				}
			}
			_ = json.Unmarshal(plain, &sub)
			var unresolvedBody struct {
				Widgets []struct {
					Properties struct {
						Title   string  `json:"title"`
						Metrics [][]any `json:"metrics"`
					} `json:"properties"`
				} `json:"widgets"`
			}
			if err := json.Unmarshal([]byte(sub.Resources[id].Properties.DashboardBody["Fn::Sub"]), &unresolvedBody); err != nil {
				t.Fatalf("%s: unresolved body: %v", id, err)
			}
			// Every function's Errors and Throttles are on the functions panel.
			lambdaRows := map[string]bool{} // "Errors ${ApiFunction}" …
			for _, w := range unresolvedBody.Widgets {
				if strings.Contains(w.Properties.Title, "DLQ depth") {
					dlqPanel = jsonString(w.Properties.Metrics)
				}
				for _, row := range w.Properties.Metrics {
					if len(row) >= 4 && row[0] == "AWS/Lambda" && row[2] == "FunctionName" {
						lambdaRows[fmt.Sprint(row[1], " ", row[3])] = true
					}
				}
			}
			for fn := range tm.GetAllServerlessFunctionResources() {
				for _, metric := range []string{"Errors", "Throttles"} {
					if !lambdaRows[metric+" ${"+fn+"}"] {
						t.Errorf("%s: %s of %s is not on a dashboard panel", id, metric, fn)
					}
				}
			}
			for qid, q := range tm.GetAllSQSQueueResources() {
				if q.RedrivePolicy == nil && !strings.Contains(dlqPanel, "${"+qid+".QueueName}") {
					t.Errorf("%s: DLQ %s is not on the DLQ depth panel", id, qid)
				}
			}
		}
		for aid := range alarms {
			if !strings.Contains(string(raw), "${"+aid+".Arn}") {
				t.Errorf("alarm %s is not on the dashboard", aid)
			}
		}
	})
}

// dashboardSearch is a dashboard SEARCH of a Herald metric: its schema's
// dimensions and the metric name.
var dashboardSearch = regexp.MustCompile(`SEARCH\('\{Herald,([A-Za-z,]*)\} MetricName="([A-Za-z]+)"`)

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return strings.Trim(string(b), `"`)
}
