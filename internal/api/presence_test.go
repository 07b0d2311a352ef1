package api

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"
)

// fakePresence plays the conditional write of the table: it writes when
// nothing was written within minInterval, and counts every request.
type fakePresence struct {
	mu       sync.Mutex
	lastSeen map[string]time.Time
	requests int
	writes   int
	fail     error
}

var _ PresenceStore = (*fakePresence)(nil)

func (f *fakePresence) TouchPresence(_ context.Context, user string, at time.Time, minInterval time.Duration) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	if f.fail != nil {
		return false, f.fail
	}
	if last, ok := f.lastSeen[user]; ok && last.After(at.Add(-minInterval)) {
		return false, nil
	}
	if f.lastSeen == nil {
		f.lastSeen = map[string]time.Time{}
	}
	f.lastSeen[user] = at
	f.writes++
	return true, nil
}

const routePresence = "POST /v1/users/{userId}/presence"

func newPresenceFixture(t *testing.T, store *fakePresence) *fixture {
	fx := newFixture(t)
	fx.wire(store)
	return fx
}

func TestPresenceWritesAtMostOncePerMinute(t *testing.T) {
	tests := []struct {
		name         string
		calls        int
		step         time.Duration
		route        string
		wantRequests int
		wantWrites   int
	}{
		{"100 presence calls in a minute", 100, 500 * time.Millisecond, routePresence, 1, 1},
		{"presence every 30s for 3 minutes", 6, 30 * time.Second, routePresence, 3, 3},
		{"inbox reads are presence", 50, time.Second, routeList, 1, 1},
		{"badge polls are presence", 120, time.Second, routeCount, 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &fakePresence{}
			fx := newPresenceFixture(t, store)
			for range tt.calls {
				r := fx.do(call{route: tt.route, path: map[string]string{"userId": "u1"}, sub: "u1"})
				if r.status >= 300 {
					t.Fatalf("status %d %s", r.status, r.body)
				}
				fx.now = fx.now.Add(tt.step)
			}
			if store.requests != tt.wantRequests || store.writes != tt.wantWrites {
				t.Errorf("requests %d writes %d, want %d and %d", store.requests, store.writes, tt.wantRequests, tt.wantWrites)
			}
		})
	}
}

// TestPresenceAtTheKitsCadence: <herald-inbox> without a live socket polls
// the unread count and reports presence at its default intervals
// (web/herald-inbox.js: 30 s and 60 s): three presence-bearing calls per
// user-minute on one instance make one request (one write), not three. The
// two the cache saves would be failed conditional writes, billed.
func TestPresenceAtTheKitsCadence(t *testing.T) {
	kit, err := os.ReadFile(filepath.Join("..", "..", "web", "herald-inbox.js"))
	if err != nil {
		t.Fatal(err)
	}
	interval := func(attr string) time.Duration {
		m := regexp.MustCompile(`getAttribute\('` + attr + `'\) \?\? '(\d+)'`).FindSubmatch(kit)
		if m == nil {
			t.Fatalf("web/herald-inbox.js: no default for %s", attr)
		}
		n, _ := strconv.Atoi(string(m[1]))
		return time.Duration(n) * time.Second
	}
	poll, presence := interval("poll-seconds"), interval("presence-seconds")
	if poll != 30*time.Second || presence != time.Minute {
		t.Fatalf("the kit's defaults are %s and %s: the figures below (and docs/decisions.md, Presence) assume 30 s and 60 s", poll, presence)
	}
	store := &fakePresence{}
	fx := newPresenceFixture(t, store)
	start, calls := fx.now, 0
	for elapsed := time.Duration(0); elapsed < 10*time.Minute; elapsed += poll {
		fx.now = start.Add(elapsed)
		routes := []string{routeCount}
		if elapsed%presence == 0 {
			routes = append(routes, routePresence)
		}
		for _, route := range routes {
			if r := fx.do(call{route: route, path: map[string]string{"userId": "u1"}, sub: "u1"}); r.status >= 300 {
				t.Fatalf("%s: %d %s", route, r.status, r.body)
			}
			calls++
		}
	}
	if calls != 30 || store.requests != 10 || store.writes != 10 {
		t.Errorf("%d calls in 10 minutes: %d requests, %d writes; want 30 calls, 10 requests, 10 writes", calls, store.requests, store.writes)
	}
}

// Two instances share the table: each makes one request in the minute, the
// condition lets only one of them write.
func TestPresenceAcrossInstancesWritesOnce(t *testing.T) {
	store := &fakePresence{}
	a, b := newPresenceFixture(t, store), newPresenceFixture(t, store)
	for i := range 100 {
		fx := a
		if i%2 == 1 {
			fx = b
		}
		if r := fx.do(call{route: routePresence, path: map[string]string{"userId": "u1"}, sub: "u1"}); r.status != http.StatusNoContent {
			t.Fatalf("status %d %s", r.status, r.body)
		}
	}
	if store.requests != 2 || store.writes != 1 {
		t.Errorf("requests %d writes %d, want 2 and 1", store.requests, store.writes)
	}
}

