// Package intake tests the service-facing API end to end on the local stack:
// idempotency under concurrency, batches, status and cancel, users, push
// subscriptions and preferences, and the AWS requests one notification costs.
package intake

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/dynamo"
)

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() == "^$" {
		os.Exit(m.Run()) // benchmarks only (make bench): this package has none, so no stack
	}
	// Short backoffs: nothing here waits on retries, but keep failures fast.
	// CampaignReconcileDelay as under make dev: the README's campaign reaches done in seconds.
	stacktest.Main(m, devstack.Config{Overrides: map[string]string{"BackoffBase": "1s", "BackoffCap": "2s", "CampaignReconcileDelay": "2s"}})
}

// inboxCount counts a user's unread notifications in the inbox index.
func inboxCount(t *testing.T, userID string) int {
	t.Helper()
	st := stacktest.Stack(t)
	db := stacktest.DB(t)
	out, err := db.Query(context.Background(), &dynamodb.QueryInput{
		TableName: aws.String(st.Resources.Table), IndexName: aws.String(dynamo.IndexInbox),
		KeyConditionExpression:    aws.String("gsi2pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: "UNREAD#" + userID}},
		Select:                    types.SelectCount,
	})
	if err != nil {
		t.Fatal(err)
	}
	return int(out.Count)
}

type accepted struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	CreatedAt string `json:"createdAt"`
}

type problem struct {
	Code    string `json:"code"`
	Pointer string `json:"pointer"`
	Status  int    `json:"status"`
}

type delivery struct {
	Status   string  `json:"status"`
	Reason   *string `json:"reason"`
	Attempts int     `json:"attempts"`
	DueAt    *string `json:"dueAt"`
}

type status struct {
	ID          string              `json:"id"`
	Status      string              `json:"status"`
	CancelledAt *string             `json:"cancelledAt"`
	Deliveries  map[string]delivery `json:"deliveries"`
}

func caller(name string) string { return devstack.DevCallerHeader + ": " + name }

func otp(user, code string) string {
	return fmt.Sprintf(`{"type":"otp.code","recipient":{"userId":%q},"data":{"code":%q}}`, user, code)
}

// getStatus reads a notification as caller.
func getStatus(t *testing.T, id, as string) (*stacktest.Response, status) {
	t.Helper()
	resp := stacktest.Do(t, http.MethodGet, "/v1/notifications/"+id, nil, caller(as))
	var s status
	if resp.StatusCode == http.StatusOK {
		resp.JSON(t, &s)
	}
	return resp, s
}

// waitDeliveries waits until the relay has planned n deliveries.
func waitDeliveries(t *testing.T, id, as string, n int, until func(map[string]delivery) bool) status {
	t.Helper()
	var s status
	stacktest.Eventually(t, 20*time.Second, fmt.Sprintf("%d deliveries of %s", n, id), func() bool {
		_, s = getStatus(t, id, as)
		return len(s.Deliveries) == n && (until == nil || until(s.Deliveries))
	})
	return s
}

func mustProblem(t *testing.T, resp *stacktest.Response, status int, code string) problem {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("%s %s = %d, want %d: %s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, status, resp.Body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		t.Fatalf("Content-Type = %q", ct)
	}
	var p problem
	resp.JSON(t, &p)
	if p.Code != code {
		t.Fatalf("code = %q, want %q (%s)", p.Code, code, resp.Body)
	}
	return p
}
