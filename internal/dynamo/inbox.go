package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/inbox"
)

// The inbox reads a user's notifications through one sparse index, the
// inbox index (gsi2), whose partitions are the item's state (see inboxKeys):
//
//	UNREAD#<user>    <createdAt>#<id>   neither read nor archived
//	READ#<user>      <createdAt>#<id>   read, not archived
//	ARCHIVED#<user>  <createdAt>#<id>   archived
//
// The unread filter and the badge read the unread partition (the badge a
// COUNT capped at inbox.CountCap), the archived filter the archived one, and
// the "all" filter merges the unread and read partitions newest first: both
// are ordered by the same "<createdAt>#<id>", so one position (the last key
// shown) is where both resume. Reading and archiving are single conditional
// UpdateItems on the notification that move it between partitions (SET
// gsi2pk), so the unread count is always a capped count of the items:
// derived, never a counter that can drift. The sort key never changes.
//
// The unread partition is the former unread index's (gsi2, UNREAD#<user>)
// unchanged, so an upgrade adds only the read and archived entries (herald
// migrate inbox-index).
//
// A user's state of an announcement is a marker item ANNREAD#<user> /
// <announcementId>, written only when the user reads or archives it and
// deleted by TTL when the announcement expires.
const markerPrefix = "ANNREAD#"

// inboxProjection reads what rendering needs and leaves contact details
// (email, phone) and bookkeeping out of the page.
var inboxProjection = map[string]string{
	"#pk": "pk", "#sk": "sk", "#id": "id", "#type": "type", "#user": "userId", "#locale": "locale",
	"#data": "data", "#created": "createdAt", "#read": "readAt", "#archived": "archivedAt",
	"#status": "status", "#g2sk": "gsi2sk",
}

const inboxProjectionExpr = "#pk, #sk, #id, #type, #user, #locale, #data, #created, #read, #archived, #status, #g2sk"

// ListInbox reads one page of a user's notifications under filter, newest
// first, strictly older than position ("" = from the newest); more reports
// whether older items remain. The unread and archived filters are one Query
// of limit+1 items of their partition; "all" queries the unread and the
// read partition (limit+1 each, concurrently) and merges them.
func (s *Inbox) ListInbox(ctx context.Context, userID string, f inbox.Filter, position string, limit int) ([]inbox.Entry, bool, error) {
	switch f {
	case inbox.FilterUnread:
		return s.inboxRange(ctx, unreadPrefix+userID, position, limit)
	case inbox.FilterArchived:
		return s.inboxRange(ctx, archivedPrefix+userID, position, limit)
	}
	var (
		wg                   sync.WaitGroup
		unread, read         []inbox.Entry
		moreUnread, moreRead bool
		unreadErr, readErr   error
	)
	wg.Go(func() { unread, moreUnread, unreadErr = s.inboxRange(ctx, unreadPrefix+userID, position, limit) })
	wg.Go(func() { read, moreRead, readErr = s.inboxRange(ctx, readPrefix+userID, position, limit) })
	wg.Wait()
	if err := errors.Join(unreadErr, readErr); err != nil {
		return nil, false, err
	}
	merged := make([]inbox.Entry, 0, min(limit, len(unread)+len(read)))
	i, j := 0, 0
	for len(merged) < limit && (i < len(unread) || j < len(read)) {
		if j == len(read) || (i < len(unread) && unread[i].SortKey > read[j].SortKey) {
			merged = append(merged, unread[i])
			i++
		} else {
			merged = append(merged, read[j])
			j++
		}
	}
	more := i < len(unread) || j < len(read) || moreUnread || moreRead
	return merged, more, nil
}

