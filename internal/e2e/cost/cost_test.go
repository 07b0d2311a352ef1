// Package cost measures what a notification costs in AWS, per catalog type,
// on the local stack (and TestCapacityUnitsPerNotification holds the
// deterministic part, DynamoDB capacity units, to units_test.go's table): every DynamoDB call of every function asks for its
// consumed capacity per table and index (ReturnConsumedCapacity=INDEXES, a
// middleware the runner adds only for this benchmark), and the runner counts
// SQS requests, Lambda invocations with their duration, HTTP API requests
// and log bytes (JSON logs and EMF). Priced at AWS list prices
// (internal/capacity). Run by `make bench`:
//
//	go test -run '^$' -bench Cost -benchtime 1x ./internal/e2e/cost
//
// With COST_OUT=path the figures are written there as JSON
// (internal/capacity/testdata/measured.json is such a run, read by the
// capacity model's test).
package cost

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/capacity"
	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/events"
)

func TestMain(m *testing.M) {
	if !benchmarking() && slices.Contains(os.Args[1:], "-test.run=^$") {
		os.Exit(m.Run()) // make bench's other packages: no stack
	}
	// No periodic scheduler tick in the counts. Delivery events on, as
	// `make dev` runs them: their PutEvents entries and the relay's work for
	// them are measured and priced (capacity prices each DeliveryEvents mode).
	stacktest.Main(m, devstack.Config{ScheduleInterval: time.Hour, MeasureCapacity: true,
		Overrides: map[string]string{"DeliveryEvents": string(deliveryEvents)}})
}

// deliveryEvents is the runs' DeliveryEvents mode.
const deliveryEvents = events.ModeAll

func benchmarking() bool {
	for _, a := range os.Args[1:] {
		if v, ok := strings.CutPrefix(a, "-test.bench="); ok && v != "" && v != "^$" {
			return true
		}
	}
	return false
}

// scenario is one kind of notification: its body for a user, the channels
// it is delivered on, and what the user has (profile, push subscription).
type scenario struct {
	name     string
	batch    bool
	channels []domain.Channel
	push     bool // the user has one push subscription
	body     func(user string) map[string]any
}

func typed(typ string, channels []string, data map[string]any) func(string) map[string]any {
	return func(user string) map[string]any {
		b := map[string]any{"type": typ, "recipient": map[string]any{"userId": user}, "data": data}
		if channels != nil {
			b["channels"] = channels
		}
		return b
	}
}

var (
	reservation = map[string]any{"reservationUrl": "https://example.com/r/123456"}
	comment     = map[string]any{"actorLabel": "Ada", "url": "https://example.com/c/1"}
	otp         = func(user string) map[string]any {
		return map[string]any{"type": "otp.code", "recipient": map[string]any{"userId": user, "phone": "+15550100000"}, "data": map[string]any{"code": "123456"}}
	}
	email, sms, push = domain.ChannelEmail, domain.ChannelSMS, domain.ChannelPush
)

// Scenarios: `email`, `sms` and `push` are one notification of a
// single-channel type through single intake (with its in-app item); the
// catalog's types follow with all their channels.
var scenarios = []scenario{
	{name: "email", channels: []domain.Channel{email}, body: typed("reservation.approved", []string{"email"}, reservation)},
	{name: "email-batch", batch: true, channels: []domain.Channel{email}, body: typed("reservation.approved", []string{"email"}, reservation)},
	{name: "sms", channels: []domain.Channel{sms}, body: otp},
	{name: "sms-batch", batch: true, channels: []domain.Channel{sms}, body: otp},
	{name: "push", channels: []domain.Channel{push}, push: true, body: typed("comment.created", nil, comment)},
	{name: "push-batch", batch: true, channels: []domain.Channel{push}, push: true, body: typed("comment.created", nil, comment)},
	{name: "reservation.approved", channels: []domain.Channel{email, push}, push: true, body: typed("reservation.approved", nil, reservation)},
	{name: "invoice.payment_failed", channels: []domain.Channel{email, push}, push: true, body: typed("invoice.payment_failed", nil, map[string]any{"invoiceUrl": "https://example.com/i/9"})},
	{name: "security.login_alert", channels: []domain.Channel{email, sms}, body: typed("security.login_alert", nil, map[string]any{"url": "https://example.com/s"})},
	// A channel skipped at planning: the user has no push subscription, so
	// push ends skipped (no_contact) beside the sent email.
	{name: "reservation.approved-nopush", channels: []domain.Channel{email, push}, body: typed("reservation.approved", nil, reservation)},
}

