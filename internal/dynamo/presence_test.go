package dynamo_test

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/heraldhq/herald/internal/api"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
)

// TestTouchPresenceWritesOncePerInterval: the conditional write lets one
// write per minute through, whoever races, and both of LoadWork's paths (the
// batch read for email, the partition query for push) see lastSeenAt.
func TestTouchPresenceWritesOncePerInterval(t *testing.T) {
	s, _, clock := newStore(t)
	ctx := context.Background()
	user := uniq(t)
	start := clock.Now().Truncate(time.Millisecond)

	var wg sync.WaitGroup
	var mu sync.Mutex
	writes := 0
	for range 10 { // ten instances at once
		wg.Go(func() {
			w, err := s.TouchPresence(ctx, user, start, time.Minute)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if w {
				writes++
			}
		})
	}
	wg.Wait()
	if writes != 1 {
		t.Fatalf("%d writes from 10 concurrent touches, want 1", writes)
	}
	tests := []struct {
		at    time.Duration
		wrote bool
	}{{30 * time.Second, false}, {59 * time.Second, false}, {60 * time.Second, true}, {90 * time.Second, false}, {121 * time.Second, true}}
	last := start
	for _, tt := range tests {
		w, err := s.TouchPresence(ctx, user, start.Add(tt.at), time.Minute)
		if err != nil || w != tt.wrote {
			t.Fatalf("touch at +%v: wrote %v (%v), want %v", tt.at, w, err, tt.wrote)
		}
		if w {
			last = start.Add(tt.at)
		}
	}

	p, err := s.GetRecipientProfile(ctx, user)
	if err != nil || !p.LastSeenAt.Equal(last) {
		t.Fatalf("profile lastSeenAt %v (%v), want %v", p.LastSeenAt, err, last)
	}
	n := notification(uniq(t), user, start)
	mustCreate(t, s, n)
	_, wp, err := s.LoadWork(ctx, domain.WorkMessage{NotificationID: n.ID, Channel: domain.ChannelEmail, UserID: user})
	if err != nil || !wp.LastSeenAt.Equal(last) {
		t.Fatalf("LoadWork lastSeenAt %v (%v), want %v", wp.LastSeenAt, err, last)
	}
}

