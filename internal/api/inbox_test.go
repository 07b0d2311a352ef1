package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/inbox"
)

// fakeInbox is an in-memory table for the inbox and announcement routes,
// with the adapter's semantics (ownership, first time kept, limit+1 reads)
// and call counters.
type fakeInbox struct {
	mu            sync.Mutex
	notifications map[string]*domain.Notification
	announcements map[string]*inbox.Announcement
	markers       map[string]map[string]inbox.Marker // user → announcement → marker
	locales       map[string]string
	calls         map[string]int
	failList      error
}

var _ InboxStore = (*fakeInbox)(nil)
var _ AnnouncementStore = (*fakeInbox)(nil)

func newFakeInbox() *fakeInbox {
	return &fakeInbox{notifications: map[string]*domain.Notification{}, announcements: map[string]*inbox.Announcement{},
		markers: map[string]map[string]inbox.Marker{}, locales: map[string]string{}, calls: map[string]int{}}
}

func sortKey(t time.Time, id string) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000000Z") + "#" + id
}

func (f *fakeInbox) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

func (f *fakeInbox) ListInbox(_ context.Context, user string, filter inbox.Filter, position string, limit int) ([]inbox.Entry, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["ListInbox"]++
	if f.failList != nil {
		return nil, false, f.failList
	}
	var out []inbox.Entry
	for _, n := range f.notifications {
		k := sortKey(n.CreatedAt, n.ID)
		if n.Recipient.UserID != user || (position != "" && k >= position) || !inbox.Shows(filter, !n.ReadAt.IsZero(), !n.ArchivedAt.IsZero()) {
			continue
		}
		c := *n
		out = append(out, inbox.Entry{SortKey: k, Notification: &c})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SortKey > out[j].SortKey })
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, nil
}

func (f *fakeInbox) CountUnread(_ context.Context, user string, limit int) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["CountUnread"]++
	n := 0
	for _, x := range f.notifications {
		if x.Recipient.UserID == user && x.ReadAt.IsZero() && x.ArchivedAt.IsZero() {
			n++
		}
	}
	return min(n, limit), nil
}

func (f *fakeInbox) owned(user, id string) (*domain.Notification, error) {
	n, ok := f.notifications[id]
	if !ok || n.Recipient.UserID != user {
		return nil, fmt.Errorf("item %s: %w", id, domain.ErrNotFound)
	}
	return n, nil
}

func (f *fakeInbox) MarkRead(_ context.Context, user, id string, at time.Time) (*domain.Notification, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.owned(user, id)
	if err != nil {
		return nil, err
	}
	if n.ReadAt.IsZero() {
		n.ReadAt = at
	}
	c := *n
	return &c, nil
}

func (f *fakeInbox) Archive(_ context.Context, user, id string, at time.Time) (*domain.Notification, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.owned(user, id)
	if err != nil {
		return nil, err
	}
	if n.ArchivedAt.IsZero() {
		n.ArchivedAt = at
	}
	c := *n
	return &c, nil
}

func (f *fakeInbox) MarkAllRead(_ context.Context, user string, upTo time.Time, limit int) (int, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["MarkAllRead"] = limit
	n := 0
	for _, x := range f.notifications {
		if x.Recipient.UserID == user && x.ReadAt.IsZero() && x.ArchivedAt.IsZero() && !x.CreatedAt.After(upTo) {
			if n == limit {
				return n, true, nil
			}
			x.ReadAt = upTo
			n++
		}
	}
	return n, false, nil
}

func (f *fakeInbox) InboxState(_ context.Context, user string, ids []string, withLocale bool) (inbox.UserState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["InboxState"]++
	st := inbox.UserState{Markers: map[string]inbox.Marker{}}
	if withLocale {
		st.Locale = f.locales[user]
	}
	for _, id := range ids {
		if m, ok := f.markers[user][id]; ok {
			st.Markers[id] = m
		}
	}
	return st, nil
}

func (f *fakeInbox) marker(user, id string, change func(*inbox.Marker) bool) (inbox.Marker, bool) {
	if f.markers[user] == nil {
		f.markers[user] = map[string]inbox.Marker{}
	}
	m := f.markers[user][id]
	changed := change(&m)
	f.markers[user][id] = m
	return m, changed
}

func (f *fakeInbox) MarkAnnouncementRead(_ context.Context, user string, a *inbox.Announcement, at time.Time, onlyUnread bool) (inbox.Marker, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["MarkAnnouncementRead"]++
	m, changed := f.marker(user, a.ID, func(m *inbox.Marker) bool {
		if onlyUnread && (m.Read() || m.Archived()) {
			return false
		}
		if m.ReadAt.IsZero() {
			m.ReadAt = at
		}
		return true
	})
	return m, changed, nil
}

func (f *fakeInbox) ArchiveAnnouncement(_ context.Context, user string, a *inbox.Announcement, at time.Time) (inbox.Marker, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, _ := f.marker(user, a.ID, func(m *inbox.Marker) bool {
		if m.ArchivedAt.IsZero() {
			m.ArchivedAt = at
		}
		return true
	})
	return m, nil
}

