package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/inbox"
)

// An announcement is stored once, A#<id> / A, and listed newest published
// first through the inbox index (gsi2) under one partition key (ANNOUNCEMENTS, sort key
// "<publishedAt>#<id>", the same shape as inbox sort keys so the two merge).
// Its TTL is its expiry; users' markers carry the same TTL.
const (
	announcementPrefix     = "A#"
	announcementSK         = "A"
	announcementsPartition = "ANNOUNCEMENTS"
)

// MaxAnnouncementsScanned bounds the unexpired announcements read to find the
// active ones (scheduled ones count against it too).
const MaxAnnouncementsScanned = 1000

type announcementItem struct {
	PK          string `dynamodbav:"pk"`
	SK          string `dynamodbav:"sk"`
	Kind        string `dynamodbav:"kind"`
	ID          string `dynamodbav:"id"`
	Title       string `dynamodbav:"title"`
	Body        string `dynamodbav:"body"`
	URL         string `dynamodbav:"url,omitempty"`
	PublishedAt string `dynamodbav:"publishedAt"`
	ExpiresAt   string `dynamodbav:"expiresAt"`
	CreatedAt   string `dynamodbav:"createdAt"`
	Caller      string `dynamodbav:"caller"`
	RequestHash string `dynamodbav:"requestHash,omitempty"`
	// LiveAt: when its live broadcast started (MarkAnnouncementLive).
	LiveAt string `dynamodbav:"liveAt,omitempty"`
	TTL    int64  `dynamodbav:"ttl"`
	GSI2PK string `dynamodbav:"gsi2pk"`
	GSI2SK string `dynamodbav:"gsi2sk"`
}

func announcementSortKey(a *inbox.Announcement) string { return formatTime(a.PublishedAt) + "#" + a.ID }

func (it *announcementItem) toAnnouncement() *inbox.Announcement {
	return &inbox.Announcement{
		ID: it.ID, Title: it.Title, Body: it.Body, URL: it.URL,
		PublishedAt: parseTime(it.PublishedAt), ExpiresAt: parseTime(it.ExpiresAt), CreatedAt: parseTime(it.CreatedAt),
		Caller: it.Caller, RequestHash: it.RequestHash, SortKey: it.GSI2SK, LiveAt: parseTime(it.LiveAt),
	}
}

func decodeAnnouncement(av map[string]types.AttributeValue) (*inbox.Announcement, error) {
	var it announcementItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return nil, fmt.Errorf("unmarshal announcement: %w", err)
	}
	if it.SK != announcementSK {
		return nil, fmt.Errorf("item %s/%s is not an announcement", it.PK, it.SK)
	}
	return it.toAnnouncement(), nil
}

// CreateAnnouncement stores a with one conditional PutItem and sets its
// SortKey. When the id exists already (an idempotent replay), nothing is
// written and the stored announcement is returned with domain.ErrConflict.
func (s *Inbox) CreateAnnouncement(ctx context.Context, a *inbox.Announcement) (*inbox.Announcement, error) {
	a.SortKey = announcementSortKey(a)
	record := announcementItem{
		PK: announcementPrefix + a.ID, SK: announcementSK, Kind: "announcement", ID: a.ID,
		Title: a.Title, Body: a.Body, URL: a.URL, PublishedAt: formatTime(a.PublishedAt), ExpiresAt: formatTime(a.ExpiresAt),
		CreatedAt: formatTime(a.CreatedAt), Caller: a.Caller, RequestHash: a.RequestHash, TTL: a.ExpiresAt.Unix(),
		GSI2PK: announcementsPartition, GSI2SK: a.SortKey,
	}
	existing, err := createIfAbsent(ctx, s.Table, "announcement "+a.ID, record, decodeAnnouncement,
		func(ctx context.Context) (*inbox.Announcement, error) { return s.GetAnnouncement(ctx, a.ID) })
	if err != nil {
		return existing, err
	}
	return a, nil
}

// GetAnnouncement reads one announcement (strongly consistent).
func (s *Inbox) GetAnnouncement(ctx context.Context, id string) (*inbox.Announcement, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: key(announcementPrefix+id, announcementSK), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("get announcement %s: %w", id, err)
	}
	if len(out.Item) == 0 {
		return nil, fmt.Errorf("announcement %s: %w", id, domain.ErrNotFound)
	}
	return decodeAnnouncement(out.Item)
}

// ListAnnouncements reads one page of stored announcements (until TTL removes
// expired ones), newest published first, strictly older than position.
func (s *Inbox) ListAnnouncements(ctx context.Context, position string, limit int) ([]inbox.Announcement, bool, error) {
	cond := "gsi2pk = :pk"
	values := map[string]types.AttributeValue{":pk": str(announcementsPartition)}
	if position != "" {
		cond += " AND gsi2sk < :pos"
		values[":pos"] = str(position)
	}
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(IndexInbox),
		KeyConditionExpression:    aws.String(cond),
		ExpressionAttributeValues: values,
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(int32(limit + 1)),
	})
	if err != nil {
		return nil, false, fmt.Errorf("query announcements: %w", err)
	}
	list := make([]inbox.Announcement, 0, len(out.Items))
	for _, av := range out.Items {
		a, err := decodeAnnouncement(av)
		if err != nil {
			return nil, false, err
		}
		list = append(list, *a)
	}
	more := len(list) > limit || len(out.LastEvaluatedKey) > 0
	if len(list) > limit {
		list = list[:limit]
	}
	return list, more, nil
}

// UnexpiredAnnouncements reads the announcements not yet expired at now
// (active and scheduled), newest published first, at most
// MaxAnnouncementsScanned items evaluated.
func (s *Inbox) UnexpiredAnnouncements(ctx context.Context, now time.Time) ([]inbox.Announcement, error) {
	var list []inbox.Announcement
	var start map[string]types.AttributeValue
	scanned := 0
	for scanned < MaxAnnouncementsScanned {
		out, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(s.table),
			IndexName:                 aws.String(IndexInbox),
			KeyConditionExpression:    aws.String("gsi2pk = :pk"),
			FilterExpression:          aws.String("expiresAt > :now"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(announcementsPartition), ":now": str(formatTime(now))},
			ScanIndexForward:          aws.Bool(false),
			Limit:                     aws.Int32(int32(min(100, MaxAnnouncementsScanned-scanned))),
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return nil, fmt.Errorf("query announcements: %w", err)
		}
		scanned += int(out.ScannedCount)
		for _, av := range out.Items {
			a, err := decodeAnnouncement(av)
			if err != nil {
				return nil, err
			}
			list = append(list, *a)
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		start = out.LastEvaluatedKey
	}
	return list, nil
}
