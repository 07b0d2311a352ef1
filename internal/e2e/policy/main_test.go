// Package policy holds the end-to-end tests of the delivery policy on the
// local stack: preferences, mandatory types, rate limits, quiet hours, sendAt,
// digests, stream retries and the relay DLQ. It moves the stack's clock, so
// it has a stack of its own.
package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
)

func TestMain(m *testing.M) {
	if onlyBenchmarks() { // make bench: this package has none, skip the stack
		os.Exit(m.Run())
	}
	// A short schedule so released deliveries go out within a second of the
	// clock passing their due time.
	stacktest.Main(m, devstack.Config{ScheduleInterval: 250 * time.Millisecond})
}

func onlyBenchmarks() bool {
	return slices.Contains(os.Args[1:], "-test.run=^$")
}

func putUser(t testing.TB, u domain.User) {
	t.Helper()
	s := stacktest.Store(t)
	if err := s.PutUser(context.Background(), &u); err != nil {
		t.Fatal(err)
	}
}

// putPrefs writes a user's preference item as the users API stores it.
func putPrefs(t testing.TB, userID string, prefs map[string]map[string]bool) {
	t.Helper()
	st := stacktest.Stack(t)
	item, err := attributevalue.MarshalMap(map[string]any{"pk": dynamo.UserPK(userID), "sk": "PREFS", "kind": "preferences", "prefs": prefs})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dynamodb.NewFromConfig(st.AWS).PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(st.Resources.Table), Item: item}); err != nil {
		t.Fatal(err)
	}
}

// addPushSubscription subscribes a browser of the local push service for the user.
func addPushSubscription(t testing.TB, userID string) string {
	t.Helper()
	st, s := stacktest.Stack(t), stacktest.Store(t)
	id, sub, err := st.Push.NewSubscription("")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddPushSubscription(context.Background(), userID, domain.PushSubscription{
		ID: id, Endpoint: sub.Endpoint, P256dh: sub.P256dh, Auth: sub.Auth, CreatedAt: st.Clock.Now(),
	}); err != nil {
		t.Fatal(err)
	}
	return id
}

func delivery(t testing.TB, id string, c domain.Channel) (domain.Delivery, bool) {
	t.Helper()
	s := stacktest.Store(t)
	_, ds, err := s.GetNotificationWithDeliveries(context.Background(), id)
	if err != nil {
		t.Fatalf("read notification %s: %v", id, err)
	}
	for _, d := range ds {
		if d.Channel == c {
			return d, true
		}
	}
	return domain.Delivery{}, false
}

// waitStatus waits for a delivery to reach a status and returns it.
func waitStatus(t testing.TB, id string, c domain.Channel, want domain.Status, timeout time.Duration) domain.Delivery {
	t.Helper()
	var d domain.Delivery
	var ok bool
	deadline := time.Now().Add(timeout)
	for {
		d, ok = delivery(t, id, c)
		if ok && d.Status == want {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivery %s/%s: %+v (exists %v), want %s", id, c, d, ok, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pushPayload is what the push function sends (internal/push).
type pushPayload struct {
	ID, Title, Body, URL string
}

func pushesTo(t testing.TB, subID string) []pushPayload {
	t.Helper()
	st := stacktest.Stack(t)
	var out []pushPayload
	for _, m := range st.Push.MessagesFor(subID) {
		var p pushPayload
		if err := json.Unmarshal(m.Body, &p); err != nil {
			t.Fatalf("push payload %q: %v", m.Body, err)
		}
		out = append(out, p)
	}
	return out
}

// advanceTo moves the stack's clock forward to at (never back).
func advanceTo(t testing.TB, at time.Time) {
	t.Helper()
	st := stacktest.Stack(t)
	if d := at.Sub(st.Clock.Now()); d > 0 {
		st.Clock.Advance(d)
	}
}

// uniqueUser names a user after the test, short enough to be the local part
// of an email address (at most 64 characters).
func uniqueUser(t testing.TB) string {
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	return stacktest.UniqueID(name[:min(len(name), 40)])
}

func reservation(user, email string, extra map[string]any) map[string]any {
	body := map[string]any{
		"type":      "reservation.approved",
		"recipient": map[string]any{"userId": user, "email": email},
		"data":      map[string]any{"reservationUrl": "https://example.com/r/" + user},
		"channels":  []string{"email"},
	}
	for k, v := range extra {
		body[k] = v
	}
	return body
}

func settle() { time.Sleep(time.Second) }

func fmtClock(t time.Time) string { return fmt.Sprintf("%02d:%02d", t.Hour(), t.Minute()) }
