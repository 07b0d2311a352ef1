// Package attack keeps the outside attack run of issue 13 as a test, on a
// private local stack with small retry settings: an idempotency storm,
// provider faults into the DLQ and out again by redrive, a hostile-request
// corpus across every route, forged tokens, poison work messages, and a scan
// of every function log line of the run for the personal data it used. It
// injects faults, so its tests do not run in parallel; it is bounded (a few
// hundred requests, seconds of backoff).
package attack

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
)

// logs captures every function's log output for the whole run.
var logs = &stacktest.LogBuffer{}

const settle = 30 * time.Second

func TestMain(m *testing.M) {
	var w io.Writer = logs
	if os.Getenv("HERALD_TEST_LOGS") != "" {
		w = io.MultiWriter(logs, os.Stderr)
	}
	stacktest.Main(m, devstack.Config{
		ScheduleInterval: time.Second,
		Overrides:        map[string]string{"BackoffBase": "1s", "BackoffCap": "2s", "MaxReceiveCount": "3"},
		Logs:             w,
	})
}

// waitDelivery waits for the notification's delivery on c to satisfy cond.
func waitDelivery(t testing.TB, id string, c domain.Channel, what string, cond func(*domain.Delivery) bool) *domain.Delivery {
	t.Helper()
	var got *domain.Delivery
	stacktest.Eventually(t, settle, what, func() bool {
		d, err := stacktest.Store(t).GetDelivery(context.Background(), id, c)
		if err != nil || !cond(d) {
			return false
		}
		got = d
		return true
	})
	return got
}

func status(s domain.Status) func(*domain.Delivery) bool {
	return func(d *domain.Delivery) bool { return d.Status == s }
}

// apiWrites counts the API function's DynamoDB writes so far.
func apiWrites(t testing.TB) int {
	n := 0
	for op, c := range stacktest.Stack(t).Calls.FunctionSnapshot("ApiFunction") {
		switch {
		case strings.Contains(op, "PutItem"), strings.Contains(op, "UpdateItem"), strings.Contains(op, "DeleteItem"),
			strings.Contains(op, "BatchWriteItem"), strings.Contains(op, "TransactWriteItems"):
			n += c
		}
	}
	return n
}

// sent counts what reached the sinks: emails, SMS, pushes.
func sent(t testing.TB) [4]int {
	st := stacktest.Stack(t)
	return [4]int{len(stacktest.Emails(t)), len(st.SMS.Messages()), len(st.Push.Messages()), len(st.SMS.MobileMessages())}
}

// request sends a raw HTTP request to the stack's API.
func request(t testing.TB, method, path string, body []byte, header http.Header) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, stacktest.Stack(t).APIURL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, resp.Header
}

// outcome is a refusal's identity: the problem code, or API Gateway's message.
func outcome(raw []byte) string {
	var v struct{ Code, Message string }
	_ = json.Unmarshal(raw, &v)
	if v.Code != "" {
		return v.Code
	}
	if v.Message != "" {
		return "gateway: " + v.Message
	}
	return ""
}

// dlqBodies peeks at a DLQ's messages: receives a few times, then makes
// what it received visible again at once (a zero VisibilityTimeout on the
// receive is not honoured by every emulator).
func dlqBodies(t testing.TB, dlqID string) []string {
	t.Helper()
	st := stacktest.Stack(t)
	client := sqs.NewFromConfig(st.AWS)
	url := aws.String(st.Resources.Queues[dlqID].URL)
	seen := map[string]sqstypes.Message{}
	for range 4 {
		res, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: 30})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) == 0 {
			break
		}
		for _, m := range res.Messages {
			seen[aws.ToString(m.MessageId)] = m
		}
	}
	var out []string
	var entries []sqstypes.ChangeMessageVisibilityBatchRequestEntry
	for _, m := range seen {
		out = append(out, aws.ToString(m.Body))
		entries = append(entries, sqstypes.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(fmt.Sprint(len(entries))), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0})
		if len(entries) == 10 {
			_, _ = client.ChangeMessageVisibilityBatch(context.Background(), &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: url, Entries: entries})
			entries = nil
		}
	}
	if len(entries) > 0 {
		_, _ = client.ChangeMessageVisibilityBatch(context.Background(), &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: url, Entries: entries})
	}
	return out
}

// tableDigest hashes every item of the table but the scheduler's own
// bookkeeping (its release watermark, advanced by every minute's run whatever
// the requests do): a refused request must leave it as it was.
func tableDigest(t testing.TB) string {
	t.Helper()
	st := stacktest.Stack(t)
	client := dynamodb.NewFromConfig(st.AWS)
	var lines []string
	p := dynamodb.NewScanPaginator(client, &dynamodb.ScanInput{TableName: aws.String(st.Resources.Table)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range page.Items {
			if pk, ok := item["pk"].(*types.AttributeValueMemberS); ok && pk.Value == "SCHEDULER" {
				continue
			}
			var m map[string]any
			if err := attributevalue.UnmarshalMap(item, &m); err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(m) // map keys are sorted
			lines = append(lines, string(b))
		}
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return fmt.Sprintf("%d items %x", len(lines), sum[:8])
}