func (f *fakeInbox) CreateAnnouncement(_ context.Context, a *inbox.Announcement) (*inbox.Announcement, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if old, ok := f.announcements[a.ID]; ok {
		c := *old
		return &c, domain.ErrConflict
	}
	a.SortKey = sortKey(a.PublishedAt, a.ID)
	c := *a
	f.announcements[a.ID] = &c
	return a, nil
}

func (f *fakeInbox) GetAnnouncement(_ context.Context, id string) (*inbox.Announcement, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["GetAnnouncement"]++
	a, ok := f.announcements[id]
	if !ok {
		return nil, domain.ErrNotFound
	}
	c := *a
	return &c, nil
}

func (f *fakeInbox) sortedAnnouncements() []inbox.Announcement {
	var out []inbox.Announcement
	for _, a := range f.announcements {
		out = append(out, *a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SortKey > out[j].SortKey })
	return out
}

func (f *fakeInbox) ListAnnouncements(_ context.Context, position string, limit int) ([]inbox.Announcement, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []inbox.Announcement
	for _, a := range f.sortedAnnouncements() {
		if position == "" || a.SortKey < position {
			out = append(out, a)
		}
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

func (f *fakeInbox) UnexpiredAnnouncements(_ context.Context, now time.Time) ([]inbox.Announcement, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["UnexpiredAnnouncements"]++
	var out []inbox.Announcement
	for _, a := range f.sortedAnnouncements() {
		if a.ExpiresAt.After(now) {
			out = append(out, a)
		}
	}
	return out, nil
}

// fixture is a handler over a fake table with a settable clock.
type fixture struct {
	t             *testing.T
	h             *Handler
	inbox         *InboxHandler
	announcements *AnnouncementsHandler
	store         *fakeInbox
	now           time.Time
}

var testStart = time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)

func newFixture(t *testing.T) *fixture {
	fx := &fixture{t: t, store: newFakeInbox(), now: testStart}
	fx.wire(nil)
	return fx
}

// wire builds the inbox and announcement routes over the fake table, with
// one announcement cache for both as an instance has; presence nil records
// none.
func (fx *fixture) wire(presence PresenceStore) {
	now, log := func() time.Time { return fx.now }, slog.New(slog.NewTextHandler(io.Discard, nil))
	active := NewAnnouncementCache(fx.store, now)
	fx.announcements = NewAnnouncements(AnnouncementsDeps{Announcements: fx.store, ActiveAnnouncements: active, Now: now, Log: log})
	fx.inbox = NewInbox(InboxDeps{Inbox: fx.store, ActiveAnnouncements: active, Presence: presence, Catalog: catalog.MustLoad(), Now: now, Log: log})
	fx.h = New(Deps{Log: log, Inbox: fx.inbox, Announcements: fx.announcements})
}

func (fx *fixture) addNotification(user, id, typ, locale string, age time.Duration) *domain.Notification {
	n := &domain.Notification{ID: id, Type: typ, Recipient: domain.Recipient{UserID: user, Locale: locale},
		Data: map[string]any{"url": "https://example.com/" + id}, CreatedAt: fx.now.Add(-age), Status: domain.NotificationAccepted}
	fx.store.notifications[id] = n
	return n
}

func (fx *fixture) addAnnouncement(id string, published, expires time.Duration) *inbox.Announcement {
	a := &inbox.Announcement{ID: id, Title: "T " + id, Body: "B " + id, PublishedAt: fx.now.Add(published), ExpiresAt: fx.now.Add(expires), CreatedAt: fx.now}
	a.SortKey = sortKey(a.PublishedAt, id)
	fx.store.announcements[id] = a
	return a
}

type call struct {
	route   string
	path    map[string]string
	query   map[string]string
	body    string
	sub     string // JWT subject
	caller  string // IAM user
	headers map[string]string
}

type result struct {
	status int
	body   string
	header map[string]string
}

func (r result) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.body), v); err != nil {
		t.Fatalf("decode %q: %v", r.body, err)
	}
}

func (r result) code(t *testing.T) string {
	var p Problem
	r.decode(t, &p)
	return p.Code
}

func (fx *fixture) do(c call) result {
	fx.t.Helper()
	ev := events.APIGatewayV2HTTPRequest{RouteKey: c.route, PathParameters: c.path, QueryStringParameters: c.query, Body: c.body, Headers: c.headers}
	if c.body != "" && ev.Headers["content-type"] == "" {
		ev.Headers = maps.Clone(ev.Headers)
		if ev.Headers == nil {
			ev.Headers = map[string]string{}
		}
		ev.Headers["content-type"] = "application/json"
	}
	switch {
	case c.sub != "":
		ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": c.sub}}}
	case c.caller != "":
		ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: "arn:aws:iam::1:user/" + c.caller}}
	}
	resp, err := fx.h.Handle(context.Background(), ev)
	if err != nil {
		fx.t.Fatal(err)
	}
	return result{status: resp.StatusCode, body: resp.Body, header: resp.Headers}
}