// Measured is the file COST_OUT receives.
type Measured struct {
	Date      string                    `json:"date"`
	Prices    capacity.Prices           `json:"prices"`
	Usage     map[string]capacity.Usage `json:"usage"`
	Cost      map[string]capacity.Cost  `json:"costPerMillionUSD"`
	PerSample int                       `json:"notificationsPerScenario"`
	// ChannelBatch is the channel mappings' BatchSize per priority the run
	// had (the model prices with the same, capacity.TestModelAgreesWithMeasuredCost).
	ChannelBatch map[domain.Priority]float64 `json:"channelBatch"`
	// DeliveryEvents is the run's mode; SESFeedback whether SES's delivery
	// notifications (email delivered events) arrived: never locally.
	DeliveryEvents events.Mode `json:"deliveryEvents"`
	SESFeedback    bool        `json:"sesFeedback"`
}

func BenchmarkCost(b *testing.B) {
	st := stacktest.Stack(b)
	const n = 100
	out := Measured{Date: time.Now().UTC().Format(time.DateOnly), Prices: capacity.ListPrices, Usage: map[string]capacity.Usage{}, Cost: map[string]capacity.Cost{}, PerSample: n,
		DeliveryEvents: deliveryEvents}
	memory, traced := map[string]int{}, map[string]bool{}
	root, err := stacktest.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	limits, err := capacity.LoadLimits(filepath.Join(root, "template.yaml"), capacity.DefaultProfile())
	if err != nil {
		b.Fatal(err)
	}
	out.ChannelBatch = limits.Batch
	for _, fn := range st.Template.Functions() {
		memory[fn.LogicalID] = fn.MemorySize
		traced[fn.LogicalID] = fn.Tracing == "Active"
	}
	// An unmeasured round warms the emulators' JITs, which would otherwise
	// bill the first scenario's invocations for them.
	_, _ = measure(b, st, scenarios[0], 20, memory, traced)
	for range b.N {
		for _, sc := range scenarios {
			u, _ := measure(b, st, sc, n, memory, traced)
			out.Usage[sc.name] = u
			c := capacity.ListPrices.PerMillion(u)
			out.Cost[sc.name] = c
			b.ReportMetric(c.Total, "$/M-"+sc.name)
			b.Logf("%-24s $%.2f/M (provider fee $%.2f/M, storage over the retention $%.2f/M): %s", sc.name, c.Total, c.ProviderFee, c.Storage, breakdown(c))
		}
	}
	if path := os.Getenv("COST_OUT"); path != "" {
		raw, _ := json.MarshalIndent(out, "", "  ")
		if err := os.WriteFile(path, append(raw, '\n'), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

func breakdown(c capacity.Cost) string {
	var parts []string
	keys := make([]string, 0, len(c.DynamoDB))
	for k := range c.DynamoDB {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, c.DynamoDB[k]))
	}
	parts = append(parts, fmt.Sprintf("SQS %.2f", c.SQS), fmt.Sprintf("Lambda %.2f", c.Lambda), fmt.Sprintf("API %.2f", c.API), fmt.Sprintf("logs %.2f", c.Logs), fmt.Sprintf("X-Ray %.2f", c.XRay),
		fmt.Sprintf("events %.2f", c.Events))
	return strings.Join(parts, " · ")
}

// measure sends n notifications of sc to n fresh users (profile with email
// and phone, and a push subscription when sc wants one), waits until every
// delivery is final, and returns the usage per notification.
func measure(b testing.TB, st *devstack.Stack, sc scenario, n int, memory map[string]int, traced map[string]bool) (capacity.Usage, map[string]float64) {
	b.Helper()
	run := stacktest.UniqueID(strings.ReplaceAll(sc.name, ".", "-"))
	users := make([]string, n)
	parallel(n, 8, func(i int) {
		// UUID-shaped, as most deployments' user ids: the id is in three keys
		// of every notification copy, so its length shows in the storage.
		users[i] = randomUUID()
		if r := stacktest.Do(b, http.MethodPut, "/v1/users/"+users[i], map[string]any{"email": users[i] + "@example.com", "phone": "+15550100001", "locale": "en"}); r.StatusCode != http.StatusOK && r.StatusCode != http.StatusCreated {
			b.Errorf("PUT user = %d %s", r.StatusCode, r.Body)
		}
		if sc.push {
			sub := stacktest.Do(b, http.MethodPost, "/_dev/push-subscriptions", nil)
			var created struct {
				Endpoint string
				Keys     map[string]string
			}
			sub.JSON(b, &created)
			if r := stacktest.Do(b, http.MethodPost, "/v1/users/"+users[i]+"/push-subscriptions", map[string]any{"endpoint": created.Endpoint, "expirationTime": nil, "keys": created.Keys}); r.StatusCode != http.StatusCreated {
				b.Errorf("push subscription = %d %s", r.StatusCode, r.Body)
			}
		}
	})
	if b.Failed() {
		b.FailNow()
	}
	time.Sleep(2 * time.Second) // let the setup's own stream records pass
	st.Calls.Reset()
	st.Usage.Reset()

	ids := make([]string, n)
	api := 0
	if sc.batch {
		var items []map[string]any
		for i, u := range users {
			body := sc.body(u)
			body["idempotencyKey"] = fmt.Sprintf("%s-%d", run, i)
			items = append(items, body)
		}
		resp := stacktest.Do(b, http.MethodPost, "/v1/notifications/batch", map[string]any{"notifications": items})
		api++
		var res struct {
			Results []struct {
				Index, Status int
				ID            string
			}
		}
		resp.JSON(b, &res)
		for _, r := range res.Results {
			if r.Status != http.StatusAccepted {
				b.Fatalf("batch item %d = %d %s", r.Index, r.Status, resp.Body)
			}
			ids[r.Index] = r.ID
		}
	} else {
		var mu sync.Mutex
		parallel(n, 4, func(i int) {
			ids[i] = stacktest.Notify(b, sc.body(users[i]))
			mu.Lock()
			api++
			mu.Unlock()
		})
	}
	waitFinal(b, st, ids, sc.channels, 3*time.Minute)
	// Every final delivery publishes one Delivery State Change (mode all).
	entries := waitEvents(b, st, ids, len(ids)*len(sc.channels), 30*time.Second)
	time.Sleep(time.Second) // the last invocations finish their logs and metrics
	stored := storedBytes(b, st, ids)

	calls := st.Calls.Snapshot()
	usage := st.Usage.Snapshot()
	per := func(v float64) float64 { return v / float64(n) }
	u := capacity.Usage{WriteUnits: map[string]float64{}, ReadUnits: map[string]float64{}, Invocations: map[string]float64{}, GBSeconds: map[string]float64{},
		APIRequests: per(float64(api)), Emails: per(float64(calls["SESv2.SendEmail"])), SMS: per(float64(calls["SNS.Publish"])),
		StoredGBMonths: per(capacity.GBMonths(stored, dynamo.DefaultRetention)), EventEntries: per(entries)}
	for k, v := range usage.Capacity {
		kind, name, _ := strings.Cut(k, " ")
		if kind == "read" {
			u.ReadUnits[name] = per(v)
		} else {
			u.WriteUnits[name] = per(v)
		}
	}
	sqsTriggered := 0
	for fn, inv := range usage.Invocations {
		u.Invocations[fn] = per(float64(inv.Count))
		u.GBSeconds[fn] = per(inv.Duration.Seconds() * float64(memory[fn]) / 1024)
		if traced[fn] {
			u.TracedInvocations += per(float64(inv.Count))
		}
		if fn == "EmailFunction" || fn == "SmsFunction" || fn == "PushFunction" {
			sqsTriggered += inv.Count
		}
	}
	// SQS: what the functions send, plus one ReceiveMessage and one
	// DeleteMessageBatch per invocation of a queue-triggered function (the
	// mapping's, billed to the account; idle polls are a fixed cost).
	sent := 0
	for op, c := range calls {
		if strings.HasPrefix(op, "SQS.") && op != "SQS.ReceiveMessage" && op != "SQS.DeleteMessageBatch" {
			sent += c
		}
	}
	u.SQSRequests = per(float64(sent + 2*sqsTriggered))
	for _, bytes := range usage.LogBytes {
		u.LogBytes += per(float64(bytes))
	}
	level := st.Template.SystemLogLevel
	for _, inv := range usage.Invocations {
		u.PlatformLogBytes += per(float64(inv.Count) * capacity.PlatformLogBytes(level))
	}
	byOp := map[string]float64{}
	for k, v := range usage.CapacityByOperation {
		byOp[k] = per(v)
	}
	return u, byOp
}

// waitEvents waits until the stack's bus has received at least want events
// about the notifications ids (or timeout) and returns the billed PutEvents
// entries (64 KB chunks, as EventBridge counts an entry's size) of those it
// received.
func waitEvents(b testing.TB, st *devstack.Stack, ids []string, want int, timeout time.Duration) float64 {
	b.Helper()
	if st.Bus == nil {
		b.Fatal("the stack has no event bus")
	}
	ours := map[string]bool{}
	for _, id := range ids {
		ours[id] = true
	}
	count := func() (int, float64) {
		n, chunks := 0, 0.0
		for _, e := range st.Bus.Events() {
			var d struct {
				NotificationID string `json:"notificationId"`
			}
			if json.Unmarshal(e.Detail, &d) != nil || !ours[d.NotificationID] {
				continue
			}
			n++
			size := len(e.Source) + len(e.DetailType) + len(e.Detail) + 14 // Time
			chunks += float64((size + 64*1024 - 1) / (64 * 1024))
		}
		return n, chunks
	}
	deadline := time.Now().Add(timeout)
	for {
		n, chunks := count()
		if n >= want || time.Now().After(deadline) {
			if n < want {
				b.Errorf("%d delivery events for the run's notifications after %v, want %d", n, timeout, want)
			}
			return chunks
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// randomUUID is a version 4 UUID.
func randomUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// storedBytes sums what the notifications' partitions store once every
// delivery is final: each item, and its entry in each index it is in (the
// inbox index gsi2 projects every attribute, gsi3 — deferred deliveries
// only — a few),
// with DynamoDB's 100 bytes of overhead each. Read outside the counters.
func storedBytes(b testing.TB, st *devstack.Stack, ids []string) float64 {
	b.Helper()
	cfg := st.AWS.Copy()
	cfg.APIOptions = nil // not counted
	db := dynamodb.NewFromConfig(cfg)
	var mu sync.Mutex
	total := 0
	parallel(len(ids), 16, func(i int) {
		out, err := db.Query(context.Background(), &dynamodb.QueryInput{
			TableName: aws.String(st.Resources.Table), KeyConditionExpression: aws.String("pk = :pk"), ConsistentRead: aws.Bool(true),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: dynamo.NotificationPK(ids[i])}},
		})
		if err != nil {
			b.Error(err)
			return
		}
		n := 0
		for _, item := range out.Items {
			k := dynamo.StoredItemKeys(item)
			n += k.Size + capacity.StorageOverheadBytes
			for idx := range k.Index {
				n += k.Sparse[idx] + capacity.StorageOverheadBytes
			}
		}
		mu.Lock()
		total += n
		mu.Unlock()
	})
	return float64(total)
}

// waitFinal polls until every delivery on the channels is past sending.
func waitFinal(b testing.TB, st *devstack.Stack, ids []string, channels []domain.Channel, timeout time.Duration) {
	b.Helper()
	cfg := st.AWS.Copy()
	cfg.APIOptions = nil // not counted
	obs := stacktest.NewStores(dynamo.New(dynamodb.NewFromConfig(cfg), st.Resources.Table))
	deadline := time.Now().Add(timeout)
	for {
		pending := 0
		var mu sync.Mutex
		parallel(len(ids)*len(channels), 16, func(k int) {
			id, c := ids[k/len(channels)], channels[k%len(channels)]
			d, err := obs.GetDelivery(context.Background(), id, c)
			if err != nil || !final(d.Status) {
				mu.Lock()
				pending++
				mu.Unlock()
			}
		})
		if pending == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d deliveries not final after %v", pending, timeout)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func final(s domain.Status) bool {
	switch s {
	case domain.StatusSent, domain.StatusSkipped, domain.StatusDropped, domain.StatusFailed, domain.StatusDelivered:
		return true
	}
	return false
}

func parallel(n, width int, fn func(i int)) {
	sem := make(chan struct{}, width)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(i)
		})
	}
	wg.Wait()
}
