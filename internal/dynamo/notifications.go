package dynamo

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
)

// Key prefixes and sort keys.
const (
	notificationPrefix = "N#"
	notificationSK     = "N"
	deliveryPrefix     = "D#"
	// The inbox index's partitions, one per state (see inbox.go).
	unreadPrefix   = "UNREAD#"
	readPrefix     = "READ#"
	archivedPrefix = "ARCHIVED#"
)

// NotificationPK is the partition key of a notification and its deliveries.
func NotificationPK(id string) string { return notificationPrefix + id }

// notificationItem is the stored shape of a notification. It doubles as the
// user's inbox item through the inbox index's attributes (gsi2pk/gsi2sk).
// gsi1pk/gsi1sk are the former inbox index's: no longer written, kept on
// items written before (they expire with the item).
type notificationItem struct {
	PK          string         `dynamodbav:"pk"`
	SK          string         `dynamodbav:"sk"`
	Kind        string         `dynamodbav:"kind"`
	ID          string         `dynamodbav:"id"`
	Caller      string         `dynamodbav:"caller"`
	Type        string         `dynamodbav:"type"`
	UserID      string         `dynamodbav:"userId"`
	Email       string         `dynamodbav:"email,omitempty"`
	Phone       string         `dynamodbav:"phone,omitempty"`
	Locale      string         `dynamodbav:"locale,omitempty"`
	Data        map[string]any `dynamodbav:"data,omitempty"`
	Priority    string         `dynamodbav:"priority"`
	Channels    []string       `dynamodbav:"channels,omitempty"`
	ResourceID  string         `dynamodbav:"resourceId,omitempty"`
	BatchKey    string         `dynamodbav:"batchKey,omitempty"`
	SendAt      string         `dynamodbav:"sendAt,omitempty"`
	ExpiresAt   string         `dynamodbav:"expiresAt,omitempty"`
	CreatedAt   string         `dynamodbav:"createdAt"`
	Status      string         `dynamodbav:"status"`
	RequestHash string         `dynamodbav:"requestHash,omitempty"`
	DedupeKey   string         `dynamodbav:"dedupeKey,omitempty"`
	ReadAt      string         `dynamodbav:"readAt,omitempty"`
	ArchivedAt  string         `dynamodbav:"archivedAt,omitempty"`
	CancelledAt string         `dynamodbav:"cancelledAt,omitempty"`
	CampaignID  string         `dynamodbav:"campaignId,omitempty"`
	CampaignChk string         `dynamodbav:"campaignChunk,omitempty"`
	Topic       string         `dynamodbav:"topic,omitempty"`
	Muted       bool           `dynamodbav:"muted,omitempty"`
	TTL         int64          `dynamodbav:"ttl,omitempty"`
	GSI2PK      string         `dynamodbav:"gsi2pk,omitempty"`
	GSI2SK      string         `dynamodbav:"gsi2sk,omitempty"`
}

func (s *Table) toNotificationItem(n *domain.Notification) notificationItem {
	it := notificationItem{
		PK: NotificationPK(n.ID), SK: notificationSK, Kind: "notification",
		ID: n.ID, Caller: n.Caller, Type: n.Type, UserID: n.Recipient.UserID,
		Email: n.Recipient.Email, Phone: n.Recipient.Phone, Locale: n.Recipient.Locale,
		Data: n.Data, Priority: string(n.Priority), ResourceID: n.ResourceID, BatchKey: n.BatchKey,
		SendAt: formatTime(n.SendAt), ExpiresAt: formatTime(n.ExpiresAt), CreatedAt: formatTime(n.CreatedAt),
		Status: string(n.Status), RequestHash: n.RequestHash, DedupeKey: n.DedupeKey,
		ReadAt: formatTime(n.ReadAt), ArchivedAt: formatTime(n.ArchivedAt), CancelledAt: formatTime(n.CancelledAt),
		CampaignID: n.CampaignID, CampaignChk: n.CampaignChunk, Topic: n.Topic, Muted: n.Muted,
		TTL: s.expiry(n.CreatedAt, n.LastDue),
	}
	for _, c := range n.Channels {
		it.Channels = append(it.Channels, string(c))
	}
	if n.Status != domain.NotificationCancelled && !n.Muted { // a muted topic's send is no inbox item
		it.GSI2PK, it.GSI2SK = inboxKeys(n.Recipient.UserID, n.CreatedAt, n.ID, !n.ReadAt.IsZero(), !n.ArchivedAt.IsZero())
	}
	return it
}

// inboxKeys are a notification's keys in the inbox index: its state's
// partition, and "<createdAt>#<id>".
func inboxKeys(userID string, createdAt time.Time, id string, read, archived bool) (pk, sk string) {
	sk = formatTime(createdAt) + "#" + id
	switch {
	case archived:
		return archivedPrefix + userID, sk
	case read:
		return readPrefix + userID, sk
	}
	return unreadPrefix + userID, sk
}

