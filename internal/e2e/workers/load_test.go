package workers

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"testing"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
)

// TestLoadWorkReadsTheSameOnEveryPath: the worker's one-request load (email
// and SMS: one BatchGetItem), the push load (two reads at once), the load
// of a message without the user id (two reads in turn) and a message
// naming the wrong user all see the same notification and profile.
func TestLoadWorkReadsTheSameOnEveryPath(t *testing.T) {
	ctx := context.Background()
	user := stacktest.UniqueID("load")
	addr := user + "@example.com"
	if resp := stacktest.Do(t, http.MethodPut, "/v1/users/"+user, map[string]any{"email": addr, "locale": "ja-JP"}); resp.StatusCode/100 != 2 {
		t.Fatalf("PUT user = %d %s", resp.StatusCode, resp.Body)
	}
	if resp := stacktest.Do(t, http.MethodPut, "/v1/users/"+user+"/preferences", `{"preferences":{"invoice.payment_failed":{"push":false}}}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT preferences = %d %s", resp.StatusCode, resp.Body)
	}
	pushSubscription(t, user)
	id := stacktest.Notify(t, reservation(user, []string{"email", "push"}, nil))
	waitStatus(t, id, domain.ChannelEmail, domain.StatusSent)
	waitStatus(t, id, domain.ChannelPush, domain.StatusSent)

	s := stacktest.Store(t)
	for _, ch := range []domain.Channel{domain.ChannelEmail, domain.ChannelPush} {
		want, wantP, err := s.LoadWork(ctx, domain.WorkMessage{NotificationID: id, Channel: ch}) // two reads in turn
		if err != nil {
			t.Fatal(err)
		}
		if want.ID != id || wantP.User == nil || wantP.User.Email != addr {
			t.Fatalf("%s: legacy load = %+v %+v", ch, want, wantP)
		}
		for _, wm := range []domain.WorkMessage{
			{NotificationID: id, Channel: ch, UserID: user},
			{NotificationID: id, Channel: ch, UserID: "someone-else"},
		} {
			n, p, err := s.LoadWork(ctx, wm)
			if err != nil {
				t.Fatalf("%+v: %v", wm, err)
			}
			if !reflect.DeepEqual(n, want) {
				t.Errorf("%+v: notification differs:\n%+v\nwant\n%+v", wm, n, want)
			}
			if !reflect.DeepEqual(p.User, wantP.User) || !reflect.DeepEqual(p.Preferences, wantP.Preferences) {
				t.Errorf("%+v: profile %+v %v, want %+v %v", wm, p.User, p.Preferences, wantP.User, wantP.Preferences)
			}
			// Only push needs (and reads) the subscriptions.
			if ch == domain.ChannelPush && len(p.PushSubscriptions) != 1 {
				t.Errorf("%+v: %d push subscriptions, want 1", wm, len(p.PushSubscriptions))
			}
		}
	}
	if _, _, err := s.LoadWork(ctx, domain.WorkMessage{NotificationID: "missing", Channel: domain.ChannelEmail, UserID: user}); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("load of a missing notification: %v, want ErrNotFound", err)
	}
}
