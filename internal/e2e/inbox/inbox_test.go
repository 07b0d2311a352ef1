package inbox_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/app/apifn"
	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
)

// TestPaginationIsStableUnderInserts pages through 250 items while new ones
// arrive between pages: every original item exactly once, newest first, and
// none of the new ones.
func TestPaginationIsStableUnderInserts(t *testing.T) {
	user := stacktest.UniqueID("page")
	base := stacktest.Stack(t).Clock.Now().Add(-time.Hour)
	// Pairs share a timestamp, so the id must break ties.
	created := func(i int) time.Time { return base.Add(time.Duration(i/2) * time.Millisecond) }
	ids := insert(t, user, "old", 250, created)
	want := slices.Clone(ids)
	slices.SortFunc(want, func(a, b string) int { // newest first: time, then id
		ia, ib := slices.Index(ids, a), slices.Index(ids, b)
		if c := created(ib).Compare(created(ia)); c != 0 {
			return c
		}
		if a > b {
			return -1
		}
		return 1
	})
	var got []item
	seen := map[string]bool{}
	cursor := ""
	for pages := 1; ; pages++ {
		q := "?limit=20"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		p := list(t, user, q)
		if len(p.Items) > 20 {
			t.Fatalf("page %d has %d items", pages, len(p.Items))
		}
		for _, it := range p.Items {
			if seen[it.ID] {
				t.Fatalf("page %d repeats %s", pages, it.ID)
			}
			seen[it.ID] = true
		}
		got = append(got, p.Items...)
		insertNow(t, user, 3) // newer items arrive between pages
		if p.NextCursor == "" {
			break
		}
		cursor = p.NextCursor
	}
	if g := notificationsOnly(got); !slices.Equal(g, want) {
		t.Fatalf("paged %d notifications, want the 250 originals in order\n got %v\nwant %v", len(g), g, want)
	}
	for i := 1; i < len(got); i++ {
		if createdAt(t, got[i-1]).Before(createdAt(t, got[i])) {
			t.Fatalf("not newest first at %d: %s then %s", i, got[i-1].CreatedAt, got[i].CreatedAt)
		}
	}
}

func TestUnreadCountCapsAt99Plus(t *testing.T) {
	user := stacktest.UniqueID("cap")
	insertNow(t, user, 150)
	if b := unreadCount(t, user); b != (badge{Count: 100, Display: "99+", Capped: true}) {
		t.Fatalf("badge %+v, want 99+", b)
	}
	active := activeAnnouncements(t)
	if n := readAll(t, user); n != 150+len(active) {
		t.Errorf("read-all updated %d, want 150 notifications + %d announcements", n, len(active))
	}
	if b := unreadCount(t, user); b != (badge{Count: 0, Display: "0"}) {
		t.Errorf("badge after read-all %+v, want 0", b)
	}
	if n := readAll(t, user); n != 0 {
		t.Errorf("second read-all updated %d", n)
	}
}

func TestReadIsIdempotentAndKeepsTheFirstReadAt(t *testing.T) {
	user := stacktest.UniqueID("read")
	ids := insertNow(t, user, 2)
	before := unreadCount(t, user).Count
	var first, second struct{ ReadAt *string }
	resp := itemAction(t, user, ids[0], "read")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("read: %d %s", resp.StatusCode, resp.Body)
	}
	resp.JSON(t, &first)
	if c := unreadCount(t, user).Count; c != before-1 {
		t.Errorf("count after read %d, want %d", c, before-1)
	}
	time.Sleep(5 * time.Millisecond)
	resp = itemAction(t, user, ids[0], "read")
	resp.JSON(t, &second)
	if resp.StatusCode != http.StatusOK || first.ReadAt == nil || second.ReadAt == nil || *first.ReadAt != *second.ReadAt {
		t.Fatalf("second read: %d %s; first readAt %v", resp.StatusCode, resp.Body, first.ReadAt)
	}
	if c := unreadCount(t, user).Count; c != before-1 {
		t.Errorf("count after second read %d, want %d", c, before-1)
	}
	if got := notificationsOnly(listAll(t, user, "unread")); !slices.Equal(got, ids[1:]) {
		t.Errorf("unread lists %v, want %v", got, ids[1:])
	}
	for _, it := range listAll(t, user, "all") {
		if it.ID == ids[0] && (it.ReadAt == nil || *it.ReadAt != *first.ReadAt) {
			t.Errorf("listed readAt %v, want %s", it.ReadAt, *first.ReadAt)
		}
	}
}

