package api

import (
	"context"
	"errors"
	"net/http"
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

// TestPresenceCacheSweepsAreAmortized: at the bound, a cache whose entries
// are all younger than a minute has nothing to drop, so new users must not
// each scan it (BenchmarkPresenceCache: ~0.3 ms a call at 10,000 users);
// once the entries age past the interval, the next new user drops them.
func TestPresenceCacheSweepsAreAmortized(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	users := presenceUsers(presenceCacheMax + 2000)
	c := fullPresenceCache(users, t0)
	for _, u := range users[presenceCacheMax : presenceCacheMax+1000] {
		if !c.due(u, t0.Add(time.Second)) {
			t.Fatalf("new user %s not due", u)
		}
	}
	if c.sweeps > 1 {
		t.Errorf("%d sweeps for 1,000 new users while every entry is fresh, want at most 1", c.sweeps)
	}
	if got := len(c.last); got != presenceCacheMax+1000 {
		t.Errorf("%d entries, want %d (a soft bound: fresh entries are kept)", got, presenceCacheMax+1000)
	}
	// A minute after the first entries (and the new ones): all stale.
	if !c.due(users[presenceCacheMax+1000], t0.Add(61*time.Second)) {
		t.Fatal("new user not due")
	}
	if got := len(c.last); got != 1 {
		t.Errorf("%d entries after the sweep, want 1 (every other entry was over a minute old)", got)
	}
	// A user written within the minute is still remembered after a sweep.
	if c.due(users[presenceCacheMax+1000], t0.Add(62*time.Second)) {
		t.Error("the user written a second ago is due again")
	}
}