// inboxRange reads up to limit entries of one inbox partition strictly
// before position, newest first, with a single Query of limit+1 items.
func (s *Inbox) inboxRange(ctx context.Context, pk, position string, limit int) ([]inbox.Entry, bool, error) {
	// The index keys are not reserved words: named literally, the shared
	// projection names serve every page unchanged.
	cond := "gsi2pk = :pk"
	values := map[string]types.AttributeValue{":pk": str(pk)}
	if position != "" {
		cond += " AND gsi2sk < :pos"
		values[":pos"] = str(position)
	}
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(IndexInbox),
		KeyConditionExpression:    aws.String(cond),
		ExpressionAttributeNames:  inboxProjection,
		ExpressionAttributeValues: values,
		ProjectionExpression:      aws.String(inboxProjectionExpr),
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(int32(limit + 1)),
	})
	if err != nil {
		return nil, false, fmt.Errorf("query inbox %s: %w", strings.SplitN(pk, "#", 2)[0], err)
	}
	entries := make([]inbox.Entry, 0, len(out.Items))
	for _, av := range out.Items {
		n, err := decodeNotification(av)
		if err != nil {
			return nil, false, err
		}
		sk, _ := av["gsi2sk"].(*types.AttributeValueMemberS)
		if sk == nil {
			return nil, false, fmt.Errorf("inbox item %s has no gsi2sk", n.ID)
		}
		entries = append(entries, inbox.Entry{SortKey: sk.Value, Notification: n})
	}
	// A short page with a LastEvaluatedKey happens when the query hit
	// DynamoDB's 1 MB page size: there may be more.
	more := len(entries) > limit || len(out.LastEvaluatedKey) > 0
	if len(entries) > limit {
		entries = entries[:limit]
	}
	return entries, more, nil
}

// CountUnread counts a user's unread notifications, stopping at limit: a
// COUNT query of the unread partition reads at most limit items however
// many the user has.
func (s *Inbox) CountUnread(ctx context.Context, userID string, limit int) (int, error) {
	count := 0
	var start map[string]types.AttributeValue
	for count < limit {
		out, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(s.table),
			IndexName:                 aws.String(IndexInbox),
			KeyConditionExpression:    aws.String("gsi2pk = :pk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(unreadPrefix + userID)},
			Select:                    types.SelectCount,
			Limit:                     aws.Int32(int32(limit - count)),
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return 0, fmt.Errorf("count unread: %w", err)
		}
		count += int(out.Count)
		// Only a page cut short by the 1 MB limit continues.
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		start = out.LastEvaluatedKey
	}
	return min(count, limit), nil
}

// MarkRead marks a user's notification read, keeping the first readAt, and
// moves an unread one to the read partition. It is conditional on the
// notification belonging to userID: anyone else's id, like a missing one, is
// domain.ErrNotFound and changes nothing. An item already read is returned
// as it is, with no write; an archived (or cancelled) one only gets its
// readAt and stays where it is.
func (s *Inbox) MarkRead(ctx context.Context, userID, id string, at time.Time) (*domain.Notification, error) {
	n, old, err := s.moveOwned(ctx, userID, id, "SET readAt = if_not_exists(readAt, :at), gsi2pk = :to", unreadPrefix+userID,
		map[string]types.AttributeValue{":at": str(formatTime(at)), ":to": str(readPrefix + userID)})
	if err != nil || n != nil {
		return n, err
	}
	if !old.ReadAt.IsZero() {
		return old, nil
	}
	return s.updateOwned(ctx, userID, id, "SET readAt = if_not_exists(readAt, :at)", map[string]types.AttributeValue{":at": str(formatTime(at))})
}

// Archive moves a user's notification to the archived partition, keeping
// the first archivedAt. Ownership is checked as in MarkRead. A cancelled
// notification (no inbox entry) gets its archivedAt and stays out of the
// inbox: without a sort key the item is in no partition.
func (s *Inbox) Archive(ctx context.Context, userID, id string, at time.Time) (*domain.Notification, error) {
	return s.updateOwned(ctx, userID, id,
		"SET archivedAt = if_not_exists(archivedAt, :at), gsi2pk = :archived",
		map[string]types.AttributeValue{":at": str(formatTime(at)), ":archived": str(archivedPrefix + userID)})
}