const (
	routeList     = "GET /v1/users/{userId}/inbox"
	routeCount    = "GET /v1/users/{userId}/inbox/unread-count"
	routeRead     = "POST /v1/users/{userId}/inbox/{id}/read"
	routeReadAll  = "POST /v1/users/{userId}/inbox/read-all"
	routeArchive  = "POST /v1/users/{userId}/inbox/{id}/archive"
	routeAnnounce = "POST /v1/announcements"
	routeAnnList  = "GET /v1/announcements"
)

func annID(s string) string { return inbox.AnnouncementIDPrefix + fmt.Sprintf("%026s", s) }

func TestInboxRoutesAreConfinedToTheTokensSubject(t *testing.T) {
	fx := newFixture(t)
	fx.addNotification("alice", "n1", "security.login_alert", "", time.Minute)
	tests := []struct {
		name   string
		c      call
		status int
		code   string
	}{
		{"no identity", call{route: routeList, path: map[string]string{"userId": "alice"}}, 401, "unauthenticated"},
		{"service caller on a user route", call{route: routeCount, path: map[string]string{"userId": "alice"}, caller: "svc"}, 401, "unauthenticated"},
		{"list another inbox", call{route: routeList, path: map[string]string{"userId": "alice"}, sub: "mallory"}, 404, "not_found"},
		{"count another inbox", call{route: routeCount, path: map[string]string{"userId": "alice"}, sub: "mallory"}, 404, "not_found"},
		{"read another's item in own inbox", call{route: routeRead, path: map[string]string{"userId": "mallory", "id": "n1"}, sub: "mallory"}, 404, "not_found"},
		{"archive another's item in own inbox", call{route: routeArchive, path: map[string]string{"userId": "mallory", "id": "n1"}, sub: "mallory"}, 404, "not_found"},
		{"read in another inbox", call{route: routeRead, path: map[string]string{"userId": "alice", "id": "n1"}, sub: "mallory"}, 404, "not_found"},
		{"read-all of another inbox", call{route: routeReadAll, path: map[string]string{"userId": "alice"}, sub: "mallory"}, 404, "not_found"},
		{"malformed id", call{route: routeRead, path: map[string]string{"userId": "alice", "id": "../x"}, sub: "alice"}, 404, "not_found"},
		{"missing id", call{route: routeRead, path: map[string]string{"userId": "alice", "id": "n404"}, sub: "alice"}, 404, "not_found"},
		{"encoded subject of another user", call{route: routeList, path: map[string]string{"userId": "auth0%7Cmallory"}, sub: "auth0|alice"}, 404, "not_found"},
		// An email address as a user id is refused wherever one enters (issue 13), the token's subject too.
		{"email-shaped subject", call{route: routeList, path: map[string]string{"userId": "carol@corp.example"}, sub: "carol@corp.example"}, 400, "invalid_user_id"},
		{"encoded email-shaped subject", call{route: routeCount, path: map[string]string{"userId": "carol%40corp.example"}, sub: "carol@corp.example"}, 400, "invalid_user_id"},
		{"email-shaped path, another subject", call{route: routeReadAll, path: map[string]string{"userId": "carol@corp.example"}, sub: "mallory"}, 400, "invalid_user_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := fx.do(tt.c)
			if r.status != tt.status || r.code(t) != tt.code {
				t.Fatalf("got %d %s, want %d %s", r.status, r.body, tt.status, tt.code)
			}
			if r.header["Content-Type"] != "application/problem+json" {
				t.Errorf("Content-Type = %q", r.header["Content-Type"])
			}
		})
	}
	if n := fx.store.notifications["n1"]; !n.ReadAt.IsZero() || !n.ArchivedAt.IsZero() {
		t.Errorf("alice's item changed: %+v", n)
	}
}

func TestPercentEncodedSubjectsMatch(t *testing.T) {
	fx := newFixture(t)
	for _, param := range []string{"auth0|alice", "auth0%7Calice", "auth0%7calice"} {
		if r := fx.do(call{route: routeCount, path: map[string]string{"userId": param}, sub: "auth0|alice"}); r.status != 200 {
			t.Errorf("path %q: %d %s", param, r.status, r.body)
		}
	}
}

func TestListValidatesItsQuery(t *testing.T) {
	fx := newFixture(t)
	allCursor := inbox.Cursor{Scope: "all", Position: sortKey(testStart, "n1")}.Encode()
	tests := []struct {
		query map[string]string
		code  string
	}{
		{map[string]string{"limit": "0"}, "invalid_limit"},
		{map[string]string{"limit": "101"}, "invalid_limit"},
		{map[string]string{"limit": "x"}, "invalid_limit"},
		{map[string]string{"filter": "read"}, "invalid_filter"},
		{map[string]string{"cursor": "garbage"}, "invalid_cursor"},
		{map[string]string{"cursor": ""}, "invalid_cursor"},
		{map[string]string{"cursor": allCursor, "filter": "unread"}, "invalid_cursor"},
	}
	for _, tt := range tests {
		r := fx.do(call{route: routeList, path: map[string]string{"userId": "u"}, sub: "u", query: tt.query})
		if r.status != http.StatusBadRequest || r.code(t) != tt.code {
			t.Errorf("%v: got %d %s, want 400 %s", tt.query, r.status, r.body, tt.code)
		}
	}
	if n := fx.store.count("ListInbox"); n != 0 {
		t.Errorf("bad queries reached the store %d times", n)
	}
}

