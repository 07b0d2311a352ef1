package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/heraldhq/herald/client"
	wire "github.com/heraldhq/herald/client/events"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/ops"
)

const settle = 30 * time.Second

type busEvent struct {
	At           time.Time       `json:"at"`
	Source       string          `json:"source"`
	DetailType   string          `json:"detail-type"`
	Detail       json.RawMessage `json:"detail"`
	MatchedRules []string        `json:"matchedRules"`
}

// busEvents lists what the local bus received (GET /_dev/events).
func busEvents(t testing.TB) []busEvent {
	t.Helper()
	var out struct{ Events []busEvent }
	resp := stacktest.Do(t, http.MethodGet, "/_dev/events", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /_dev/events = %d %s", resp.StatusCode, resp.Body)
	}
	resp.JSON(t, &out)
	return out.Events
}

// deliveryEvents are the delivery events of one notification, in order.
func deliveryEvents(t testing.TB, id string) ([]wire.DeliveryDetail, []busEvent) {
	t.Helper()
	var details []wire.DeliveryDetail
	var raw []busEvent
	for _, e := range busEvents(t) {
		if e.DetailType != wire.DeliveryDetailType {
			continue
		}
		var d wire.DeliveryDetail
		if err := json.Unmarshal(e.Detail, &d); err != nil {
			t.Fatalf("detail %s: %v", e.Detail, err)
		}
		if d.NotificationID == id {
			details, raw = append(details, d), append(raw, e)
		}
	}
	return details, raw
}

func statuses(ds []wire.DeliveryDetail) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Status)
	}
	return out
}

// waitEvent waits until the notification has a delivery event of status.
func waitEvent(t testing.TB, id, status string) {
	t.Helper()
	stacktest.Eventually(t, settle, fmt.Sprintf("a %s event of %s", status, id), func() bool {
		ds, _ := deliveryEvents(t, id)
		return slices.Contains(statuses(ds), status)
	})
}

func send(t testing.TB, caller, user, addr string) string {
	t.Helper()
	n := client.Notification{Type: "reservation.approved", Channels: []string{"email"},
		Recipient: client.Recipient{UserID: user, Email: addr}, Data: map[string]string{"reservationUrl": "https://example.com/r/" + user}}
	a, err := stacktest.Client(t, caller).Send(context.Background(), n)
	if err != nil {
		t.Fatalf("send as %s: %v", caller, err)
	}
	return a.ID
}

func inject(t testing.TB, ch, mode string, times int) {
	t.Helper()
	body := map[string]any{"channel": ch, "mode": mode}
	if times > 0 {
		body["times"] = times
	}
	if resp := stacktest.Do(t, http.MethodPost, "/_dev/faults", body); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("POST /_dev/faults = %d %s", resp.StatusCode, resp.Body)
	}
	t.Cleanup(func() { stacktest.Do(t, http.MethodPost, "/_dev/faults", map[string]any{"channel": ch, "mode": "off"}) })
}

func schemas(t testing.TB) map[string]*jsonschema.Schema {
	t.Helper()
	root, err := stacktest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	out := map[string]*jsonschema.Schema{}
	for dt, f := range map[string]string{wire.DeliveryDetailType: "delivery-state-change.json", wire.CampaignDetailType: "campaign-state-change.json"} {
		s, err := c.Compile(filepath.Join(root, "events", "schemas", f))
		if err != nil {
			t.Fatal(err)
		}
		out[dt] = s
	}
	return out
}

func validate(t testing.TB, s map[string]*jsonschema.Schema, e busEvent) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(e.Detail))
	if err != nil {
		t.Fatal(err)
	}
	if err := s[e.DetailType].Validate(v); err != nil {
		t.Errorf("%s %s does not validate: %v", e.DetailType, e.Detail, err)
	}
}

