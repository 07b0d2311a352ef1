package dynamo

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
)

// historyPrefix is the inbox index's partition of one caller's deliveries
// to one user: H#<caller>#<user>, sort key <notification createdAt>#<id>#<channel>
// (docs/decisions.md, "A recipient's history in the inbox index").
const historyPrefix = "H#"

// historyKeys are a delivery's keys in the inbox index's history partition
// ("" when the delivery lacks the caller, recipient or the notification's
// creation time: created before they were kept).
func historyKeys(caller, userID string, createdAt time.Time, id string, c domain.Channel) (pk, sk string) {
	if caller == "" || userID == "" || createdAt.IsZero() {
		return "", ""
	}
	return historyPartition(caller, userID), formatTime(createdAt) + "#" + id + "#" + string(c)
}

func historyPartition(caller, userID string) string { return historyPrefix + caller + "#" + userID }

// History reads a recipient's delivery history (history.go).
type History struct{ *Table }

// ListHistory reads one page of the deliveries of caller's notifications to
// userID, grouped per notification, newest first, with ONE Query of the
// inbox index's H#<caller>#<user> partition, from position (a previous
// page's Next, an upper bound of the index's sort key; "" for the first). A notification's deliveries are adjacent
// in the partition (same sort-key prefix), so the query reads up to
// limit × channels + 1 items and keeps whole notifications: one cut by the
// query's end is read again by the next page, which starts at it.
// f.Type and f.Channel filter in the query, f.Status per entry after it
// (a notification is kept when a delivery has that status), so a page can
// hold fewer than limit entries and still have a Next.
func (s *History) ListHistory(ctx context.Context, caller, userID string, f domain.HistoryFilter, position string, limit int) (domain.HistoryPage, error) {
	lo, hi := "0", "~"
	if !f.Since.IsZero() {
		lo = formatTime(f.Since)
	}
	if !f.Until.IsZero() {
		hi = formatTime(f.Until) // exclusive: its items sort after "<until>#…"
	}
	if position != "" && position < hi {
		hi = position
	}
	if lo > hi {
		return domain.HistoryPage{}, nil
	}
	names := map[string]string{}
	vals := map[string]types.AttributeValue{":pk": str(historyPartition(caller, userID)), ":lo": str(lo), ":hi": str(hi)}
	var filters []string
	if f.Type != "" {
		names["#type"], vals[":type"] = "type", str(f.Type)
		filters = append(filters, "#type = :type")
	}
	if f.Channel != "" {
		names["#channel"], vals[":channel"] = "channel", str(string(f.Channel))
		filters = append(filters, "#channel = :channel")
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(IndexInbox),
		KeyConditionExpression:    aws.String("gsi2pk = :pk AND gsi2sk BETWEEN :lo AND :hi"),
		ExpressionAttributeValues: vals,
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(int32(limit*len(domain.Channels) + 1)),
	}
	if len(filters) > 0 {
		in.FilterExpression = aws.String(strings.Join(filters, " AND "))
		in.ExpressionAttributeNames = names
	}
	out, err := s.db.Query(ctx, in)
	if err != nil {
		return domain.HistoryPage{}, fmt.Errorf("query history: %w", err)
	}
	type group struct {
		prefix string
		entry  domain.HistoryEntry
	}
	var groups []group
	for _, av := range out.Items {
		d, err := decodeDelivery(av)
		if err != nil {
			return domain.HistoryPage{}, err
		}
		sk, _ := av["gsi2sk"].(*types.AttributeValueMemberS)
		if sk == nil {
			continue
		}
		prefix := strings.TrimSuffix(sk.Value, "#"+string(d.Channel))
		if len(groups) == 0 || groups[len(groups)-1].prefix != prefix {
			groups = append(groups, group{prefix: prefix, entry: domain.HistoryEntry{
				NotificationID: d.NotificationID, Type: d.Type, Caller: d.Caller, Priority: d.Priority,
				CreatedAt: d.NotificationCreatedAt, CampaignID: d.CampaignID, ResourceID: d.ResourceID,
			}})
		}
		g := &groups[len(groups)-1]
		g.entry.Deliveries = append(g.entry.Deliveries, *d)
	}
	page := domain.HistoryPage{}
	if len(out.LastEvaluatedKey) > 0 {
		lek, _ := out.LastEvaluatedKey["gsi2sk"].(*types.AttributeValueMemberS)
		if lek == nil {
			return domain.HistoryPage{}, fmt.Errorf("query history: no sort key in its last evaluated key")
		}
		page.Next = lek.Value // below what was evaluated (inclusive: a filtered item read again)
		if n := len(groups); n > 0 && strings.HasPrefix(lek.Value, groups[n-1].prefix+"#") {
			// The query ended inside the last notification, which may go on:
			// the next page reads it whole (its items sort below prefix + "#~").
			page.Next = groups[n-1].prefix + "#~"
			groups = groups[:n-1]
		}
	}
	for i, g := range groups {
		if len(page.Entries) == limit {
			// A notification beyond the page: the next page starts below
			// the last one kept.
			page.Next = groups[i-1].prefix
			break
		}
		if f.Status == "" || f.Matches(g.entry) {
			page.Entries = append(page.Entries, g.entry)
		}
	}
	return page, nil
}