func listPage(t *testing.T, fx *fixture, user string, query map[string]string) inboxPage {
	t.Helper()
	r := fx.do(call{route: routeList, path: map[string]string{"userId": user}, sub: user, query: query})
	if r.status != http.StatusOK {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	var p inboxPage
	r.decode(t, &p)
	return p
}

func TestListRendersInTheUsersLocaleAndMergesAnnouncements(t *testing.T) {
	fx := newFixture(t)
	fx.store.locales["u"] = "ja-JP"
	fx.addNotification("u", "n-en", "security.login_alert", "en", 3*time.Minute)
	fx.addNotification("u", "n-profile", "security.login_alert", "", time.Minute)
	fx.addNotification("u", "n-gone", "no.longer.in.catalog", "", 4*time.Minute)
	fx.addNotification("other", "n-other", "security.login_alert", "", 30*time.Second)
	fx.addAnnouncement(annID("1"), -2*time.Minute, time.Hour)
	fx.addAnnouncement(annID("future"), time.Minute, time.Hour)
	fx.addAnnouncement(annID("expired"), -time.Hour, -time.Second)

	p := listPage(t, fx, "u", nil)
	var ids []string
	for _, it := range p.Items {
		ids = append(ids, it.ID)
	}
	if want := []string{"n-profile", annID("1"), "n-en", "n-gone"}; !slices.Equal(ids, want) {
		t.Fatalf("items %v, want %v", ids, want)
	}
	if p.NextCursor != "" {
		t.Errorf("last page has a cursor")
	}
	byID := map[string]inboxItem{}
	for _, it := range p.Items {
		byID[it.ID] = it
	}
	if it := byID["n-profile"]; it.Title != "新しいサインイン" || it.Kind != "notification" || it.URL == nil || *it.URL != "https://example.com/n-profile" || it.ReadAt != nil {
		t.Errorf("profile-locale item: %+v", it)
	}
	if it := byID["n-en"]; it.Title != "New sign-in" {
		t.Errorf("recipient-locale item title %q, want the English one", it.Title)
	}
	if it := byID["n-gone"]; it.Title != "no.longer.in.catalog" {
		t.Errorf("unrenderable item title %q, want its type", it.Title)
	}
	if it := byID[annID("1")]; it.Kind != "announcement" || it.Title != "T "+annID("1") || it.URL != nil {
		t.Errorf("announcement item: %+v", it)
	}
	if n := fx.store.count("ListInbox"); n != 1 {
		t.Errorf("one page took %d queries", n)
	}
	if n := fx.store.count("InboxState"); n != 1 {
		t.Errorf("one page took %d state reads", n)
	}
}

func TestListPagesWithoutRepeatsOrGapsAndEachPageIsOneQuery(t *testing.T) {
	fx := newFixture(t)
	var want []string
	for i := range 45 {
		id := fmt.Sprintf("n%03d", i)
		fx.addNotification("u", id, "security.login_alert", "", time.Duration(100-i)*time.Minute)
		want = append(want, id)
		if i%10 == 3 { // a second newer than the notification
			a := fx.addAnnouncement(annID(fmt.Sprint(i)), -time.Duration(100-i)*time.Minute+time.Second, time.Hour)
			want = append(want, a.ID)
		}
	}
	slices.Reverse(want)
	var got []string
	query := map[string]string{"limit": "7"}
	for page := 1; ; page++ {
		p := listPage(t, fx, "u", query)
		if len(p.Items) > 7 {
			t.Fatalf("page of %d items", len(p.Items))
		}
		for _, it := range p.Items {
			got = append(got, it.ID)
		}
		if n := fx.store.count("ListInbox"); n != page {
			t.Fatalf("%d pages took %d queries", page, n)
		}
		// Newer items arrive between pages and must not appear.
		fx.now = fx.now.Add(time.Second)
		fx.addNotification("u", fmt.Sprintf("new%d", page), "security.login_alert", "", 0)
		if p.NextCursor == "" {
			break
		}
		query["cursor"] = p.NextCursor
	}
	if !slices.Equal(got, want) {
		t.Errorf("pages\n%v\nwant\n%v", got, want)
	}
}

func TestListFilters(t *testing.T) {
	fx := newFixture(t)
	fx.addNotification("u", "unread", "security.login_alert", "", 3*time.Minute)
	fx.addNotification("u", "read", "security.login_alert", "", 2*time.Minute).ReadAt = fx.now
	fx.addNotification("u", "archived", "security.login_alert", "", time.Minute).ArchivedAt = fx.now
	fx.addAnnouncement(annID("unread"), -5*time.Minute, time.Hour)
	fx.addAnnouncement(annID("read"), -6*time.Minute, time.Hour)
	fx.addAnnouncement(annID("archived"), -7*time.Minute, time.Hour)
	fx.store.markers["u"] = map[string]inbox.Marker{annID("read"): {ReadAt: fx.now}, annID("archived"): {ArchivedAt: fx.now}}
	tests := []struct {
		filter string
		want   []string
	}{
		{"", []string{"read", "unread", annID("unread"), annID("read")}},
		{"unread", []string{"unread", annID("unread")}},
		{"archived", []string{"archived", annID("archived")}},
	}
	for _, tt := range tests {
		p := listPage(t, fx, "u", map[string]string{"filter": tt.filter})
		var got []string
		for _, it := range p.Items {
			got = append(got, it.ID)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("filter %q: %v, want %v", tt.filter, got, tt.want)
		}
	}
}

func badge(t *testing.T, fx *fixture, user string) inbox.Badge {
	t.Helper()
	r := fx.do(call{route: routeCount, path: map[string]string{"userId": user}, sub: user})
	if r.status != http.StatusOK {
		t.Fatalf("count: %d %s", r.status, r.body)
	}
	var b inbox.Badge
	r.decode(t, &b)
	if strings.Contains(r.body, "capped") != b.Capped {
		t.Errorf("capped present only when true: %s", r.body)
	}
	return b
}

func TestUnreadCountAddsUnreadActiveAnnouncementsAndCaps(t *testing.T) {
	fx := newFixture(t)
	for i := range 3 {
		fx.addNotification("u", fmt.Sprintf("n%d", i), "security.login_alert", "", time.Minute)
	}
	fx.addNotification("u", "r", "security.login_alert", "", time.Minute).ReadAt = fx.now
	fx.addAnnouncement(annID("a"), -time.Minute, time.Hour)
	fx.addAnnouncement(annID("b"), -time.Minute, time.Hour)
	fx.addAnnouncement(annID("future"), time.Minute, time.Hour)
	fx.store.markers["u"] = map[string]inbox.Marker{annID("b"): {ReadAt: fx.now}}
	if b := badge(t, fx, "u"); b != (inbox.Badge{Count: 4, Display: "4"}) {
		t.Errorf("badge %+v, want 4", b)
	}
	for i := range 97 {
		fx.addNotification("u", fmt.Sprintf("m%d", i), "security.login_alert", "", time.Minute)
	}
	if b := badge(t, fx, "u"); b != (inbox.Badge{Count: 100, Display: "99+", Capped: true}) {
		t.Errorf("badge %+v, want 99+", b)
	}
	if b := badge(t, fx, "nobody"); b != (inbox.Badge{Count: 2, Display: "2"}) {
		t.Errorf("a user without items or markers: %+v, want both active announcements", b)
	}
}

func TestMarkReadKeepsTheFirstTime(t *testing.T) {
	fx := newFixture(t)
	fx.addNotification("u", "n1", "security.login_alert", "", time.Minute)
	a := fx.addAnnouncement(annID("a"), -time.Minute, time.Hour)
	for _, id := range []string{"n1", a.ID} {
		first := fx.do(call{route: routeRead, path: map[string]string{"userId": "u", "id": id}, sub: "u"})
		fx.now = fx.now.Add(time.Minute)
		second := fx.do(call{route: routeRead, path: map[string]string{"userId": "u", "id": id}, sub: "u"})
		var s1, s2 itemState
		first.decode(t, &s1)
		second.decode(t, &s2)
		if first.status != 200 || second.status != 200 || s1.ReadAt == nil || s2.ReadAt == nil || *s1.ReadAt != *s2.ReadAt {
			t.Errorf("%s: first %d %s, second %d %s", id, first.status, first.body, second.status, second.body)
		}
	}
}

func TestInactiveAnnouncementsCannotBeChanged(t *testing.T) {
	fx := newFixture(t)
	fx.addAnnouncement(annID("future"), time.Minute, time.Hour)
	fx.addAnnouncement(annID("expired"), -time.Hour, -time.Minute)
	for _, id := range []string{annID("future"), annID("expired"), annID("missing")} {
		for _, route := range []string{routeRead, routeArchive} {
			r := fx.do(call{route: route, path: map[string]string{"userId": "u", "id": id}, sub: "u"})
			if r.status != 404 {
				t.Errorf("%s %s: %d %s", route, id, r.status, r.body)
			}
		}
	}
	if len(fx.store.markers["u"]) != 0 {
		t.Errorf("markers written: %v", fx.store.markers["u"])
	}
}

func TestReadAllMarksNotificationsAndOnlyActiveUnreadAnnouncements(t *testing.T) {
	fx := newFixture(t)
	fx.addNotification("u", "n1", "security.login_alert", "", time.Minute)
	fx.addNotification("u", "n2", "security.login_alert", "", time.Minute)
	fx.addNotification("u", "n3", "security.login_alert", "", time.Minute).ReadAt = fx.now
	fx.addNotification("v", "v1", "security.login_alert", "", time.Minute)
	fx.addAnnouncement(annID("a"), -time.Minute, time.Hour)
	fx.addAnnouncement(annID("read"), -time.Minute, time.Hour)
	fx.addAnnouncement(annID("archived"), -time.Minute, time.Hour)
	fx.addAnnouncement(annID("future"), time.Minute, time.Hour)
	fx.addAnnouncement(annID("expired"), -time.Hour, -time.Minute)
	fx.store.markers["u"] = map[string]inbox.Marker{annID("read"): {ReadAt: fx.now}, annID("archived"): {ArchivedAt: fx.now}}

	r := fx.do(call{route: routeReadAll, path: map[string]string{"userId": "u"}, sub: "u"})
	var res readAllResult
	r.decode(t, &res)
	if r.status != 200 || res.Updated != 3 || res.More {
		t.Fatalf("read-all: %d %s, want 3 updated", r.status, r.body)
	}
	if limit := fx.store.count("MarkAllRead"); limit != ReadAllPerCall {
		t.Errorf("read-all asked the store for up to %d, want %d", limit, ReadAllPerCall)
	}
	got := slices.Sorted(maps.Keys(fx.store.markers["u"]))
	want := slices.Sorted(slices.Values([]string{annID("a"), annID("archived"), annID("read")}))
	if !slices.Equal(got, want) {
		t.Errorf("markers %v, want %v", got, want)
	}
	if !fx.store.markers["u"][annID("archived")].ReadAt.IsZero() {
		t.Errorf("an archived announcement was marked read")
	}
	if b := badge(t, fx, "u"); b.Count != 0 {
		t.Errorf("badge after read-all: %+v", b)
	}
	if !fx.store.notifications["v1"].ReadAt.IsZero() {
		t.Errorf("another user's item was read")
	}
	r = fx.do(call{route: routeReadAll, path: map[string]string{"userId": "u"}, sub: "u"})
	if r.decode(t, &res); res.Updated != 0 {
		t.Errorf("second read-all updated %d", res.Updated)
	}
}

func TestArchiveLeavesAllAndUnread(t *testing.T) {
	fx := newFixture(t)
	fx.addNotification("u", "n1", "security.login_alert", "", time.Minute)
	a := fx.addAnnouncement(annID("a"), -time.Minute, time.Hour)
	for _, id := range []string{"n1", a.ID} {
		r := fx.do(call{route: routeArchive, path: map[string]string{"userId": "u", "id": id}, sub: "u"})
		var s itemState
		if r.decode(t, &s); r.status != 200 || s.ArchivedAt == nil {
			t.Fatalf("archive %s: %d %s", id, r.status, r.body)
		}
	}
	if p := listPage(t, fx, "u", nil); len(p.Items) != 0 {
		t.Errorf("all still lists %+v", p.Items)
	}
	if p := listPage(t, fx, "u", map[string]string{"filter": "archived"}); len(p.Items) != 2 {
		t.Errorf("archived lists %+v", p.Items)
	}
	if b := badge(t, fx, "u"); b.Count != 0 {
		t.Errorf("badge %+v", b)
	}
}

func TestAnnouncementCache(t *testing.T) {
	fx := newFixture(t)
	fx.addAnnouncement(annID("a"), -time.Minute, time.Hour)
	badge(t, fx, "u")
	badge(t, fx, "u")
	if n := fx.store.count("UnexpiredAnnouncements"); n != 1 {
		t.Fatalf("two requests within the TTL read announcements %d times", n)
	}
	// Expiry takes effect on time, whatever the cache holds.
	fx.addAnnouncement(annID("soon"), -time.Minute, 2*time.Second)
	fx.h.routes[routeAnnounce](context.Background(), &request{caller: "svc", APIGatewayV2HTTPRequest: events.APIGatewayV2HTTPRequest{
		Body: `{"title":"t","body":"b","expiresAt":"2026-05-02T00:00:00Z"}`}})
	if b := badge(t, fx, "u"); b.Count != 3 {
		t.Fatalf("after a create on this instance: %+v, want 3", b)
	}
	fx.now = fx.now.Add(3 * time.Second)
	if b := badge(t, fx, "u"); b.Count != 2 {
		t.Errorf("after expiry: %+v, want 2", b)
	}
	fx.now = fx.now.Add(AnnouncementCacheTTL)
	badge(t, fx, "u")
	if n := fx.store.count("UnexpiredAnnouncements"); n != 3 {
		t.Errorf("reads = %d, want 3 (first, after create, after TTL)", n)
	}
}

func TestCreateAnnouncement(t *testing.T) {
	valid := `{"title":"Maintenance","body":"Line one\nline two","url":"https://status.example.com","expiresAt":"2026-05-08T00:00:00Z"}`
	tests := []struct {
		name   string
		body   string
		status int
		code   string
	}{
		{"valid", valid, 201, ""},
		{"scheduled", `{"title":"t","body":"b","publishedAt":"2026-05-02T00:00:00Z","expiresAt":"2026-05-03T00:00:00Z"}`, 201, ""},
		{"missing title", `{"body":"b","expiresAt":"2026-05-08T00:00:00Z"}`, 400, "missing_field"},
		{"missing body", `{"title":"t","expiresAt":"2026-05-08T00:00:00Z"}`, 400, "missing_field"},
		{"missing expiry", `{"title":"t","body":"b"}`, 400, "missing_field"},
		{"expired", `{"title":"t","body":"b","expiresAt":"2026-04-30T00:00:00Z"}`, 400, "invalid_expires_at"},
		{"expires before publication", `{"title":"t","body":"b","publishedAt":"2026-06-02T00:00:00Z","expiresAt":"2026-06-01T00:00:00Z"}`, 400, "invalid_expires_at"},
		{"too long lived", `{"title":"t","body":"b","expiresAt":"2028-05-08T00:00:00Z"}`, 400, "invalid_expires_at"},
		{"bad url", `{"title":"t","body":"b","url":"javascript:alert(1)","expiresAt":"2026-05-08T00:00:00Z"}`, 400, "invalid_url"},
		{"url with user info", `{"title":"t","body":"b","url":"https://bank.example@evil.example/","expiresAt":"2026-05-08T00:00:00Z"}`, 400, "invalid_url"},
		{"control in title", `{"title":"t\u0007","body":"b","expiresAt":"2026-05-08T00:00:00Z"}`, 400, "invalid_string"},
		{"long title", `{"title":"` + strings.Repeat("x", 201) + `","body":"b","expiresAt":"2026-05-08T00:00:00Z"}`, 400, "invalid_string"},
		{"unknown field", `{"title":"t","body":"b","expiresAt":"2026-05-08T00:00:00Z","audience":"all"}`, 400, "unknown_field"},
		{"bad time", `{"title":"t","body":"b","expiresAt":"tomorrow"}`, 400, "invalid_time"},
		{"duplicate key", `{"title":"t","title":"u","body":"b","expiresAt":"2026-05-08T00:00:00Z"}`, 400, "duplicate_field"},
		{"wrong-case key", `{"Title":"t","body":"b","expiresAt":"2026-05-08T00:00:00Z"}`, 400, "unknown_field"},
		{"invalid UTF-8", "{\"title\":\"bad\xff\",\"body\":\"b\",\"expiresAt\":\"2026-05-08T00:00:00Z\"}", 400, "invalid_json"},
		{"url with quote and angle bracket", `{"title":"t","body":"b","url":"https://example.com/\"><img src=x>","expiresAt":"2026-05-08T00:00:00Z"}`, 400, "invalid_url"},
		{"bidi override in title", `{"title":"pay \u202eyad","body":"b","expiresAt":"2026-05-08T00:00:00Z"}`, 400, "invalid_string"},
		{"bidi isolate in body", `{"title":"t","body":"b \u2067x\u2069","expiresAt":"2026-05-08T00:00:00Z"}`, 400, "invalid_string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t)
			r := fx.do(call{route: routeAnnounce, caller: "svc", body: tt.body})
			if r.status != tt.status {
				t.Fatalf("got %d %s, want %d", r.status, r.body, tt.status)
			}
			if tt.code != "" {
				if c := r.code(t); c != tt.code {
					t.Errorf("code %q, want %q", c, tt.code)
				}
				if len(fx.store.announcements) != 0 {
					t.Errorf("a rejected announcement was stored")
				}
				return
			}
			var a announcementBody
			r.decode(t, &a)
			if !inbox.IsAnnouncementID(a.ID) || fx.store.announcements[a.ID] == nil || fx.store.announcements[a.ID].Caller != "arn:aws:iam::1:user/svc" {
				t.Errorf("created %+v, stored %+v", a, fx.store.announcements[a.ID])
			}
		})
	}
}

