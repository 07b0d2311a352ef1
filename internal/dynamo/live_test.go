package dynamo_test

import (
	"context"
	"maps"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/inbox"
	"github.com/heraldhq/herald/internal/live"
)

// TestLiveConnections: connections are kept per user with their connect
// times and read back for many users in one batch; the item's TTL is the
// newest connection's 2-hour limit (and a minute of clock slack); a connect
// writes once (an UpdateItem; the user's first a PutItem), reading nothing;
// a removal answers the connections left and never recreates the item.
func TestLiveConnections(t *testing.T) {
	s, db, clock := newStore(t)
	ctx := context.Background()
	user, other := uniq(t), uniq(t)+"-other"
	t0 := clock.Now().Truncate(time.Millisecond)
	add := func(u, id string, at time.Time) []live.Connection {
		t.Helper()
		conns, err := s.AddConnection(ctx, u, live.Connection{ID: id, ConnectedAt: at})
		if err != nil {
			t.Fatal(err)
		}
		return conns
	}
	if got := add(user, "c0", t0); len(got) != 1 || got[0] != (live.Connection{ID: "c0", ConnectedAt: t0}) {
		t.Fatalf("first connect answered %+v", got)
	}
	got := add(user, "c1", t0.Add(time.Second))
	sort.Slice(got, func(i, j int) bool { return got[i].ID < got[j].ID })
	if len(got) != 2 || !got[0].ConnectedAt.Equal(t0) || !got[1].ConnectedAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("second connect answered %+v", got)
	}
	item := rawItem(t, db, stacktest.Emulators(t).Resources.Table, "U#"+user, "LIVE")
	if got, want := numAttr(t, item, "ttl"), strconv.FormatInt(t0.Add(time.Second+live.MaxConnectionAge+time.Minute).Unix(), 10); got != want {
		t.Errorf("ttl %s, want %s (the newest connection's limit and a minute)", got, want)
	}
	add(other, "o1", t0)
	m, err := s.Connections(ctx, []string{user, other, "nobody"})
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 || len(m[user]) != 2 || len(m[other]) != 1 {
		t.Fatalf("connections %+v", m)
	}
	// A removal answers what is left; removing again answers the same.
	leftIDs := func(cs []live.Connection, err error) []string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range cs {
			out = append(out, c.ID)
		}
		return out
	}
	for range 2 {
		if got := leftIDs(s.RemoveConnection(ctx, user, "c0")); len(got) != 1 || got[0] != "c1" {
			t.Fatalf("removing c0 left %v, want c1", got)
		}
	}
	nobody := uniq(t) + "-nobody"
	if got := leftIDs(s.RemoveConnection(ctx, nobody, "nothing")); len(got) != 0 {
		t.Fatalf("removing from a user without connections left %v", got)
	}
	if raw := rawItem(t, db, stacktest.Emulators(t).Resources.Table, "U#"+nobody, "LIVE"); raw != nil {
		t.Fatalf("removing from a user without connections created %v", raw)
	}
	// What a connect costs: one write, no read (the user's first: the
	// update finds no item, then the put).
	calls := devstack.NewCalls()
	e := stacktest.Emulators(t)
	counted := &dynamo.Live{Table: dynamo.New(dynamodb.NewFromConfig(e.AWS, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(e.Emulators.DynamoDB)
		o.APIOptions = append(o.APIOptions, calls.Middleware)
	}), e.Resources.Table, dynamo.WithClock(clock.Now))}
	fresh := uniq(t) + "-fresh"
	for i, want := range []map[string]int{{"DynamoDB.UpdateItem": 1, "DynamoDB.PutItem": 1}, {"DynamoDB.UpdateItem": 1}} {
		calls.Reset()
		if _, err := counted.AddConnection(ctx, fresh, live.Connection{ID: "f" + strconv.Itoa(i), ConnectedAt: t0}); err != nil {
			t.Fatal(err)
		}
		if got := calls.Snapshot(); !maps.Equal(got, want) {
			t.Errorf("connect %d made %v, want %v", i, got, want)
		}
	}
}

// TestAnnouncementMarkedOnce: however many callers mark an announcement at
// once (the API's replays, the scheduler), exactly one starts its
// broadcast; the online entry carries the TTL that removes it.
func TestAnnouncementMarkedOnce(t *testing.T) {
	s, db, clock := newStore(t)
	ctx := context.Background()
	now := clock.Now()
	a := &inbox.Announcement{ID: "a" + strings.Repeat("0", 20) + strconv.FormatInt(seq.Add(1)+100000, 10), Title: "t", Body: "b",
		PublishedAt: now, ExpiresAt: now.Add(time.Hour), CreatedAt: now, Caller: "svc"}
	if _, err := s.CreateAnnouncement(ctx, a); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var won atomic.Int64
	for i := range 8 {
		wg.Go(func() {
			ok, err := s.MarkAnnouncementLive(ctx, a.ID, now.Add(time.Duration(i)*time.Millisecond))
			if err != nil {
				t.Error(err)
			}
			if ok {
				won.Add(1)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d marks won, want 1", won.Load())
	}
	list, err := s.UnexpiredAnnouncements(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range list {
		found = found || l.ID == a.ID && !l.LiveAt.IsZero()
	}
	if !found {
		t.Error("the mark is not read back with the announcements")
	}
	user := uniq(t)
	until := now.Add(live.MaxConnectionAge)
	if err := s.AddOnline(ctx, live.OnlineShard(user), user, until); err != nil {
		t.Fatal(err)
	}
	item := rawItem(t, db, stacktest.Emulators(t).Resources.Table, "LIVE#"+strconv.Itoa(live.OnlineShard(user)), user)
	if got := numAttr(t, item, "ttl"); got != strconv.FormatInt(until.Unix(), 10) {
		t.Errorf("ttl %s, want %d", got, until.Unix())
	}
}
