package intake

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

// TestRequestsPerAcceptedNotification counts the AWS requests the API
// function makes per notification. The relay and the channel workers run in
// the same process and use the same counted clients, so the count is taken
// per function: the runner gives every invocation a Lambda context naming its
// function, and devstack.Calls files each request under it. Only requests
// made while serving POST /v1/notifications are counted here.
func TestRequestsPerAcceptedNotification(t *testing.T) {
	st := stacktest.Stack(t)
	user := stacktest.UniqueID("calls")
	const n = 20
	send := func(i int) *stacktest.Response {
		return stacktest.Do(t, http.MethodPost, "/v1/notifications", otp(user, fmt.Sprintf("%06d", i)),
			caller("svc-a"), fmt.Sprintf("Idempotency-Key: %s-%d", user, i))
	}

	st.Calls.Reset()
	for i := range n {
		if r := send(i); r.StatusCode != http.StatusAccepted || r.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("POST = %d %s", r.StatusCode, r.Body)
		}
	}
	accepted := st.Calls.FunctionSnapshot("ApiFunction")
	t.Logf("API function, %d accepted notifications: %s", n, describe(accepted))
	if accepted["DynamoDB.PutItem"] != n || total(accepted) != n {
		t.Errorf("want exactly %d DynamoDB.PutItem and nothing else, got %v", n, accepted)
	}
	// The relay did its own work meanwhile, counted under its own name (OTPs
	// are high priority: the high-priority relay's).
	stacktest.Eventually(t, 10*time.Second, "relay activity", func() bool {
		return st.Calls.FunctionSnapshot("RelayHighFunction")["DynamoDB.PutItem"] >= n
	})
	if again := st.Calls.FunctionSnapshot("ApiFunction"); total(again) != n {
		t.Errorf("API function counts moved with the relay's work: %v", again)
	}

	st.Calls.Reset()
	for i := range n {
		if r := send(i); r.StatusCode != http.StatusAccepted || r.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay = %d %s", r.StatusCode, r.Body)
		}
	}
	replayed := st.Calls.FunctionSnapshot("ApiFunction")
	t.Logf("API function, %d replays: %s", n, describe(replayed))
	// A replay is the same one conditional write, which fails and returns the
	// stored item; an emulator that does not return it costs one read more.
	if replayed["DynamoDB.PutItem"] != n || replayed["DynamoDB.GetItem"] > n || total(replayed) != n+replayed["DynamoDB.GetItem"] {
		t.Errorf("replays: want %d PutItem and at most %d GetItem, got %v", n, n, replayed)
	}
}

func total(m map[string]int) int {
	s := 0
	for _, v := range m {
		s += v
	}
	return s
}

func describe(m map[string]int) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}