func TestCreateAnnouncementIdempotency(t *testing.T) {
	fx := newFixture(t)
	body := `{"title":"t","body":"b","expiresAt":"2026-05-08T00:00:00Z"}`
	key := map[string]string{"idempotency-key": "k1"}
	first := fx.do(call{route: routeAnnounce, caller: "svc", body: body, headers: key})
	again := fx.do(call{route: routeAnnounce, caller: "svc", body: body, headers: key})
	other := fx.do(call{route: routeAnnounce, caller: "svc2", body: body, headers: key})
	changed := fx.do(call{route: routeAnnounce, caller: "svc", body: strings.Replace(body, `"b"`, `"c"`, 1), headers: key})
	if first.status != 201 || again.status != 201 || again.header["Idempotent-Replayed"] != "true" || first.body != again.body {
		t.Errorf("replay: %d %s / %d %s %v", first.status, first.body, again.status, again.body, again.header)
	}
	if other.status != 201 || other.header["Idempotent-Replayed"] != "" {
		t.Errorf("another caller's key: %d %v", other.status, other.header)
	}
	if changed.status != 422 || changed.code(t) != "idempotency_key_reused" {
		t.Errorf("changed payload: %d %s", changed.status, changed.body)
	}
	if len(fx.store.announcements) != 2 {
		t.Errorf("%d stored, want 2", len(fx.store.announcements))
	}
}

