package dynamo_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
)

func TestDigestJoinIsIdempotentAndSealed(t *testing.T) {
	s, db, _ := newStore(t)
	ctx := context.Background()
	key := domain.DigestKey{UserID: uniq(t), Channel: domain.ChannelPush, BatchKey: "thread#1"}
	t0 := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	end := t0.Add(5 * time.Minute)
	join := func(id string, at time.Time) domain.DigestOutcome {
		t.Helper()
		out, err := s.JoinDigest(ctx, domain.DigestRequest{Key: key, NotificationID: id, CreatedAt: at, WindowEnd: at.Add(5 * time.Minute)})
		if err != nil {
			t.Fatalf("join %s: %v", id, err)
		}
		return out
	}
	want := func(got domain.DigestOutcome, role domain.DigestRole, digest string) {
		t.Helper()
		if got.Role != role || got.DigestID != digest {
			t.Errorf("outcome %+v, want role %d digest %q", got, role, digest)
		}
	}
	want(join("a", t0), domain.DigestLeader, "a")
	if got := join("a", t0); got.Role != domain.DigestLeader || !got.WindowEnd.Equal(end) {
		t.Errorf("leader retry: %+v", got)
	}
	want(join("b", t0.Add(time.Minute)), domain.DigestJoined, "a")
	want(join("b", t0.Add(time.Minute)), domain.DigestJoined, "a")  // retry: no second entry
	want(join("c", t0.Add(-time.Second)), domain.DigestJoined, "a") // accepted earlier, processed later
	want(join("d", t0.Add(2*time.Minute)), domain.DigestJoined, "a")

	members, err := s.SealDigest(ctx, key, "a")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(members); got != fmt.Sprint([]domain.DigestMember{
		{NotificationID: "d", CreatedAt: t0.Add(2 * time.Minute)},
		{NotificationID: "b", CreatedAt: t0.Add(time.Minute)},
		{NotificationID: "c", CreatedAt: t0.Add(-time.Second)},
	}) {
		t.Errorf("members %v, want d, b, c (newest first)", members)
	}
	if again, _ := s.SealDigest(ctx, key, "a"); fmt.Sprint(again) != fmt.Sprint(members) {
		t.Errorf("second seal %v", again)
	}
	// Sealed: a late joiner goes alone; a retried member still counts as joined.
	want(join("e", t0.Add(3*time.Minute)), domain.DigestAlone, "")
	want(join("b", t0.Add(time.Minute)), domain.DigestJoined, "a")
	// After the window, the next notification opens a new digest.
	want(join("f", end), domain.DigestLeader, "f")
	want(join("g", end.Add(time.Second)), domain.DigestJoined, "f")
	// HEAD and the digest record live a week past the window, then TTL
	// removes them.
	head := rawItem(t, db, s.Name(), dynamo.DigestPK(key), "HEAD")
	if ttl := numAttr(t, head, "ttl"); ttl != fmt.Sprint(end.Add(5*time.Minute+7*24*time.Hour).Unix()) {
		t.Errorf("head ttl = %s, want the open window's end + 7 days", ttl)
	}
	record := rawItem(t, db, s.Name(), dynamo.DigestPK(key), "D#a")
	if ttl := numAttr(t, record, "ttl"); ttl != fmt.Sprint(end.Add(7*24*time.Hour).Unix()) {
		t.Errorf("record ttl = %s, want its window's end + 7 days", ttl)
	}
	// A digest nobody joined seals empty.
	if m, err := s.SealDigest(ctx, domain.DigestKey{UserID: key.UserID, Channel: domain.ChannelEmail, BatchKey: "x"}, "z"); err != nil || len(m) != 0 {
		t.Errorf("empty seal: %v, %v", m, err)
	}
}

// TestDigestJoinRaceElectsOneLeader: notifications of one window processed
// concurrently agree on a single leader, and every other one joins it.
func TestDigestJoinRaceElectsOneLeader(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	key := domain.DigestKey{UserID: uniq(t), Channel: domain.ChannelEmail, BatchKey: "b"}
	outcomes := make([]domain.DigestOutcome, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			var err error
			outcomes[i], err = s.JoinDigest(ctx, domain.DigestRequest{Key: key, NotificationID: fmt.Sprint("n", i),
				CreatedAt: t0.Add(time.Duration(i) * time.Millisecond), WindowEnd: t0.Add(time.Hour)})
			if err != nil {
				t.Errorf("join n%d: %v", i, err)
			}
		})
	}
	wg.Wait()
	leader := ""
	for i, o := range outcomes {
		if o.Role == domain.DigestLeader {
			if leader != "" {
				t.Fatalf("two leaders: %s and n%d", leader, i)
			}
			leader = o.DigestID
		}
	}
	if leader == "" {
		t.Fatalf("no leader: %+v", outcomes)
	}
	for i, o := range outcomes {
		if o.DigestID != leader || (o.Role != domain.DigestJoined && fmt.Sprint("n", i) != leader) {
			t.Errorf("n%d: %+v, want joined to %s", i, o, leader)
		}
	}
	members, err := s.SealDigest(ctx, key, leader)
	if err != nil || len(members) != racers-1 {
		t.Errorf("sealed %d members (%v), want %d", len(members), err, racers-1)
	}
}
