// Package dynamo is Herald's DynamoDB adapter: one table, items keyed by pk/sk,
// three sparse GSIs (inbox listing, unread items, deferred deliveries by due
// time). It translates between items and domain types and turns conditional
// write failures into domain.ErrConflict.
package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
)

// API is the subset of the DynamoDB client the store uses.
type API interface {
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchWriteItem(context.Context, *dynamodb.BatchWriteItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
	BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	// Scan reads the profiles index (segment-"all" campaigns), and the
	// table in the operator's migration (herald migrate inbox-index).
	Scan(context.Context, *dynamodb.ScanInput, ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Index names, as declared in template.yaml.
const (
	// IndexInbox is sparse: a user's notifications in one partition per
	// state (UNREAD#, READ#, ARCHIVED#<user>) and the announcements
	// (inbox.go). gsi1, the former inbox listing, is read by nothing.
	IndexInbox = "gsi2"
	IndexDue   = "gsi3"
	// IndexProfiles is sparse and KEYS_ONLY: profile items only (gsi4pk is
	// the user id), scanned in parallel segments by a segment-"all" campaign.
	IndexProfiles = "gsi4"
)

// Table is the table client every feature store holds: the SDK client,
// the table name, the clock and the retention, with the item helpers the
// features share. It serves no consumer itself: each consumer gets the
// feature stores it uses (Stores).
type Table struct {
	db        API
	table     string
	now       func() time.Time
	retention time.Duration
}

// Option configures a Table.
type Option func(*Table)

// WithClock replaces time.Now (tests and the dev runner's clock offset).
func WithClock(now func() time.Time) Option { return func(s *Table) { s.now = now } }

// WithRetention sets how long notifications live before TTL deletes them.
func WithRetention(d time.Duration) Option { return func(s *Table) { s.retention = d } }

// DefaultRetention is how long a notification, its deliveries and its dedupe
// key are kept.
const DefaultRetention = 90 * 24 * time.Hour

// New returns the client of table.
func New(db API, table string, opts ...Option) *Table {
	s := &Table{db: db, table: table, now: time.Now, retention: DefaultRetention}
	for _, o := range opts {
		o(s)
	}
	return s
}

// expiry is the TTL of an item kept for the retention after the latest of
// times: its creation, and the latest it can be due (docs/decisions.md,
// "Retention counts from the latest due time").
func (s *Table) expiry(times ...time.Time) int64 {
	return domain.Latest(times...).Add(s.retention).Unix()
}

// Name is the table name.
func (s *Table) Name() string { return s.table }

// The feature stores: one per feature, each over the shared Table, each
// serving the consumer interfaces of its feature only
// (TestOneFeaturePerStore). A method stays in the file of its items.

// Notifications stores notifications and their deliveries: intake,
// claims and transitions, the relay's planning reads, the worker's work
// loads (notifications.go, deliveries.go, planning.go, work.go, replan.go).
type Notifications struct{ *Table }

// Inbox stores a user's inbox (read, archive, unread counts) and the
// announcements with their read markers and live broadcast progress
// (inbox.go, announcements.go, online.go's announcement marks, migrate.go).
type Inbox struct{ *Table }

// Campaigns stores campaigns, their recipient chunks, lots, status replicas
// and profile scans (campaigns.go).
type Campaigns struct{ *Table }

// Users stores users' profiles, devices, push subscriptions, preferences,
// unsubscribes and email suppressions (users.go, devices.go,
// preferences.go, unsubscribe.go, feedback.go).
type Users struct{ *Table }

// Live stores the live inbox's connections, online set and presence
// (live.go, online.go, presence.go).
type Live struct{ *Table }

// Scheduling stores the due index (deferred deliveries and in-flight
// watches), the release watermark and the relay's failure notes (due.go,
// watch.go, relayfailures.go).
type Scheduling struct{ *Table }

// Quotas stores the counters: the channels' send quota and the per-user
// rate limits (sendquota.go, ratelimit.go).
type Quotas struct{ *Table }

// Breakers stores the providers' circuit breakers (breakers.go).
type Breakers struct{ *Table }

// Digests stores digests: their members and seals (digests.go).
type Digests struct{ *Table }

// Budgets stores the users' notification budgets: the history the budget's
// conditional write keeps (budgets.go).
type Budgets struct{ *Table }

// Topics stores topic subscriptions and their mutes (topics.go).
type Topics struct{ *Table }

// Stores are the feature stores over one table; wiring hands each consumer
// the ones it uses.
type Stores struct {
	Notifications *Notifications
	Inbox         *Inbox
	Campaigns     *Campaigns
	Users         *Users
	Live          *Live
	Scheduling    *Scheduling
	Quotas        *Quotas
	Digests       *Digests
	Budgets       *Budgets
	History       *History
	Breakers      *Breakers
	Topics        *Topics
}

// StoresOf returns the feature stores over t.
func StoresOf(t *Table) Stores {
	return Stores{Notifications: &Notifications{t}, Inbox: &Inbox{t}, Campaigns: &Campaigns{t}, Users: &Users{t},
		Live: &Live{t}, Scheduling: &Scheduling{t}, Quotas: &Quotas{t}, Digests: &Digests{t}, Budgets: &Budgets{t}, History: &History{t}, Breakers: &Breakers{t}, Topics: &Topics{t}}
}

// timeLayout is fixed width so that timestamps sort lexicographically.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeLayout)
}

func parseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		t, _ = time.Parse(time.RFC3339Nano, s)
	}
	return t
}

func asConditionFailed(err error) (*types.ConditionalCheckFailedException, bool) {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return ccf, true
	}
	return nil, false
}

func isConditionFailed(err error) bool {
	_, ok := asConditionFailed(err)
	return ok
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func num(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: fmt.Sprint(v)}
}

func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": str(pk), "sk": str(sk)}
}

// createIfAbsent writes record only if no item has its key. When one exists
// (an idempotent replay, a stream retry, a concurrent duplicate), nothing is
// written and the existing item is returned with domain.ErrConflict: decoded
// from the failed write itself (ReturnValuesOnConditionCheckFailure, so a
// replay costs no read), or read back where the store did not return it.
func createIfAbsent[T any](ctx context.Context, s *Table, what string, record any,
	decode func(map[string]types.AttributeValue) (T, error), reread func(context.Context) (T, error)) (T, error) {
	var zero T
	item, err := attributevalue.MarshalMap(record)
	if err != nil {
		return zero, fmt.Errorf("marshal %s: %w", what, err)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(s.table),
		Item:                                item,
		ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return zero, nil
	}
	ccf, ok := asConditionFailed(err)
	if !ok {
		return zero, fmt.Errorf("create %s: %w", what, err)
	}
	var existing T
	if len(ccf.Item) > 0 {
		existing, err = decode(ccf.Item)
	} else {
		existing, err = reread(ctx)
	}
	if err != nil {
		return zero, fmt.Errorf("read existing %s: %w", what, err)
	}
	return existing, fmt.Errorf("create %s: %w", what, domain.ErrConflict)
}