// TestAnnouncementReplayInAnotherZone: the same instants written with
// another offset are the same request (as for notifications' sendAt).
func TestAnnouncementReplayInAnotherZone(t *testing.T) {
	fx := newFixture(t)
	key := map[string]string{"idempotency-key": "k-zone"}
	first := fx.do(call{route: routeAnnounce, caller: "svc", headers: key,
		body: `{"title":"t","body":"b","publishedAt":"2026-05-01T00:00:00Z","expiresAt":"2026-05-08T00:00:00Z"}`})
	again := fx.do(call{route: routeAnnounce, caller: "svc", headers: key,
		body: `{"title":"t","body":"b","publishedAt":"2026-05-01T09:00:00+09:00","expiresAt":"2026-05-07T20:00:00-04:00"}`})
	if first.status != 201 || again.status != 201 || again.header["Idempotent-Replayed"] != "true" {
		t.Errorf("replay in another zone: %d / %d %s %v", first.status, again.status, again.body, again.header)
	}
}

func TestAnnouncementRoutesAreForServices(t *testing.T) {
	fx := newFixture(t)
	for _, route := range []string{routeAnnounce, routeAnnList} {
		r := fx.do(call{route: route, sub: "alice", body: `{}`})
		if r.status != 403 || r.code(t) != "forbidden" {
			t.Errorf("%s with a user token: %d %s", route, r.status, r.body)
		}
	}
}