// TestPresenceLease: a live connection's lease holds the user present
// until its term in both of LoadWork's paths; ending it keeps lastSeenAt at
// the disconnect and clears the lease; the API's conditional touch leaves
// a running lease alone.
func TestPresenceLease(t *testing.T) {
	s, _, clock := newStore(t)
	ctx := context.Background()
	user := uniq(t)
	start := clock.Now().Truncate(time.Millisecond)
	until := start.Add(10 * time.Minute)
	if err := s.HoldPresence(ctx, user, start, until); err != nil {
		t.Fatal(err)
	}
	n := notification(uniq(t), user, start)
	mustCreate(t, s, n)
	both := func() (email, push *domain.RecipientProfile) {
		t.Helper()
		_, ep, err := s.LoadWork(ctx, domain.WorkMessage{NotificationID: n.ID, Channel: domain.ChannelEmail, UserID: user})
		if err != nil {
			t.Fatal(err)
		}
		pp, err := s.GetRecipientProfile(ctx, user)
		if err != nil {
			t.Fatal(err)
		}
		return ep, pp
	}
	email, push := both()
	for _, p := range []*domain.RecipientProfile{email, push} {
		if !p.PresentUntil.Equal(until) || !p.LastSeenAt.Equal(start) {
			t.Fatalf("held: presentUntil %v lastSeenAt %v, want %v and %v", p.PresentUntil, p.LastSeenAt, until, start)
		}
		if !p.ActiveWithin(time.Minute, start.Add(9*time.Minute)) || p.ActiveWithin(time.Minute, until) {
			t.Errorf("the lease: active 9 minutes on (1 m window) %v, at its term %v; want true, false",
				p.ActiveWithin(time.Minute, start.Add(9*time.Minute)), p.ActiveWithin(time.Minute, until))
		}
	}
	// The API's presence (conditional on a minute) does not touch the lease.
	if _, err := s.TouchPresence(ctx, user, start.Add(2*time.Minute), time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, p := both(); !p.PresentUntil.Equal(until) || !p.LastSeenAt.Equal(start.Add(2*time.Minute)) {
		t.Fatalf("after the API's touch: presentUntil %v lastSeenAt %v", p.PresentUntil, p.LastSeenAt)
	}
	closed := start.Add(3 * time.Minute)
	if err := s.EndPresence(ctx, user, closed); err != nil {
		t.Fatal(err)
	}
	email, push = both()
	for _, p := range []*domain.RecipientProfile{email, push} {
		if !p.PresentUntil.IsZero() || !p.LastSeenAt.Equal(closed) {
			t.Fatalf("ended: presentUntil %v lastSeenAt %v, want none and %v", p.PresentUntil, p.LastSeenAt, closed)
		}
	}
}

// updateCounter counts the UpdateItem requests a store sends (the SDK call
// counter of one API instance's client) and those that wrote.
type updateCounter struct {
	dynamo.API
	requests, writes atomic.Int64
}

func (c *updateCounter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.requests.Add(1)
	out, err := c.API.UpdateItem(ctx, in, opts...)
	if err == nil {
		c.writes.Add(1)
	}
	return out, err
}

// TestPresenceAcrossAPIInstancesIsOneWritePerMinute: three API handlers
// (three warm Lambda instances, each with its own presence memory and its
// own client) serve 100 presence calls of one user within a minute, ten at
// a time, against DynamoDB Local: one UpdateItem at most per instance, one
// write in all; a minute later, one more write.
func TestPresenceAcrossAPIInstancesIsOneWritePerMinute(t *testing.T) {
	_, db, _ := newStore(t)
	table := stacktest.Emulators(t).Resources.Table
	ctx := context.Background()
	user := uniq(t)
	var mu sync.Mutex
	now := t0
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }

	counters := make([]*updateCounter, 3)
	instances := make([]*api.Handler, 3)
	for i := range instances {
		counters[i] = &updateCounter{API: db}
		log := slog.New(slog.DiscardHandler)
		instances[i] = api.New(api.Deps{Log: log, Inbox: api.NewInbox(api.InboxDeps{Presence: &dynamo.Live{Table: dynamo.New(counters[i], table)}, Now: clock, Log: log})})
	}
	presence := events.APIGatewayV2HTTPRequest{
		RouteKey: "POST /v1/users/{userId}/presence", RawPath: "/v1/users/" + user + "/presence",
		PathParameters: map[string]string{"userId": user},
		RequestContext: events.APIGatewayV2HTTPRequestContext{Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": user}}}},
	}
	burst := func(calls int) {
		var wg sync.WaitGroup
		for i := range calls {
			wg.Go(func() {
				resp, err := instances[i%len(instances)].Handle(ctx, presence)
				if err != nil || resp.StatusCode != http.StatusNoContent {
					t.Errorf("presence: %d %s %v", resp.StatusCode, resp.Body, err)
				}
			})
		}
		wg.Wait()
	}
	totals := func() (requests, writes int64) {
		for _, c := range counters {
			if n := c.requests.Load(); n > 1 {
				t.Errorf("one instance sent %d UpdateItem requests within the minute, want at most 1", n)
			}
			requests += c.requests.Load()
			writes += c.writes.Load()
			c.requests.Store(0)
			c.writes.Store(0)
		}
		return requests, writes
	}
	store, _, _ := newStore(t)
	lastSeen := func() time.Time {
		p, err := store.GetRecipientProfile(ctx, user)
		if err != nil {
			t.Fatal(err)
		}
		return p.LastSeenAt
	}

	for range 10 { // 100 calls in 45 s
		burst(10)
		advance(5 * time.Second)
	}
	if requests, writes := totals(); writes != 1 || requests > 3 {
		t.Errorf("100 calls in a minute on 3 instances: %d UpdateItem requests, %d writes; want ≤ 3 and 1", requests, writes)
	}
	if got := lastSeen(); !got.Equal(t0) {
		t.Errorf("lastSeenAt %v, want the first call's %v", got, t0)
	}

	advance(11 * time.Second) // 61 s after the write
	burst(10)
	if requests, writes := totals(); writes != 1 || requests > 3 {
		t.Errorf("the next minute: %d UpdateItem requests, %d writes; want ≤ 3 and 1", requests, writes)
	}
	if got, want := lastSeen(), t0.Add(61*time.Second); !got.Equal(want) {
		t.Errorf("lastSeenAt %v, want %v", got, want)
	}
}