// moveOwned applies update to the user's notification when it is in the
// from partition. It returns the updated notification, or (nil, the stored
// notification) when the item is the user's but elsewhere; domain.ErrNotFound
// when it is missing or someone else's.
func (s *Inbox) moveOwned(ctx context.Context, userID, id, update, from string, values map[string]types.AttributeValue) (*domain.Notification, *domain.Notification, error) {
	values[":user"] = str(userID)
	values[":from"] = str(from)
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 key(NotificationPK(id), notificationSK),
		UpdateExpression:                    aws.String(update),
		ConditionExpression:                 aws.String("userId = :user AND gsi2pk = :from"),
		ExpressionAttributeValues:           values,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		if len(failed.Item) == 0 {
			return nil, nil, fmt.Errorf("inbox item %s: %w", id, domain.ErrNotFound)
		}
		old, derr := decodeNotification(failed.Item)
		if derr != nil {
			return nil, nil, derr
		}
		if old.Recipient.UserID != userID {
			return nil, nil, fmt.Errorf("inbox item %s: %w", id, domain.ErrNotFound)
		}
		return nil, old, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("update inbox item %s: %w", id, err)
	}
	n, err := decodeNotification(out.Attributes)
	return n, nil, err
}

func (s *Inbox) updateOwned(ctx context.Context, userID, id, update string, values map[string]types.AttributeValue) (*domain.Notification, error) {
	values[":user"] = str(userID)
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(NotificationPK(id), notificationSK),
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String("userId = :user"),
		ExpressionAttributeValues: values,
		ReturnValues:              types.ReturnValueAllNew,
	})
	if isConditionFailed(err) {
		return nil, fmt.Errorf("inbox item %s: %w", id, domain.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("update inbox item %s: %w", id, err)
	}
	return decodeNotification(out.Attributes)
}

// readAllConcurrency is how many UpdateItems MarkAllRead runs at once.
const readAllConcurrency = 8

// MarkAllRead marks read the unread notifications of userID created at or
// before upTo (items arriving meanwhile stay unread), at most limit of them.
// It returns how many it changed and whether unread items older than upTo
// may remain. Each item is its own conditional update, so concurrent reads
// are neither lost nor counted twice.
func (s *Inbox) MarkAllRead(ctx context.Context, userID string, upTo time.Time, limit int) (int, bool, error) {
	at := str(formatTime(upTo))
	// '$' sorts right after '#', so this bound admits every key of upTo's
	// instant and nothing later.
	upper := str(formatTime(upTo) + "$")
	var (
		mu      sync.Mutex
		updated int
		errs    []error
	)
	ids := make(chan string)
	var wg sync.WaitGroup
	for range readAllConcurrency {
		wg.Go(func() {
			for id := range ids {
				_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
					TableName:                 aws.String(s.table),
					Key:                       key(NotificationPK(id), notificationSK),
					UpdateExpression:          aws.String("SET readAt = if_not_exists(readAt, :at), gsi2pk = :read"),
					ConditionExpression:       aws.String("userId = :user AND gsi2pk = :unread"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":at": at, ":user": str(userID), ":unread": str(unreadPrefix + userID), ":read": str(readPrefix + userID)},
				})
				mu.Lock()
				switch {
				case err == nil:
					updated++
				case isConditionFailed(err):
					// A concurrent read or archive got there first: not ours to count.
				default:
					errs = append(errs, fmt.Errorf("mark %s read: %w", id, err))
				}
				mu.Unlock()
			}
		})
	}
	sent, more, err := 0, false, error(nil)
	var start map[string]types.AttributeValue
	for sent < limit {
		var out *dynamodb.QueryOutput
		out, err = s.db.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(s.table),
			IndexName:                 aws.String(IndexInbox),
			KeyConditionExpression:    aws.String("gsi2pk = :pk AND gsi2sk < :upper"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(unreadPrefix + userID), ":upper": upper},
			ProjectionExpression:      aws.String("id"),
			Limit:                     aws.Int32(int32(min(100, limit-sent))),
			ExclusiveStartKey:         start,
		})
		if err != nil {
			err = fmt.Errorf("query unread: %w", err)
			break
		}
		for _, av := range out.Items {
			if id, ok := av["id"].(*types.AttributeValueMemberS); ok {
				ids <- id.Value
				sent++
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		start = out.LastEvaluatedKey
		more = sent >= limit
	}
	close(ids)
	wg.Wait()
	if err == nil {
		err = errors.Join(errs...)
	}
	if err != nil {
		return updated, true, fmt.Errorf("mark all read: %w", err)
	}
	return updated, more, nil
}