func TestListAnnouncements(t *testing.T) {
	fx := newFixture(t)
	fx.addAnnouncement(annID("active"), -time.Minute, time.Hour)
	fx.addAnnouncement(annID("scheduled"), time.Hour, 2*time.Hour)
	fx.addAnnouncement(annID("expired"), -time.Hour, -time.Minute)
	var got []string
	query := map[string]string{"limit": "2"}
	for {
		r := fx.do(call{route: routeAnnList, caller: "svc", query: query})
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		var p announcementPage
		r.decode(t, &p)
		for _, a := range p.Items {
			got = append(got, a.ID+"="+a.Status)
		}
		if p.NextCursor == "" {
			break
		}
		query["cursor"] = p.NextCursor
	}
	want := []string{annID("scheduled") + "=scheduled", annID("active") + "=active", annID("expired") + "=expired"}
	if !slices.Equal(got, want) {
		t.Errorf("listed %v, want %v", got, want)
	}
}

func TestStoreFailureIsAProblemWithoutDetail(t *testing.T) {
	fx := newFixture(t)
	fx.store.failList = fmt.Errorf("dynamodb: throttled, user u has secret@example.com")
	r := fx.do(call{route: routeList, path: map[string]string{"userId": "u"}, sub: "u"})
	if r.status != 500 || r.code(t) != "internal" || strings.Contains(r.body, "secret") {
		t.Errorf("got %d %s", r.status, r.body)
	}
}