func TestArchiveLeavesAllAndUnread(t *testing.T) {
	user := stacktest.UniqueID("arch")
	ids := insertNow(t, user, 2)
	before := unreadCount(t, user).Count
	var first, second struct{ ArchivedAt *string }
	resp := itemAction(t, user, ids[1], "archive")
	resp.JSON(t, &first)
	if resp.StatusCode != http.StatusOK || first.ArchivedAt == nil {
		t.Fatalf("archive: %d %s", resp.StatusCode, resp.Body)
	}
	itemAction(t, user, ids[1], "archive").JSON(t, &second)
	if second.ArchivedAt == nil || *second.ArchivedAt != *first.ArchivedAt {
		t.Errorf("second archive changed archivedAt: %v → %v", *first.ArchivedAt, second.ArchivedAt)
	}
	for filter, want := range map[string][]string{"all": ids[:1], "unread": ids[:1], "archived": ids[1:]} {
		if got := notificationsOnly(listAll(t, user, filter)); !slices.Equal(got, want) {
			t.Errorf("%s lists %v, want %v", filter, got, want)
		}
	}
	if c := unreadCount(t, user).Count; c != before-1 {
		t.Errorf("count after archive %d, want %d", c, before-1)
	}
}

// TestUsersCannotTouchOtherInboxes: a token for one user can neither list,
// count, read, archive nor read-all another's items, learns nothing about
// whether they exist, and changes nothing.
func TestUsersCannotTouchOtherInboxes(t *testing.T) {
	alice, bob := stacktest.UniqueID("alice"), stacktest.UniqueID("bob")
	ids := insertNow(t, alice, 1)
	before := rawItem(t, dynamo.NotificationPK(ids[0]), "N")
	aliceCount := unreadCount(t, alice)
	bobToken := "Authorization: Bearer " + stacktest.Stack(t).Token(bob, time.Hour)
	missing := stacktest.Do(t, http.MethodPost, "/v1/users/"+bob+"/inbox/nnope/read", nil, bobToken)
	for _, c := range []struct{ method, path string }{
		{http.MethodPost, "/v1/users/" + bob + "/inbox/" + ids[0] + "/read"},
		{http.MethodPost, "/v1/users/" + bob + "/inbox/" + ids[0] + "/archive"},
		{http.MethodGet, "/v1/users/" + alice + "/inbox"},
		{http.MethodGet, "/v1/users/" + alice + "/inbox/unread-count"},
		{http.MethodPost, "/v1/users/" + alice + "/inbox/" + ids[0] + "/read"},
		{http.MethodPost, "/v1/users/" + alice + "/inbox/" + ids[0] + "/archive"},
		{http.MethodPost, "/v1/users/" + alice + "/inbox/read-all"},
	} {
		resp := stacktest.Do(t, c.method, c.path, nil, bobToken)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s %s as bob: %d %s, want 404", c.method, c.path, resp.StatusCode, resp.Body)
		}
		if string(resp.Body) != string(missing.Body) {
			t.Errorf("%s %s answers %s, unlike a missing item (%s)", c.method, c.path, resp.Body, missing.Body)
		}
	}
	if after := rawItem(t, dynamo.NotificationPK(ids[0]), "N"); !reflect.DeepEqual(before, after) {
		t.Errorf("alice's item changed:\nbefore %v\nafter  %v", before, after)
	}
	if c := unreadCount(t, alice); c != aliceCount {
		t.Errorf("alice's badge %+v, was %+v", c, aliceCount)
	}
}

func TestMissingOrInvalidTokenIs401(t *testing.T) {
	user := stacktest.UniqueID("anon")
	st := stacktest.Stack(t)
	good := st.Token(user, time.Hour)
	// A changed character at the signature's start: its last characters
	// carry unused bits, and a token ending "xw" was still valid as "xx"
	// (once in about a thousand runs).
	sig := strings.LastIndexByte(good, '.') + 1
	swap := byte('A')
	if good[sig] == swap {
		swap = 'B'
	}
	tampered := good[:sig] + string(swap) + good[sig+1:]
	headers := map[string][]string{
		"missing":    nil,
		"not bearer": {"Authorization: Basic dXNlcjpwYXNz"},
		"garbage":    {"Authorization: Bearer not-a-jwt"},
		"tampered":   {"Authorization: Bearer " + tampered},
		"expired":    {"Authorization: Bearer " + st.Token(user, -time.Minute)},
	}
	for name, h := range headers {
		for _, c := range []struct{ method, path string }{
			{http.MethodGet, "/v1/users/" + user + "/inbox"},
			{http.MethodGet, "/v1/users/" + user + "/inbox/unread-count"},
			{http.MethodPost, "/v1/users/" + user + "/inbox/nx/read"},
			{http.MethodPost, "/v1/users/" + user + "/inbox/read-all"},
			{http.MethodPost, "/v1/users/" + user + "/inbox/nx/archive"},
		} {
			if resp := stacktest.Do(t, c.method, c.path, nil, h...); resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s token, %s %s: %d %s", name, c.method, c.path, resp.StatusCode, resp.Body)
			}
		}
	}
}