func (it *notificationItem) toDomain() *domain.Notification {
	n := &domain.Notification{
		ID: it.ID, Caller: it.Caller, Type: it.Type,
		Recipient: domain.Recipient{UserID: it.UserID, Email: it.Email, Phone: it.Phone, Locale: it.Locale},
		Data:      it.Data, Priority: domain.Priority(it.Priority), ResourceID: it.ResourceID, BatchKey: it.BatchKey,
		SendAt: parseTime(it.SendAt), ExpiresAt: parseTime(it.ExpiresAt), CreatedAt: parseTime(it.CreatedAt),
		Status: domain.NotificationStatus(it.Status), RequestHash: it.RequestHash, DedupeKey: it.DedupeKey,
		ReadAt: parseTime(it.ReadAt), ArchivedAt: parseTime(it.ArchivedAt), CancelledAt: parseTime(it.CancelledAt),
		CampaignID: it.CampaignID, CampaignChunk: it.CampaignChk, Topic: it.Topic, Muted: it.Muted,
	}
	for _, c := range it.Channels {
		n.Channels = append(n.Channels, domain.Channel(c))
	}
	return n
}

// CreateNotification stores n with a single conditional PutItem. When an item
// with the same id exists already (an idempotent replay or a concurrent
// duplicate), nothing is written and the stored notification is returned with
// domain.ErrConflict, read from the failed write itself
// (ReturnValuesOnConditionCheckFailure), so a replay costs no extra read.
func (s *Notifications) CreateNotification(ctx context.Context, n *domain.Notification) (*domain.Notification, error) {
	existing, err := createIfAbsent(ctx, s.Table, "notification "+n.ID, s.toNotificationItem(n), decodeNotification,
		func(ctx context.Context) (*domain.Notification, error) { return s.GetNotification(ctx, n.ID) })
	if err != nil {
		return existing, err
	}
	return n, nil
}

func decodeNotification(av map[string]types.AttributeValue) (*domain.Notification, error) {
	if len(av) == 0 {
		return nil, nil
	}
	var it notificationItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return nil, fmt.Errorf("unmarshal notification: %w", err)
	}
	if it.SK != notificationSK || !strings.HasPrefix(it.PK, notificationPrefix) {
		return nil, fmt.Errorf("item %s/%s is not a notification", it.PK, it.SK)
	}
	return it.toDomain(), nil
}

// DecodeNotification turns a stored item (e.g. a stream image) into a
// notification. It returns (nil, nil) for items that are not notifications.
func DecodeNotification(av map[string]types.AttributeValue) (*domain.Notification, error) {
	if sk, ok := av["sk"].(*types.AttributeValueMemberS); !ok || sk.Value != notificationSK {
		return nil, nil
	}
	return decodeNotification(av)
}

// GetNotification reads one notification (strongly consistent).
func (s *Notifications) GetNotification(ctx context.Context, id string) (*domain.Notification, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: key(NotificationPK(id), notificationSK), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("get notification %s: %w", id, err)
	}
	if len(out.Item) == 0 {
		return nil, fmt.Errorf("notification %s: %w", id, domain.ErrNotFound)
	}
	return decodeNotification(out.Item)
}

// GetNotificationWithDeliveries reads a notification and all its deliveries in
// one strongly consistent query.
func (s *Notifications) GetNotificationWithDeliveries(ctx context.Context, id string) (*domain.Notification, []domain.Delivery, error) {
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(NotificationPK(id))},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("query notification %s: %w", id, err)
	}
	var n *domain.Notification
	var ds []domain.Delivery
	for _, av := range out.Items {
		sk := av["sk"].(*types.AttributeValueMemberS).Value
		switch {
		case sk == notificationSK:
			if n, err = decodeNotification(av); err != nil {
				return nil, nil, err
			}
		case strings.HasPrefix(sk, deliveryPrefix):
			d, err := decodeDelivery(av)
			if err != nil {
				return nil, nil, err
			}
			ds = append(ds, *d)
		}
	}
	if n == nil {
		return nil, nil, fmt.Errorf("notification %s: %w", id, domain.ErrNotFound)
	}
	return n, ds, nil
}

// CancelNotification marks caller's notification cancelled with one
// conditional update (the first cancelledAt is kept) and returns it. Another
// caller's notification, or none, is domain.ErrNotFound. Cancelling twice
// writes nothing the second time and returns the cancelled notification.
// Deliveries are not touched here: the caller transitions them, and the
// worker's recheck drops whatever it finds cancelled at send time.
func (s *Notifications) CancelNotification(ctx context.Context, id, caller string) (*domain.Notification, error) {
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table),
		Key:       key(NotificationPK(id), notificationSK),
		// A cancelled notification is retracted from the inbox too: it leaves
		// the listing and the unread badge (its item stays for the status view).
		UpdateExpression:         aws.String("SET #status = :cancelled, cancelledAt = :now REMOVE gsi1pk, gsi1sk, gsi2pk, gsi2sk"),
		ConditionExpression:      aws.String("attribute_exists(pk) AND caller = :caller AND #status <> :cancelled"),
		ExpressionAttributeNames: map[string]string{"#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":cancelled": str(string(domain.NotificationCancelled)), ":now": str(formatTime(s.now())), ":caller": str(caller),
		},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return decodeNotification(out.Attributes)
	}
	item, err := s.conditionItem(ctx, err, key(NotificationPK(id), notificationSK))
	if err != nil {
		return nil, fmt.Errorf("cancel notification %s: %w", id, err)
	}
	current, derr := decodeNotification(item)
	if derr != nil {
		return nil, fmt.Errorf("cancel notification %s: %w", id, derr)
	}
	if current != nil && current.Caller == caller && current.Status == domain.NotificationCancelled {
		return current, nil
	}
	return nil, fmt.Errorf("notification %s: %w", id, domain.ErrNotFound)
}
