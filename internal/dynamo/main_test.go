package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
)

// The integration tests run against DynamoDB Local with the table
// template.yaml declares; -short skips them.
func TestMain(m *testing.M) { stacktest.MainEmulators(m, "dynamodb") }

// testClock is a settable clock for the store (transitions stamp updatedAt
// with it, seals stamp sealedAt).
type testClock struct{ unixNano atomic.Int64 }

func (c *testClock) Now() time.Time   { return time.Unix(0, c.unixNano.Load()).UTC() }
func (c *testClock) Set(t time.Time)  { c.unixNano.Store(t.UnixNano()) }
func newClock(t time.Time) *testClock { c := &testClock{}; c.Set(t); return c }

var t0 = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

// newStore returns a store over the emulated table, its raw client and clock
// (set to t0). Tests keep apart by unique ids, not by tables.
func newStore(t testing.TB, opts ...dynamo.Option) (*stacktest.Stores, *dynamodb.Client, *testClock) {
	t.Helper()
	e := stacktest.Emulators(t)
	db := e.DynamoDB()
	clock := newClock(t0)
	s := stacktest.NewStores(dynamo.New(db, e.Resources.Table, append([]dynamo.Option{dynamo.WithClock(clock.Now)}, opts...)...))
	return s, db, clock
}

var seq atomic.Int64

// uniq returns an id unique in this run, named after the test (user ids
// cannot contain '#').
func uniq(t testing.TB) string {
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-", "#", "-").Replace(t.Name()))
	return fmt.Sprintf("%s-%d", name[:min(len(name), 40)], seq.Add(1))
}

// rawItem reads an item as stored.
func rawItem(t testing.TB, db *dynamodb.Client, table, pk, sk string) map[string]types.AttributeValue {
	t.Helper()
	out, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}},
	})
	if err != nil {
		t.Fatalf("get %s/%s: %v", pk, sk, err)
	}
	return out.Item
}

func numAttr(t testing.TB, item map[string]types.AttributeValue, name string) string {
	t.Helper()
	n, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		t.Fatalf("attribute %s = %#v, want a number", name, item[name])
	}
	return n.Value
}

func notification(id, user string, created time.Time) *domain.Notification {
	return &domain.Notification{
		ID: id, Caller: "svc", Type: "comment.created", Recipient: domain.Recipient{UserID: user, Email: user + "@example.com"},
		Priority: domain.PriorityNormal, CreatedAt: created, Status: domain.NotificationAccepted,
		Data: map[string]any{"title": "hello"},
	}
}

func mustCreate(t testing.TB, s *stacktest.Stores, n *domain.Notification) {
	t.Helper()
	if _, err := s.CreateNotification(context.Background(), n); err != nil {
		t.Fatalf("create notification %s: %v", n.ID, err)
	}
}

func isNotFound(err error) bool { return errors.Is(err, domain.ErrNotFound) }