// TestItemsRenderInTheUsersLocale: the recipient's locale from intake wins,
// else the profile's.
func TestItemsRenderInTheUsersLocale(t *testing.T) {
	user := stacktest.UniqueID("loc")
	if err := stacktest.Store(t).PutUser(context.Background(), &domain.User{ID: user, Locale: "ja-JP"}); err != nil {
		t.Fatal(err)
	}
	post := func(locale string) string {
		body := `{"type":"security.login_alert","recipient":{"userId":"` + user + `"` + locale + `},"data":{"url":"https://example.com/s/1"}}`
		return stacktest.Notify(t, body)
	}
	profile := post("")
	english := post(`,"locale":"en"`)
	byID := map[string]item{}
	for _, it := range listAll(t, user, "all") {
		byID[it.ID] = it
	}
	p, e := byID[profile], byID[english]
	if p.Title != "新しいサインイン" || p.Kind != "notification" || p.Type != "security.login_alert" || p.URL == nil || *p.URL != "https://example.com/s/1" || p.ReadAt != nil || p.ArchivedAt != nil {
		t.Errorf("profile-locale item: %+v", p)
	}
	if e.Title != "New sign-in" || e.Body == "" {
		t.Errorf("recipient-locale item: %+v", e)
	}
}

// TestNotificationsExpireAfterTheRetentionPeriod: the item intake writes
// carries a TTL of createdAt + RETENTION_DAYS (90 by default).
func TestNotificationsExpireAfterTheRetentionPeriod(t *testing.T) {
	user := stacktest.UniqueID("ttl")
	resp := stacktest.Do(t, http.MethodPost, "/v1/notifications", `{"type":"security.login_alert","recipient":{"userId":"`+user+`"},"data":{"url":"https://example.com/s/1"}}`)
	var a struct{ ID, CreatedAt string }
	resp.JSON(t, &a)
	created, err := time.Parse(time.RFC3339Nano, a.CreatedAt)
	if err != nil {
		t.Fatal(err)
	}
	it := rawItem(t, dynamo.NotificationPK(a.ID), "N")
	ttl, _ := it["ttl"].(*types.AttributeValueMemberN)
	if want := strconv.FormatInt(created.Add(90*24*time.Hour).Unix(), 10); ttl == nil || ttl.Value != want {
		t.Errorf("ttl %v, want %s", ttl, want)
	}
}