// fakeAnnouncer records the broadcasts the API starts.
type fakeAnnouncer struct {
	ids []string
	err error
}

func (f *fakeAnnouncer) Announce(_ context.Context, id string) (bool, error) {
	f.ids = append(f.ids, id)
	return f.err == nil, f.err
}

// TestCreateAnnouncementBroadcasts: an announcement active when created
// starts its live broadcast (a replay asks again: the announcer's mark
// makes it once); a scheduled one does not (the scheduler's, when it
// becomes active); a broadcast that cannot start never fails the request.
func TestCreateAnnouncementBroadcasts(t *testing.T) {
	fx := newFixture(t)
	an := &fakeAnnouncer{}
	fx.announcements.announcer = an
	key := map[string]string{"idempotency-key": "k-live"}
	body := `{"title":"t","body":"b","expiresAt":"2026-05-08T00:00:00Z"}`
	first := fx.do(call{route: routeAnnounce, caller: "svc", body: body, headers: key})
	fx.do(call{route: routeAnnounce, caller: "svc", body: body, headers: key})
	var a announcementBody
	first.decode(t, &a)
	if len(an.ids) != 2 || an.ids[0] != a.ID || an.ids[1] != a.ID {
		t.Fatalf("announced %v, want %s (created, then replayed)", an.ids, a.ID)
	}
	an.ids = nil
	if r := fx.do(call{route: routeAnnounce, caller: "svc", body: `{"title":"t","body":"b","publishedAt":"2026-05-02T00:00:00Z","expiresAt":"2026-05-03T00:00:00Z"}`}); r.status != 201 || len(an.ids) != 0 {
		t.Fatalf("scheduled: %d, announced %v", r.status, an.ids)
	}
	an.err = errors.New("queue down")
	if r := fx.do(call{route: routeAnnounce, caller: "svc", body: body}); r.status != 201 || len(an.ids) != 1 {
		t.Errorf("a failed broadcast: %d, announced %v", r.status, an.ids)
	}
}
