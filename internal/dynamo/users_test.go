package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

func TestUserProfileRoundTripAndSuppression(t *testing.T) {
	s, _, clock := newStore(t)
	ctx := context.Background()
	user := uniq(t)
	if _, err := s.GetUser(ctx, user); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("no profile: %v, want ErrNotFound", err)
	}
	u := &domain.User{ID: user, Email: "a@example.com", Phone: "+15550100", Locale: "es", Timezone: "Europe/Madrid",
		QuietHours: &domain.QuietHours{Start: "22:00", End: "07:00"}, DigestMinutes: 15}
	if err := s.PutUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetUser(ctx, user)
	if err != nil || !reflect.DeepEqual(got, u) || !got.UpdatedAt.Equal(t0) {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, u)
	}
	steps := []struct {
		name       string
		do         func() error
		suppressed string
	}{
		{"a bounce suppresses the address", func() error { return s.SuppressEmail(ctx, user, "a@example.com") }, "a@example.com"},
		{"rewriting the same address keeps it", func() error { return s.PutUser(ctx, &domain.User{ID: user, Email: "a@example.com"}) }, "a@example.com"},
		{"a new address lifts it", func() error { return s.PutUser(ctx, &domain.User{ID: user, Email: "b@example.com"}) }, ""},
		{"an explicit suppression is stored as given", func() error {
			return s.PutUser(ctx, &domain.User{ID: user, Email: "b@example.com", SuppressedEmail: "old@example.com"})
		}, "old@example.com"},
	}
	for _, st := range steps {
		clock.Set(clock.Now().Add(time.Minute))
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got, _ := s.GetUser(ctx, user); got.SuppressedEmail != st.suppressed {
			t.Errorf("%s: suppressed %q, want %q", st.name, got.SuppressedEmail, st.suppressed)
		}
	}
	// A bounce for a user without a profile creates a minimal one.
	other := uniq(t)
	if err := s.SuppressEmail(ctx, other, "c@example.com"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetUser(ctx, other); err != nil || got.ID != other || got.SuppressedEmail != "c@example.com" || got.Email != "" {
		t.Errorf("minimal profile: %+v, %v", got, err)
	}
}

