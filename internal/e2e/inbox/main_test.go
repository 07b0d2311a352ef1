// Package inbox_test checks the in-app inbox and announcements end to end on
// the local stack: JWT-authenticated routes through the emulated API Gateway,
// the API function, and DynamoDB Local. Announcements are global, so the
// tests here do not run in parallel and compute what other tests' active
// announcements add.
package inbox_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
)

func TestMain(m *testing.M) {
	stacktest.Main(m, devstack.Config{})
}

// asUser calls the API with a fresh token for user.
func asUser(t testing.TB, user, method, path string, body any) *stacktest.Response {
	t.Helper()
	return stacktest.Do(t, method, path, body, "Authorization: Bearer "+stacktest.Stack(t).Token(user, time.Hour))
}

type item struct {
	ID         string  `json:"id"`
	Kind       string  `json:"kind"`
	Type       string  `json:"type"`
	Title      string  `json:"title"`
	Body       string  `json:"body"`
	URL        *string `json:"url"`
	CreatedAt  string  `json:"createdAt"`
	ReadAt     *string `json:"readAt"`
	ArchivedAt *string `json:"archivedAt"`
}

type page struct {
	Items      []item `json:"items"`
	NextCursor string `json:"nextCursor"`
}

func list(t testing.TB, user, query string) page {
	t.Helper()
	resp := asUser(t, user, http.MethodGet, "/v1/users/"+user+"/inbox"+query, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("list %s: %d %s", query, resp.StatusCode, resp.Body)
	}
	var p page
	resp.JSON(t, &p)
	return p
}

// listAll pages through a filter and returns every item.
func listAll(t testing.TB, user, filter string) []item {
	t.Helper()
	var out []item
	cursor := ""
	for range 1000 {
		q := "?limit=100&filter=" + filter
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		p := list(t, user, q)
		out = append(out, p.Items...)
		if p.NextCursor == "" {
			return out
		}
		cursor = p.NextCursor
	}
	t.Fatal("paging does not end")
	return nil
}

type badge struct {
	Count   int    `json:"count"`
	Display string `json:"display"`
	Capped  bool   `json:"capped"`
}

func unreadCount(t testing.TB, user string) badge {
	t.Helper()
	resp := asUser(t, user, http.MethodGet, "/v1/users/"+user+"/inbox/unread-count", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("unread-count: %d %s", resp.StatusCode, resp.Body)
	}
	var b badge
	resp.JSON(t, &b)
	return b
}

func itemAction(t testing.TB, user, id, action string) *stacktest.Response {
	t.Helper()
	return asUser(t, user, http.MethodPost, "/v1/users/"+user+"/inbox/"+id+"/"+action, nil)
}

func readAll(t testing.TB, user string) int {
	t.Helper()
	resp := asUser(t, user, http.MethodPost, "/v1/users/"+user+"/inbox/read-all", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("read-all: %d %s", resp.StatusCode, resp.Body)
	}
	var r struct{ Updated int }
	resp.JSON(t, &r)
	return r.Updated
}

// insert stores n notifications for user directly (as intake would) with
// batch writes, created at created(i), with ids "<prefix>-<i>"; it returns the
// ids in order of i.
func insert(t testing.TB, user, prefix string, n int, created func(i int) time.Time) []string {
	t.Helper()
	ids := make([]string, n)
	ns := make([]*domain.Notification, n)
	for i := range n {
		ids[i] = fmt.Sprintf("%s-%04d", prefix, i)
		ns[i] = &domain.Notification{
			ID: ids[i], Caller: "e2e", Type: "security.login_alert", Recipient: domain.Recipient{UserID: user},
			Data: map[string]any{"url": "https://example.com/s/" + ids[i]}, Priority: domain.PriorityHigh,
			CreatedAt: created(i), Status: domain.NotificationAccepted,
		}
	}
	if err := stacktest.Store(t).PutNotifications(context.Background(), ns, 4); err != nil {
		t.Fatal(err)
	}
	return ids
}

// insertNow stores n notifications created now, a microsecond apart (the
// first oldest), with unique ids.
func insertNow(t testing.TB, user string, n int) []string {
	t.Helper()
	now := stacktest.Stack(t).Clock.Now()
	return insert(t, user, stacktest.UniqueID("n"), n, func(i int) time.Time { return now.Add(time.Duration(i-n) * time.Microsecond) })
}

// rawItem reads an item with every attribute, for before/after comparisons.
func rawItem(t testing.TB, pk, sk string) map[string]types.AttributeValue {
	t.Helper()
	out, err := stacktest.DB(t).GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(stacktest.Stack(t).Resources.Table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

type announcement struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	PublishedAt string `json:"publishedAt"`
	ExpiresAt   string `json:"expiresAt"`
	Status      string `json:"status"`
}

// announce creates an announcement as a service.
func announce(t testing.TB, title string, published, expires time.Time) announcement {
	t.Helper()
	body := map[string]any{"title": title, "body": "Body of " + title, "expiresAt": expires}
	if !published.IsZero() {
		body["publishedAt"] = published
	}
	resp := stacktest.Do(t, http.MethodPost, "/v1/announcements", body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("announce: %d %s", resp.StatusCode, resp.Body)
	}
	var a announcement
	resp.JSON(t, &a)
	return a
}

// activeAnnouncements lists the ids of the announcements active now.
func activeAnnouncements(t testing.TB) map[string]bool {
	t.Helper()
	active := map[string]bool{}
	cursor := ""
	for {
		path := "/v1/announcements?limit=100"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		resp := stacktest.Do(t, http.MethodGet, path, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("list announcements: %d %s", resp.StatusCode, resp.Body)
		}
		var p struct {
			Items      []announcement `json:"items"`
			NextCursor string         `json:"nextCursor"`
		}
		resp.JSON(t, &p)
		for _, a := range p.Items {
			if a.Status == "active" {
				active[a.ID] = true
			}
		}
		if p.NextCursor == "" {
			return active
		}
		cursor = p.NextCursor
	}
}

func createdAt(t testing.TB, it item) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, it.CreatedAt)
	if err != nil {
		t.Fatalf("item %s createdAt %q: %v", it.ID, it.CreatedAt, err)
	}
	return at
}

func notificationsOnly(items []item) []string {
	var out []string
	for _, it := range items {
		if it.Kind == "notification" {
			out = append(out, it.ID)
		}
	}
	return out
}