// markerItem is a user's state of one announcement.
type markerItem struct {
	PK             string `dynamodbav:"pk"`
	SK             string `dynamodbav:"sk"`
	ReadAt         string `dynamodbav:"readAt,omitempty"`
	ArchivedAt     string `dynamodbav:"archivedAt,omitempty"`
	Locale         string `dynamodbav:"locale,omitempty"` // the profile item shares the batch read
	AnnouncementID string `dynamodbav:"announcementId,omitempty"`
}

func markerKey(userID, announcementID string) map[string]types.AttributeValue {
	return key(markerPrefix+userID, announcementID)
}

// InboxState reads, in one BatchGetItem, the user's markers of the given
// announcements and, when withLocale is set, the profile's locale.
func (s *Inbox) InboxState(ctx context.Context, userID string, announcementIDs []string, withLocale bool) (inbox.UserState, error) {
	st := inbox.UserState{Markers: map[string]inbox.Marker{}}
	keys := make([]map[string]types.AttributeValue, 0, len(announcementIDs)+1)
	if withLocale {
		keys = append(keys, key(UserPK(userID), profileSK))
	}
	for _, id := range announcementIDs {
		keys = append(keys, markerKey(userID, id))
	}
	if len(keys) == 0 {
		return st, nil
	}
	if len(keys) > 100 {
		return st, fmt.Errorf("inbox state: %d keys exceed one batch read", len(keys))
	}
	items, err := s.batchGet(ctx, "inbox state", keys, types.KeysAndAttributes{
		ProjectionExpression:     aws.String("pk, sk, readAt, archivedAt, #locale"),
		ExpressionAttributeNames: map[string]string{"#locale": "locale"},
	})
	if err != nil {
		return st, err
	}
	for _, av := range items {
		var it markerItem
		if err := attributevalue.UnmarshalMap(av, &it); err != nil {
			return st, fmt.Errorf("inbox state: unmarshal: %w", err)
		}
		if it.PK == UserPK(userID) {
			st.Locale = it.Locale
			continue
		}
		st.Markers[it.SK] = inbox.Marker{ReadAt: parseTime(it.ReadAt), ArchivedAt: parseTime(it.ArchivedAt)}
	}
	return st, nil
}

// MarkAnnouncementRead records that userID read a, keeping the first readAt.
// With onlyUnread it changes nothing when the user already read or archived
// it, and changed reports whether it wrote (read-all counts those).
func (s *Inbox) MarkAnnouncementRead(ctx context.Context, userID string, a *inbox.Announcement, at time.Time, onlyUnread bool) (inbox.Marker, bool, error) {
	cond := ""
	if onlyUnread {
		cond = "attribute_not_exists(readAt) AND attribute_not_exists(archivedAt)"
	}
	return s.updateMarker(ctx, userID, a, "readAt", at, cond)
}

// ArchiveAnnouncement records that userID archived a, keeping the first
// archivedAt.
func (s *Inbox) ArchiveAnnouncement(ctx context.Context, userID string, a *inbox.Announcement, at time.Time) (inbox.Marker, error) {
	m, _, err := s.updateMarker(ctx, userID, a, "archivedAt", at, "")
	return m, err
}

