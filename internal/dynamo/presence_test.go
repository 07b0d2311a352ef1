package dynamo_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
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