func TestPresenceEdges(t *testing.T) {
	tests := []struct {
		name       string
		sub, path  string
		fail       error
		wantStatus int
		wantCode   string
	}{
		{"own id", "u1", "u1", nil, http.StatusNoContent, ""},
		{"another user's id", "u1", "u2", nil, http.StatusNotFound, "not_found"},
		{"no token", "", "u1", nil, http.StatusUnauthorized, "unauthenticated"},
		{"email-shaped user id", "carol@corp.example", "carol@corp.example", nil, http.StatusBadRequest, "invalid_user_id"},
		{"store down", "u1", "u1", errors.New("boom"), http.StatusInternalServerError, "internal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &fakePresence{fail: tt.fail}
			fx := newPresenceFixture(t, store)
			r := fx.do(call{route: routePresence, path: map[string]string{"userId": tt.path}, sub: tt.sub})
			if r.status != tt.wantStatus {
				t.Fatalf("status %d %s, want %d", r.status, r.body, tt.wantStatus)
			}
			if tt.wantCode != "" {
				if c := r.code(t); c != tt.wantCode {
					t.Errorf("code %q, want %q", c, tt.wantCode)
				}
			}
		})
	}
}

// A failed write is not cached: the next call tries again.
func TestPresenceRetriesAfterAFailedWrite(t *testing.T) {
	store := &fakePresence{fail: errors.New("throttled")}
	fx := newPresenceFixture(t, store)
	fx.do(call{route: routePresence, path: map[string]string{"userId": "u1"}, sub: "u1"})
	store.fail = nil
	if r := fx.do(call{route: routePresence, path: map[string]string{"userId": "u1"}, sub: "u1"}); r.status != http.StatusNoContent {
		t.Fatalf("status %d %s", r.status, r.body)
	}
	if store.writes != 1 || store.requests != 2 {
		t.Errorf("requests %d writes %d, want 2 and 1", store.requests, store.writes)
	}
}

// TestPresenceCacheDropsOnlyWhatSavesNothing: no entry younger than a minute
// is ever dropped (1,000 new users beside 10,000 fresh ones: none of the
// 11,000 is due again within the minute), older ones are gone two
// generations later without any scan, a user written within the minute is
// remembered across a new generation, and a failed write's reservation is
// forgotten in whichever generation holds it.
func TestPresenceCacheDropsOnlyWhatSavesNothing(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	users := presenceUsers(presenceHeld + 1003)
	c := fullPresenceCache(users, t0)
	for _, u := range users[presenceHeld : presenceHeld+1000] {
		if !c.due(u, t0.Add(time.Second)) {
			t.Fatalf("new user %s not due", u)
		}
	}
	for _, u := range users[:presenceHeld+1000] {
		if c.due(u, t0.Add(59*time.Second)) {
			t.Fatalf("user %s written within the minute is due again", u)
		}
	}
	held := func() int { return len(c.current) + len(c.previous) }
	if got := held(); got != presenceHeld+1000 {
		t.Errorf("%d entries, want %d (fresh entries are kept)", got, presenceHeld+1000)
	}
	x, z := users[presenceHeld+1000], users[presenceHeld+1001]
	if !c.due(x, t0.Add(61*time.Second)) || !c.due(z, t0.Add(100*time.Second)) {
		t.Fatal("new users not due")
	}
	// 125 s: a new generation; z (25 s old) is remembered, x (64 s) is not.
	if c.due(z, t0.Add(125*time.Second)) {
		t.Error("the user written 25 s ago is due again after a new generation")
	}
	if got := held(); got != 2 {
		t.Errorf("%d entries after two generations, want 2 (the 11,000 over a minute old are dropped)", got)
	}
	if !c.due(x, t0.Add(125*time.Second)) {
		t.Error("the user written 64 s ago is not due")
	}
	// A reservation that moved to the older generation before its write
	// failed (x's call at 186 s starts a generation) is forgotten there.
	w := users[presenceHeld+1002]
	if !c.due(w, t0.Add(170*time.Second)) || !c.due(x, t0.Add(186*time.Second)) || c.previous[w].IsZero() {
		t.Fatal("w or x not due, or w's reservation not in the older generation")
	}
	c.forget(w, t0.Add(170*time.Second))
	if !c.due(w, t0.Add(191*time.Second)) {
		t.Error("a forgotten reservation is still held")
	}
}