// TestDocumentedEvents: a notification sent, then bounced (SES feedback),
// and one failed permanently give exactly the documented events, each valid
// against its schema and free of addresses; the template's rule on caller
// and status delivers only billing's failures to its queue.
func TestDocumentedEvents(t *testing.T) {
	st := stacktest.Stack(t)
	user := stacktest.UniqueID("ev")
	addr := user + "@example.com"
	sent := send(t, "billing", user, addr)
	waitEvent(t, sent, "sent")
	bounce := fmt.Sprintf(`{"eventType":"Bounce","mail":{"timestamp":"2026-03-01T00:00:00.000Z","source":"notifications@example.com","messageId":"ses-%s","destination":[%q],"tags":{"notificationId":[%q],"type":["reservation_approved"]}},"bounce":{"bounceType":"Permanent","bounceSubType":"General","bouncedRecipients":[{"emailAddress":%q}]}}`,
		sent, addr, sent, addr)
	if resp := stacktest.Do(t, http.MethodPost, "/_dev/ses-events", bounce); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("Bounce = %d %s", resp.StatusCode, resp.Body)
	}
	waitEvent(t, sent, "bounced")

	inject(t, "email", "permanent", 1)
	failed := send(t, "billing", user+"-2", user+"-2@example.com")
	waitEvent(t, failed, "failed")
	inject(t, "email", "permanent", 1)
	other := send(t, "shop", user+"-3", user+"-3@example.com")
	waitEvent(t, other, "failed")

	sch := schemas(t)
	for _, c := range []struct {
		id, caller string
		want       []string
	}{{sent, "billing", []string{"sent", "bounced"}}, {failed, "billing", []string{"failed"}}, {other, "shop", []string{"failed"}}} {
		ds, raw := deliveryEvents(t, c.id)
		if got := statuses(ds); !slices.Equal(got, c.want) {
			t.Errorf("%s: events %v, want exactly %v", c.id, got, c.want)
		}
		ids := map[string]bool{}
		for i, d := range ds {
			validate(t, sch, raw[i])
			if raw[i].Source != "herald" {
				t.Errorf("source %q", raw[i].Source)
			}
			if !strings.HasSuffix(d.Caller, "/"+c.caller) || d.Type != "reservation.approved" || d.Channel != "email" || d.Attempts != 1 || d.UserID == "" || d.Version != "1" {
				t.Errorf("detail %+v", d)
			}
			if strings.Contains(string(raw[i].Detail), "@") {
				t.Errorf("event carries an address: %s", raw[i].Detail)
			}
			if ids[d.EventID] {
				t.Errorf("two states share event id %s", d.EventID)
			}
			ids[d.EventID] = true
		}
		for i, d := range ds {
			want := c.caller == "billing" && (d.Status == "failed" || d.Status == "bounced")
			if slices.Contains(raw[i].MatchedRules, "BillingFailuresRule") != want {
				t.Errorf("%s %s by %s: matched rules %v", c.id, d.Status, c.caller, raw[i].MatchedRules)
			}
		}
	}

	// The rule's queue: billing's bounced and failed, not its sent, not shop's failure.
	q := sqs.NewFromConfig(st.AWS)
	got := map[string]bool{}
	stacktest.Eventually(t, settle, "billing's failures in the rule's queue", func() bool {
		out, err := q.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(st.Resources.Queues["BillingFailuresQueue"].URL), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			ev, err := wire.Parse([]byte(aws.ToString(m.Body)))
			if err != nil {
				t.Fatal(err)
			}
			d, err := ev.Delivery()
			if err != nil {
				t.Fatal(err)
			}
			got[d.NotificationID+"/"+d.Status] = true
		}
		return got[sent+"/bounced"] && got[failed+"/failed"]
	})
	for k := range got {
		if k != sent+"/bounced" && k != failed+"/failed" {
			t.Errorf("the rule's queue got %s, which its pattern excludes", k)
		}
	}
}

// TestTransientPutEventsFailuresStillPublish: PutEvents failing three times
// in a row (every entry) delays the event, never loses it; any re-publication
// carries the same event id.
func TestTransientPutEventsFailuresStillPublish(t *testing.T) {
	st := stacktest.Stack(t)
	before := len(st.Faults.Hits("events"))
	inject(t, "events", "transient", 3)
	user := stacktest.UniqueID("tr")
	id := send(t, "billing", user, user+"@example.com")
	waitEvent(t, id, "sent")
	if hits := len(st.Faults.Hits("events")) - before; hits != 3 {
		t.Errorf("%d PutEvents calls failed, want 3", hits)
	}
	ds, _ := deliveryEvents(t, id)
	for _, d := range ds {
		if d.EventID != ds[0].EventID {
			t.Errorf("re-published with another id: %s, %s", d.EventID, ds[0].EventID)
		}
	}
	if parked(t, id) {
		t.Errorf("an event of %s parked although PutEvents recovered", id)
	}
}

// TestPermanentPutEventsFailureParksAndRedrives: events PutEvents keeps
// refusing are parked in the events DLQ; `herald dlq redrive events`
// publishes them once the bus accepts again.
func TestPermanentPutEventsFailureParksAndRedrives(t *testing.T) {
	inject(t, "events", "permanent", 0)
	user := stacktest.UniqueID("pm")
	id := send(t, "billing", user, user+"@example.com")
	stacktest.Eventually(t, settle, "the sent event parked", func() bool { return parked(t, id) })
	if ds, _ := deliveryEvents(t, id); len(ds) != 0 {
		t.Fatalf("events published during the fault: %v", statuses(ds))
	}
	stacktest.Do(t, http.MethodPost, "/_dev/faults", map[string]any{"channel": "events", "mode": "off"})

	out, err := herald(t, "redrive", "events", "--id", id, "--json")
	if err != nil {
		t.Fatalf("herald dlq redrive events: %v", err)
	}
	var res ops.RedriveResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(res.Items) != 1 || !res.Items[0].Done || res.Items[0].Event == nil || res.Items[0].Event.Status != "sent" {
		t.Fatalf("redrive %s", out.String())
	}
	ds, raw := deliveryEvents(t, id)
	if !slices.Equal(statuses(ds), []string{"sent"}) {
		t.Fatalf("after the redrive: %v", statuses(ds))
	}
	validate(t, schemas(t), raw[0])
	if parked(t, id) {
		t.Error("still parked after the redrive")
	}
}

// herald runs `herald dlq` against the package's stack.
func herald(t testing.TB, args ...string) (*bytes.Buffer, error) {
	t.Helper()
	path, err := ops.WriteState(t.TempDir(), stacktest.Stack(t).LocalState())
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err = ops.CLI{Stdout: &out, Stderr: &errOut, Connect: ops.DefaultConnect}.Run(context.Background(), append(args, "--state", path))
	t.Logf("herald dlq %s\n%s%s", strings.Join(args, " "), errOut.String(), out.String())
	return &out, err
}

// parked reports whether `herald dlq show events` lists an event of the
// notification (show leaves the messages visible, unlike a plain receive).
func parked(t testing.TB, id string) bool {
	t.Helper()
	out, err := herald(t, "show", "events", "--json")
	if errors.Is(err, ops.ErrEmpty) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	var ps []ops.Parked
	if err := json.Unmarshal(out.Bytes(), &ps); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, p := range ps {
		if p.Event != nil && p.Event.NotificationID == id {
			return true
		}
	}
	return false
}