func TestPreferencesMergeConcurrently(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	user := uniq(t)
	if p, err := s.GetPreferences(ctx, user); err != nil || len(p) != 0 {
		t.Fatalf("no preferences: %v, %v", p, err)
	}
	on, off := true, false
	// Writers of different types and channels race, each creating parent maps.
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			typ := fmt.Sprint("type", i%3)
			ch := domain.Channels[i%len(domain.Channels)]
			if _, err := s.MergePreferences(ctx, user, map[string]map[domain.Channel]*bool{typ: {ch: &off}}); err != nil {
				t.Errorf("merge %s/%s: %v", typ, ch, err)
			}
		})
	}
	wg.Wait()
	p, err := s.GetPreferences(ctx, user)
	if err != nil {
		t.Fatal(err)
	}
	for i := range racers {
		typ, ch := fmt.Sprint("type", i%3), domain.Channels[i%len(domain.Channels)]
		if enabled, ok := p.Enabled(typ, ch); !ok || enabled {
			t.Errorf("%s/%s lost: %v", typ, ch, p)
		}
	}
	// Removing every override of a type leaves the type out; one path set
	// leaves the others.
	got, err := s.MergePreferences(ctx, user, map[string]map[domain.Channel]*bool{
		"type0": {domain.ChannelEmail: nil, domain.ChannelSMS: nil, domain.ChannelPush: nil},
		"type1": {domain.ChannelEmail: &on},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got["type0"]; ok {
		t.Errorf("type0 still present: %v", got)
	}
	if err := s.SetPreference(ctx, user, "type2", domain.ChannelPush, true); err != nil {
		t.Fatal(err)
	}
	final, _ := s.GetPreferences(ctx, user)
	if e, _ := final.Enabled("type1", domain.ChannelEmail); !e {
		t.Errorf("type1/email: %v", final)
	}
	if e, _ := final.Enabled("type2", domain.ChannelPush); !e {
		t.Errorf("type2: %v", final)
	}
}

func TestPushSubscriptions(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	user := uniq(t)
	sub := domain.PushSubscription{ID: "s1", Endpoint: "https://push.example/1", P256dh: "key", Auth: "auth", CreatedAt: t0}
	if created, err := s.SavePushSubscription(ctx, user, sub); err != nil || !created {
		t.Fatalf("first save: %v, %v", created, err)
	}
	sub.Endpoint = "https://push.example/1b"
	if created, err := s.SavePushSubscription(ctx, user, sub); err != nil || created {
		t.Fatalf("replacing save: %v, %v; want not created", created, err)
	}
	if err := s.AddPushSubscription(ctx, user, domain.PushSubscription{ID: "s2", Endpoint: "https://push.example/2", CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	p, err := s.GetRecipientProfile(ctx, user)
	if err != nil || len(p.PushSubscriptions) != 2 || !reflect.DeepEqual(p.PushSubscriptions[0], sub) || p.User != nil {
		t.Fatalf("profile %+v, %v", p, err)
	}
	// Listed oldest first (the API evicts from the front), only the
	// subscriptions of the user's partition.
	if err := s.AddPushSubscription(ctx, user, domain.PushSubscription{ID: "s0", Endpoint: "https://push.example/0", CreatedAt: t0.Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutUser(ctx, &domain.User{ID: user, Email: "a@example.com"}); err != nil {
		t.Fatal(err)
	}
	listed, err := s.ListPushSubscriptions(ctx, user)
	if err != nil || len(listed) != 3 || listed[0].ID != "s0" || listed[1].ID != "s1" || listed[2].ID != "s2" || !reflect.DeepEqual(listed[1], sub) {
		t.Fatalf("listed %+v, %v; want s0, s1, s2", listed, err)
	}
	if err := s.DeletePushSubscription(ctx, user, "s1"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeletePushSubscription(ctx, user, "s1"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("second delete: %v, want ErrNotFound", err)
	}
}

// TestLoadWorkAndReadPlanning read the state a worker and the relay need,
// through each of LoadWork's paths.
func TestLoadWorkAndReadPlanning(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	user, stranger := uniq(t), uniq(t)
	if err := s.PutUser(ctx, &domain.User{ID: user, Email: "a@example.com", Locale: "it"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPreference(ctx, user, "comment.created", domain.ChannelSMS, false); err != nil {
		t.Fatal(err)
	}
	if err := s.AddPushSubscription(ctx, user, domain.PushSubscription{ID: "s1", Endpoint: "https://push.example/1", CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutUser(ctx, &domain.User{ID: stranger, Email: "x@example.com"}); err != nil {
		t.Fatal(err)
	}
	id := uniq(t)
	mustCreate(t, s, notification(id, user, t0))
	for _, ch := range []domain.Channel{domain.ChannelEmail, domain.ChannelPush} {
		seedDelivery(t, s, id, ch, domain.StatusQueued)
	}
	tests := []struct {
		name      string
		wm        domain.WorkMessage
		pushSubs  int
		wantErrIs error
	}{
		{"email: one batch read", domain.WorkMessage{NotificationID: id, Channel: domain.ChannelEmail, UserID: user}, 0, nil},
		{"push: with subscriptions", domain.WorkMessage{NotificationID: id, Channel: domain.ChannelPush, UserID: user}, 1, nil},
		{"no user id: the recipient's profile", domain.WorkMessage{NotificationID: id, Channel: domain.ChannelEmail}, 1, nil},
		{"no delivery on the channel: the claim finds out", domain.WorkMessage{NotificationID: id, Channel: domain.ChannelSMS, UserID: user}, 0, nil},
		{"another user named: the recipient's own profile", domain.WorkMessage{NotificationID: id, Channel: domain.ChannelEmail, UserID: stranger}, 1, nil},
		{"push naming another user", domain.WorkMessage{NotificationID: id, Channel: domain.ChannelPush, UserID: stranger}, 1, nil},
		{"missing notification", domain.WorkMessage{NotificationID: id + "-missing", Channel: domain.ChannelEmail, UserID: user}, 0, domain.ErrNotFound},
		{"missing notification, push", domain.WorkMessage{NotificationID: id + "-missing", Channel: domain.ChannelPush, UserID: user}, 0, domain.ErrNotFound},
		{"missing notification, no user id", domain.WorkMessage{NotificationID: id + "-missing", Channel: domain.ChannelEmail}, 0, domain.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, p, err := s.LoadWork(ctx, tt.wm)
			if tt.wantErrIs != nil {
				if !errors.Is(err, tt.wantErrIs) {
					t.Errorf("error %v, want %v", err, tt.wantErrIs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n.ID != id || n.Recipient.UserID != user {
				t.Errorf("notification %+v", n)
			}
			if p.User == nil || p.User.ID != user || p.User.Locale != "it" {
				t.Errorf("profile user %+v, want the recipient's", p.User)
			}
			if on, ok := p.Preferences.Enabled("comment.created", domain.ChannelSMS); !ok || on {
				t.Errorf("preferences %v", p.Preferences)
			}
			if len(p.PushSubscriptions) != tt.pushSubs {
				t.Errorf("%d push subscriptions, want %d", len(p.PushSubscriptions), tt.pushSubs)
			}
		})
	}

	existing, profiles, err := s.ReadPlanning(ctx, []domain.DeliveryKey{
		{NotificationID: id, Channel: domain.ChannelEmail}, {NotificationID: id, Channel: domain.ChannelSMS},
	}, []string{user, "nobody-" + user})
	if err != nil {
		t.Fatal(err)
	}
	if len(existing) != 1 || existing[domain.DeliveryKey{NotificationID: id, Channel: domain.ChannelEmail}].Status != domain.StatusQueued {
		t.Errorf("existing deliveries %+v", existing)
	}
	if p := profiles[user]; p == nil || p.User == nil || p.User.Email != "a@example.com" || len(p.Preferences) != 1 {
		t.Errorf("profile %+v", p)
	}
	if p := profiles["nobody-"+user]; p == nil || p.User != nil || p.Preferences == nil {
		t.Errorf("unknown user's profile %+v, want an empty one", p)
	}
}
