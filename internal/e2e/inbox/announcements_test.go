package inbox_test

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

// markers reads a user's announcement markers straight from the table:
// announcement id → ttl.
func markers(t testing.TB, user string) map[string]string {
	t.Helper()
	out, err := stacktest.DB(t).Query(context.Background(), &dynamodb.QueryInput{
		TableName:                 aws.String(stacktest.Stack(t).Resources.Table),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: "ANNREAD#" + user}},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, it := range out.Items {
		ttl, _ := it["ttl"].(*types.AttributeValueMemberN)
		if ttl == nil {
			t.Fatalf("marker without ttl: %v", it)
		}
		m[it["sk"].(*types.AttributeValueMemberS).Value] = ttl.Value
	}
	return m
}

func unixOf(t testing.TB, rfc3339 string) string {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, rfc3339)
	if err != nil {
		t.Fatal(err)
	}
	return strconv.FormatInt(at.Unix(), 10)
}

// TestAnnouncementsAreStoredOnceWithPerUserMarkers: a user who never read
// anything sees every active announcement unread, scheduled and expired ones
// are neither shown nor counted, markers appear only when a user reads and
// read-all writes them for active announcements only, with the
// announcement's expiry as their TTL.
func TestAnnouncementsAreStoredOnceWithPerUserMarkers(t *testing.T) {
	soonExpiry := stacktest.Stack(t).Clock.Now().Add(2 * time.Second)
	soon := announce(t, "Short-lived", time.Time{}, soonExpiry)
	now := stacktest.Stack(t).Clock.Now()
	a1 := announce(t, "Maintenance tonight", time.Time{}, now.Add(time.Hour))
	a2 := announce(t, "New feature", now.Add(-time.Minute), now.Add(time.Hour))
	scheduled := announce(t, "Next week", now.Add(time.Hour), now.Add(2*time.Hour))
	if a1.Status != "active" || scheduled.Status != "scheduled" || soon.Status != "active" {
		t.Fatalf("statuses: %s %s %s", a1.Status, scheduled.Status, soon.Status)
	}
	if wait := time.Until(soonExpiry.Add(100 * time.Millisecond)); wait > 0 {
		time.Sleep(wait) // the clock has no offset in this package
	}
	active := activeAnnouncements(t)
	if !active[a1.ID] || !active[a2.ID] || active[scheduled.ID] || active[soon.ID] {
		t.Fatalf("active announcements %v", active)
	}
	n := len(active)

	user, other := stacktest.UniqueID("ann"), stacktest.UniqueID("ann")
	if b := unreadCount(t, user); b.Count != min(n, 100) {
		t.Errorf("never-read user: badge %+v, want %d", b, n)
	}
	listed := map[string]bool{}
	for _, it := range listAll(t, user, "all") {
		if it.Kind != "announcement" || it.ReadAt != nil {
			t.Errorf("unexpected item %+v", it)
		}
		listed[it.ID] = true
		if it.ID == a1.ID && (it.Title != "Maintenance tonight" || it.Body != "Body of Maintenance tonight" || it.Type != "announcement") {
			t.Errorf("a1 listed as %+v", it)
		}
	}
	if !maps.Equal(listed, active) {
		t.Errorf("listed %v, want the active %v", slices.Sorted(maps.Keys(listed)), slices.Sorted(maps.Keys(active)))
	}
	if m := markers(t, user); len(m) != 0 {
		t.Fatalf("markers before any read: %v", m)
	}

	if resp := itemAction(t, user, a1.ID, "read"); resp.StatusCode != http.StatusOK {
		t.Fatalf("read a1: %d %s", resp.StatusCode, resp.Body)
	}
	if m := markers(t, user); len(m) != 1 || m[a1.ID] != unixOf(t, a1.ExpiresAt) {
		t.Errorf("markers after one read: %v, want a1 with ttl %s", m, unixOf(t, a1.ExpiresAt))
	}
	if b := unreadCount(t, user); b.Count != n-1 {
		t.Errorf("badge after reading one: %+v, want %d", b, n-1)
	}
	for _, id := range []string{scheduled.ID, soon.ID} {
		if resp := itemAction(t, user, id, "read"); resp.StatusCode != http.StatusNotFound {
			t.Errorf("read inactive %s: %d %s", id, resp.StatusCode, resp.Body)
		}
	}
	if got := readAll(t, user); got != n-1 {
		t.Errorf("read-all updated %d, want %d", got, n-1)
	}
	m := markers(t, user)
	if !maps.Equal(boolSet(m), active) {
		t.Errorf("markers after read-all %v, want exactly the active %v", slices.Sorted(maps.Keys(m)), slices.Sorted(maps.Keys(active)))
	}
	if m[a2.ID] != unixOf(t, a2.ExpiresAt) {
		t.Errorf("a2 marker ttl %s, want its expiry %s", m[a2.ID], unixOf(t, a2.ExpiresAt))
	}
	if b := unreadCount(t, user); b.Count != 0 {
		t.Errorf("badge after read-all %+v", b)
	}
	if b := unreadCount(t, other); b.Count != min(n, 100) {
		t.Errorf("another user: badge %+v, want %d (markers are per user)", b, n)
	}
	if ttl, _ := rawItem(t, "A#"+a2.ID, "A")["ttl"].(*types.AttributeValueMemberN); ttl == nil || ttl.Value != unixOf(t, a2.ExpiresAt) {
		t.Errorf("announcement ttl %v, want %s", ttl, unixOf(t, a2.ExpiresAt))
	}

	// Archiving an announcement takes it out of all and unread for that user.
	if resp := itemAction(t, other, a2.ID, "archive"); resp.StatusCode != http.StatusOK {
		t.Fatalf("archive: %d %s", resp.StatusCode, resp.Body)
	}
	archived := listAll(t, other, "archived")
	if len(archived) != 1 || archived[0].ID != a2.ID || archived[0].ArchivedAt == nil {
		t.Errorf("archived list %+v", archived)
	}
	for _, it := range listAll(t, other, "all") {
		if it.ID == a2.ID {
			t.Errorf("archived announcement still in all")
		}
	}
	if b := unreadCount(t, other); b.Count != min(n-1, 100) {
		t.Errorf("badge after archiving one: %+v, want %d", b, n-1)
	}
}

func boolSet(m map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}