// TestEachPageIsOneQuery counts the DynamoDB requests the production API
// wiring makes: a page is one Query per inbox partition it reads — the "all"
// page two, its unread and read ranges (one index: docs/decisions.md), a
// filtered page one — plus one BatchGetItem for the user's announcement
// markers and locale; the next page the same; the badge one Query (plus the
// markers when announcements are active).
func TestEachPageIsOneQuery(t *testing.T) {
	st := stacktest.Stack(t)
	user := stacktest.UniqueID("calls")
	insertNow(t, user, 30)
	calls := devstack.NewCalls()
	cfg := st.AWS.Copy()
	cfg.APIOptions = append(cfg.APIOptions, calls.Middleware)
	env := map[string]string{"TABLE_NAME": st.Resources.Table, "CAMPAIGN_QUEUE_URL": st.Resources.Queues["CampaignQueue"].URL}
	h, err := apifn.New(app.Deps{AWS: cfg, Getenv: func(k string) string { return env[k] }, Now: st.Clock.Now,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Catalog: catalog.MustLoad()})
	if err != nil {
		t.Fatal(err)
	}
	call := func(routeKey string, query map[string]string) events.APIGatewayV2HTTPResponse {
		resp, err := h.Handle(context.Background(), events.APIGatewayV2HTTPRequest{
			RouteKey: routeKey, PathParameters: map[string]string{"userId": user}, QueryStringParameters: query,
			RequestContext: events.APIGatewayV2HTTPRequestContext{Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
				JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": user}}}},
		})
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s %v", routeKey, resp.StatusCode, resp.Body, err)
		}
		return resp
	}
	call("GET /v1/users/{userId}/inbox/unread-count", nil) // warms the instance's announcement cache
	withAnnouncements := len(activeAnnouncements(t)) > 0

	calls.Reset()
	resp := call("GET /v1/users/{userId}/inbox", map[string]string{"limit": "10"})
	want := map[string]int{"DynamoDB.Query": 2, "DynamoDB.BatchGetItem": 1}
	if got := calls.Snapshot(); !reflect.DeepEqual(got, want) {
		t.Errorf("first page: %v, want %v", got, want)
	}
	var p page
	if err := json.Unmarshal([]byte(resp.Body), &p); err != nil || p.NextCursor == "" {
		t.Fatalf("first page %s: %v", resp.Body, err)
	}
	calls.Reset()
	call("GET /v1/users/{userId}/inbox", map[string]string{"limit": "10", "cursor": p.NextCursor})
	if got := calls.Snapshot(); !reflect.DeepEqual(got, want) {
		t.Errorf("next page: %v, want %v", got, want)
	}
	calls.Reset()
	call("GET /v1/users/{userId}/inbox", map[string]string{"limit": "10", "filter": "unread"})
	if got, want := calls.Snapshot(), map[string]int{"DynamoDB.Query": 1, "DynamoDB.BatchGetItem": 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("unread page: %v, want %v", got, want)
	}
	calls.Reset()
	call("GET /v1/users/{userId}/inbox/unread-count", nil)
	want = map[string]int{"DynamoDB.Query": 1}
	if withAnnouncements {
		want["DynamoDB.BatchGetItem"] = 1
	}
	if got := calls.Snapshot(); !reflect.DeepEqual(got, want) {
		t.Errorf("unread count: %v, want %v", got, want)
	}
}

// TestReadAllIsBoundedPerCall drives the adapter with a small bound: each
// call marks at most that many, says whether more remain, and leaves items
// newer than its start unread.
func TestReadAllIsBoundedPerCall(t *testing.T) {
	user := stacktest.UniqueID("bound")
	base := stacktest.Stack(t).Clock.Now().Add(-time.Minute)
	insert(t, user, "old", 25, func(i int) time.Time { return base.Add(time.Duration(i) * time.Millisecond) })
	insert(t, user, "late", 1, func(int) time.Time { return base.Add(time.Hour) })
	st := stacktest.Store(t)
	ctx := context.Background()
	upTo := base.Add(time.Second)
	for _, want := range []struct {
		updated int
		more    bool
	}{{10, true}, {10, true}, {5, false}, {0, false}} {
		n, more, err := st.MarkAllRead(ctx, user, upTo, 10)
		if err != nil || n != want.updated || more != want.more {
			t.Fatalf("MarkAllRead = %d, %v, %v; want %d, %v", n, more, err, want.updated, want.more)
		}
	}
	if c, err := st.CountUnread(ctx, user, 100); err != nil || c != 1 {
		t.Errorf("unread after read-all up to %s: %d %v, want the later item only", upTo, c, err)
	}
}

// TestPresenceIsAtMostOneWritePerMinute calls presence 100 times (and reads
// the inbox) within a minute: at most one DynamoDB write for it, and the
// stored lastSeenAt is the first call's time.
func TestPresenceIsAtMostOneWritePerMinute(t *testing.T) {
	st := stacktest.Stack(t)
	user := stacktest.UniqueID("presence")
	st.Calls.Reset()
	start := st.Clock.Now()
	for i := range 100 {
		path := "/v1/users/" + user + "/presence"
		method := http.MethodPost
		if i%10 == 9 {
			method, path = http.MethodGet, "/v1/users/"+user+"/inbox/unread-count"
		}
		if resp := asUser(t, user, method, path, nil); resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, resp.Body)
		}
	}
	if st.Clock.Now().Sub(start) >= time.Minute {
		t.Skip("the calls took a minute: the machine is too slow to check the bound")
	}
	if n := st.Calls.FunctionSnapshot("ApiFunction")["DynamoDB.UpdateItem"]; n > 1 {
		t.Errorf("%d UpdateItem requests for 100 presence calls, want at most 1", n)
	}
	p, err := stacktest.Store(t).GetRecipientProfile(context.Background(), user)
	if err != nil {
		t.Fatal(err)
	}
	if p.LastSeenAt.IsZero() || p.LastSeenAt.Before(start.Add(-time.Second)) || p.LastSeenAt.After(st.Clock.Now()) {
		t.Errorf("lastSeenAt %v, want within the calls (from %v)", p.LastSeenAt, start)
	}
}