// updateMarker upserts the marker with attr set once. Its TTL is the
// announcement's expiry: markers go when their announcement does.
func (s *Inbox) updateMarker(ctx context.Context, userID string, a *inbox.Announcement, attr string, at time.Time, cond string) (inbox.Marker, bool, error) {
	in := &dynamodb.UpdateItemInput{
		TableName:        aws.String(s.table),
		Key:              markerKey(userID, a.ID),
		UpdateExpression: aws.String("SET #attr = if_not_exists(#attr, :at), #kind = :kind, #user = :user, #ann = :id, #ttl = :ttl"),
		ExpressionAttributeNames: map[string]string{
			"#attr": attr, "#kind": "kind", "#user": "userId", "#ann": "announcementId", "#ttl": "ttl",
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":at": str(formatTime(at)), ":kind": str("announcementMarker"), ":user": str(userID),
			":id": str(a.ID), ":ttl": num(a.ExpiresAt.Unix()),
		},
		ReturnValues: types.ReturnValueAllNew,
	}
	if cond != "" {
		in.ConditionExpression = aws.String(cond)
	}
	out, err := s.db.UpdateItem(ctx, in)
	if isConditionFailed(err) {
		return inbox.Marker{}, false, nil
	}
	if err != nil {
		return inbox.Marker{}, false, fmt.Errorf("mark announcement %s: %w", a.ID, err)
	}
	var it markerItem
	if err := attributevalue.UnmarshalMap(out.Attributes, &it); err != nil {
		return inbox.Marker{}, false, fmt.Errorf("unmarshal marker: %w", err)
	}
	return inbox.Marker{ReadAt: parseTime(it.ReadAt), ArchivedAt: parseTime(it.ArchivedAt)}, true, nil
}

// Bulk writes.
const (
	batchWriteSize        = 25 // BatchWriteItem's limit
	maxBatchWriteAttempts = 8
)

// PutNotifications writes notifications as CreateNotification stores them,
// but unconditionally and in bulk: BatchWriteItem with 25 items per request,
// `parallel` requests at a time, unprocessed items retried with backoff a
// bounded number of times. It does not deduplicate, so it is for fixtures,
// benchmarks and bulk loads, never for intake.
func (s *Inbox) PutNotifications(ctx context.Context, ns []*domain.Notification, parallel int) error {
	batches := make(chan []types.WriteRequest)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range max(1, parallel) {
		wg.Go(func() {
			for batch := range batches {
				if err := s.writeBatch(ctx, "put notifications", batch); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	var err error
	for start := 0; start < len(ns) && err == nil; start += batchWriteSize {
		batch := make([]types.WriteRequest, 0, batchWriteSize)
		for _, n := range ns[start:min(start+batchWriteSize, len(ns))] {
			item, merr := attributevalue.MarshalMap(s.toNotificationItem(n))
			if merr != nil {
				err = fmt.Errorf("marshal notification %s: %w", n.ID, merr)
				break
			}
			batch = append(batch, types.WriteRequest{PutRequest: &types.PutRequest{Item: item}})
		}
		if err == nil {
			batches <- batch
		}
	}
	close(batches)
	wg.Wait()
	select {
	case werr := <-errs:
		return errors.Join(err, werr)
	default:
		return err
	}
}

// writeBatch writes one BatchWriteItem request, retrying its unprocessed
// items with backoff a bounded number of times; what names the writes in
// errors.
func (s *Table) writeBatch(ctx context.Context, what string, batch []types.WriteRequest) error {
	request := map[string][]types.WriteRequest{s.table: batch}
	for attempt := 1; len(request) > 0; attempt++ {
		if attempt > maxBatchWriteAttempts {
			return fmt.Errorf("%s: items still unprocessed after %d attempts", what, maxBatchWriteAttempts)
		}
		if attempt > 1 {
			if err := sleepCtx(ctx, time.Duration(attempt*attempt)*10*time.Millisecond); err != nil {
				return err
			}
		}
		out, err := s.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: request})
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		request = out.UnprocessedItems
	}
	return nil
}
