package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/inbox"
)

// racers is how many goroutines race to create the same item.
const racers = 8

// race runs create concurrently and checks that exactly one caller wins and
// every other gets domain.ErrConflict with the winner's stored item.
func race[T any](t *testing.T, create func(i int) (T, error), check func(i int, existing T)) (winner int) {
	t.Helper()
	results := make([]T, racers)
	errs := make([]error, racers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range racers {
		wg.Go(func() {
			<-start
			results[i], errs[i] = create(i)
		})
	}
	close(start)
	wg.Wait()
	winner = -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("racers %d and %d both created the item", winner, i)
			}
			winner = i
		case !errors.Is(err, domain.ErrConflict):
			t.Fatalf("racer %d: %v, want ErrConflict", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no racer created the item")
	}
	for i := range racers {
		if i != winner {
			check(winner, results[i])
		}
	}
	return winner
}

func TestCreateNotificationRaceHasOneWinner(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	id := uniq(t)
	// Every racer carries the same id (the idempotency key's) but its own
	// request hash, so the replay shows whose request was stored.
	race(t, func(i int) (*domain.Notification, error) {
		n := notification(id, "u-"+id, t0)
		n.RequestHash = strconv.Itoa(i)
		return s.CreateNotification(ctx, n)
	}, func(winner int, existing *domain.Notification) {
		if existing == nil || existing.ID != id || existing.RequestHash != strconv.Itoa(winner) {
			t.Errorf("replay returned %+v, want the winner's (hash %d)", existing, winner)
		}
	})
	got, err := s.GetNotification(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Recipient.Email == "" || got.Data["title"] != "hello" {
		t.Errorf("stored %+v", got)
	}
}

func TestCreateDeliveryRaceHasOneWinner(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	id := uniq(t)
	race(t, func(i int) (*domain.Delivery, error) {
		return s.CreateDelivery(ctx, &domain.Delivery{NotificationID: id, Channel: domain.ChannelSMS, Priority: domain.PriorityHigh,
			Status: domain.StatusPlanned, Attempts: i, UpdatedAt: t0})
	}, func(winner int, existing *domain.Delivery) {
		if existing == nil || existing.Attempts != winner || existing.Status != domain.StatusPlanned {
			t.Errorf("conflict returned %+v, want the winner's delivery (attempts %d)", existing, winner)
		}
	})
}

func TestCreateAnnouncementRaceHasOneWinner(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	id := uniq(t)
	race(t, func(i int) (*inbox.Announcement, error) {
		return s.CreateAnnouncement(ctx, &inbox.Announcement{ID: id, Title: "t", Body: "b", PublishedAt: t0, ExpiresAt: t0.Add(time.Hour),
			CreatedAt: t0, Caller: "svc", RequestHash: strconv.Itoa(i)})
	}, func(winner int, existing *inbox.Announcement) {
		if existing == nil || existing.RequestHash != strconv.Itoa(winner) || existing.SortKey == "" {
			t.Errorf("replay returned %+v, want the winner's (hash %d)", existing, winner)
		}
	})
}

func TestNotificationRoundTripAndTTL(t *testing.T) {
	const retention = 48 * time.Hour
	s, db, _ := newStore(t, dynamo.WithRetention(retention))
	ctx := context.Background()
	id := uniq(t)
	n := &domain.Notification{
		ID: id, Caller: "svc", Type: "reservation.approved",
		Recipient: domain.Recipient{UserID: "u-" + id, Email: "a@example.com", Phone: "+15550100", Locale: "fr"},
		Data:      map[string]any{"s": "x", "n": 1.5, "list": []any{"a", "b"}, "m": map[string]any{"k": true}},
		Priority:  domain.PriorityHigh, Channels: []domain.Channel{domain.ChannelEmail, domain.ChannelPush},
		ResourceID: "r1", BatchKey: "thread", SendAt: t0.Add(time.Minute), ExpiresAt: t0.Add(time.Hour),
		CreatedAt: t0.Add(123456789 * time.Nanosecond), Status: domain.NotificationAccepted, RequestHash: "h", DedupeKey: "d",
	}
	if got, err := s.CreateNotification(ctx, n); err != nil || got != n {
		t.Fatalf("create: %v, %v", got, err)
	}
	got, err := s.GetNotification(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, n) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, n)
	}
	item := rawItem(t, db, s.Name(), dynamo.NotificationPK(id), "N")
	if ttl := numAttr(t, item, "ttl"); ttl != fmt.Sprint(n.CreatedAt.Add(retention).Unix()) {
		t.Errorf("notification ttl = %s, want createdAt + retention", ttl)
	}

	d := &domain.Delivery{NotificationID: id, Channel: domain.ChannelEmail, UserID: n.Recipient.UserID, Priority: domain.PriorityHigh,
		Status: domain.StatusPlanned, UpdatedAt: t0.Add(time.Minute)}
	if _, err := s.CreateDelivery(ctx, d); err != nil {
		t.Fatal(err)
	}
	item = rawItem(t, db, s.Name(), dynamo.NotificationPK(id), "D#email")
	if ttl := numAttr(t, item, "ttl"); ttl != fmt.Sprint(d.UpdatedAt.Add(retention).Unix()) {
		t.Errorf("delivery ttl = %s, want updatedAt + retention", ttl)
	}
	gn, ds, err := s.GetNotificationWithDeliveries(ctx, id)
	if err != nil || gn.ID != id || len(ds) != 1 || !reflect.DeepEqual(ds[0], *d) {
		t.Errorf("with deliveries: %+v %+v %v", gn, ds, err)
	}
	if _, err := s.GetNotification(ctx, id+"-missing"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("missing notification: %v, want ErrNotFound", err)
	}
	if _, _, err := s.GetNotificationWithDeliveries(ctx, id+"-missing"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("missing notification with deliveries: %v, want ErrNotFound", err)
	}
	if _, err := s.GetDelivery(ctx, id, domain.ChannelSMS); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("missing delivery: %v, want ErrNotFound", err)
	}
}

func TestCancelNotification(t *testing.T) {
	s, _, clock := newStore(t)
	ctx := context.Background()
	id, user := uniq(t), uniq(t)
	mustCreate(t, s, notification(id, user, t0))
	if _, err := s.CancelNotification(ctx, id, "another-caller"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("another caller's cancel: %v, want ErrNotFound", err)
	}
	if _, err := s.CancelNotification(ctx, id+"-missing", "svc"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("missing: %v, want ErrNotFound", err)
	}
	clock.Set(t0.Add(time.Minute))
	got, err := s.CancelNotification(ctx, id, "svc")
	if err != nil || got.Status != domain.NotificationCancelled || !got.CancelledAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("cancel: %+v, %v", got, err)
	}
	clock.Set(t0.Add(time.Hour))
	again, err := s.CancelNotification(ctx, id, "svc")
	if err != nil || !again.CancelledAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("second cancel: %+v, %v, want the first cancelledAt kept", again, err)
	}
	// Cancelled notifications leave the inbox and the unread count.
	entries, _, err := s.ListInbox(ctx, user, inbox.FilterAll, "", 10)
	if err != nil || len(entries) != 0 {
		t.Errorf("inbox after cancel: %v, %v", entries, err)
	}
	if c, err := s.CountUnread(ctx, user, 10); err != nil || c != 0 {
		t.Errorf("unread after cancel: %d, %v", c, err)
	}
}
