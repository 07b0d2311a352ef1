package policy

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
)

// asUser calls the API with a fresh token for user.
func asUser(t testing.TB, user, method, path string) *stacktest.Response {
	t.Helper()
	resp := stacktest.Do(t, method, path, nil, "Authorization: Bearer "+stacktest.Stack(t).Token(user, time.Hour))
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, resp.Body)
	}
	return resp
}

func mention(user, email string, channels ...string) map[string]any {
	return map[string]any{
		"type":      "comment.mentioned",
		"recipient": map[string]any{"userId": user, "email": email},
		"data":      map[string]any{"actorLabel": "Ann", "url": "https://example.com/c/" + user},
		"channels":  channels,
	}
}

// statusOf reads a delivery as GET /v1/notifications/{id} shows it.
func statusOf(t testing.TB, id, channel string) (status, reason string) {
	t.Helper()
	n, err := stacktest.Client(t, "").GetNotification(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	d := n.Deliveries[channel]
	return d.Status, d.Reason
}

// TestMentionPushFollowsPresence: presence a moment ago → the push is
// skipped (active_in_app) and the inbox has the item; five minutes after the
// last presence the same kind of notification is pushed.
func TestMentionPushFollowsPresence(t *testing.T) {
	st := stacktest.Stack(t)
	user := uniqueUser(t)
	sub := addPushSubscription(t, user)
	asUser(t, user, http.MethodPost, "/v1/users/"+user+"/presence")
	seen := st.Clock.Now()

	first := stacktest.Notify(t, mention(user, "", "push"))
	waitStatus(t, first, domain.ChannelPush, domain.StatusSkipped, 30*time.Second)
	if s, r := statusOf(t, first, "push"); s != "skipped" || r != "active_in_app" {
		t.Fatalf("GET /v1/notifications: push %s: %s, want skipped: active_in_app", s, r)
	}
	var page struct{ Items []struct{ ID string } }
	asUser(t, user, http.MethodGet, "/v1/users/"+user+"/inbox").JSON(t, &page)
	if len(page.Items) == 0 || page.Items[0].ID != first {
		t.Fatalf("inbox %+v, want the mention first", page.Items)
	}
	if got := pushesTo(t, sub); len(got) != 0 {
		t.Fatalf("%d pushes while in the app", len(got))
	}

	advanceTo(t, seen.Add(5*time.Minute))
	second := stacktest.Notify(t, mention(user, "", "push"))
	waitStatus(t, second, domain.ChannelPush, domain.StatusSent, 30*time.Second)
	if got := pushesTo(t, sub); len(got) != 1 || got[0].ID != second {
		t.Fatalf("pushes %+v, want exactly the second mention", got)
	}
}

// TestMentionEmailFollowsReadState: read in the inbox within 30 minutes →
// the email is dropped (read_in_app) and never sent; left unread → one email
// at +30 minutes, not before.
func TestMentionEmailFollowsReadState(t *testing.T) {
	st := stacktest.Stack(t)
	readUser, unreadUser := uniqueUser(t)+"r", uniqueUser(t)+"u"
	readAddr, unreadAddr := readUser+"@example.com", unreadUser+"@example.com"
	read := stacktest.Notify(t, mention(readUser, readAddr, "email"))
	unread := stacktest.Notify(t, mention(unreadUser, unreadAddr, "email"))
	accepted := st.Clock.Now()
	for _, id := range []string{read, unread} {
		d := waitStatus(t, id, domain.ChannelEmail, domain.StatusDeferred, 30*time.Second)
		if d.Reason != domain.ReasonDelayed || d.DueAt.Before(accepted.Add(29*time.Minute)) || d.DueAt.After(accepted.Add(30*time.Minute)) {
			t.Fatalf("deferred %q due %v, want delayed due 30 min after %v", d.Reason, d.DueAt, accepted)
		}
	}

	advanceTo(t, accepted.Add(10*time.Minute))
	asUser(t, readUser, http.MethodPost, "/v1/users/"+readUser+"/inbox/"+read+"/read")
	advanceTo(t, accepted.Add(20*time.Minute))
	settle()
	if n := len(stacktest.EmailsTo(t, unreadAddr)); n != 0 {
		t.Fatalf("%d emails before +30 min", n)
	}

	advanceTo(t, accepted.Add(31*time.Minute))
	waitStatus(t, read, domain.ChannelEmail, domain.StatusDropped, 30*time.Second)
	if s, r := statusOf(t, read, "email"); s != "dropped" || r != "read_in_app" {
		t.Fatalf("read: email %s: %s, want dropped: read_in_app", s, r)
	}
	waitStatus(t, unread, domain.ChannelEmail, domain.StatusSent, 30*time.Second)
	settle()
	if n := len(stacktest.EmailsTo(t, readAddr)); n != 0 {
		t.Errorf("%d emails for the read mention, want none", n)
	}
	if n := len(stacktest.EmailsTo(t, unreadAddr)); n != 1 {
		t.Errorf("%d emails for the unread mention, want 1", n)
	}
}

// TestCancelledMentionSendsNoDelayedEmail: cancelling while the email waits
// for its 30 minutes drops it (cancelled) and nothing is sent at +30 min.
func TestCancelledMentionSendsNoDelayedEmail(t *testing.T) {
	st := stacktest.Stack(t)
	user := uniqueUser(t)
	addr := user + "@example.com"
	id := stacktest.Notify(t, mention(user, addr, "email"))
	accepted := st.Clock.Now()
	waitStatus(t, id, domain.ChannelEmail, domain.StatusDeferred, 30*time.Second)
	if _, err := stacktest.Client(t, "").CancelNotification(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	advanceTo(t, accepted.Add(31*time.Minute))
	settle()
	if s, r := statusOf(t, id, "email"); s != "dropped" || r != "cancelled" {
		t.Fatalf("email %s: %s, want dropped: cancelled", s, r)
	}
	if n := len(stacktest.EmailsTo(t, addr)); n != 0 {
		t.Errorf("%d emails for a cancelled mention", n)
	}
}

// startMentionCampaign creates and starts a comment.mentioned campaign (low
// priority, the campaign default) to users' emails and returns its id.
func startMentionCampaign(t *testing.T, users ...string) string {
	t.Helper()
	for _, u := range users {
		if r := stacktest.Do(t, http.MethodPut, "/v1/users/"+u, map[string]any{"email": u + "@example.com"}); r.StatusCode != http.StatusOK && r.StatusCode != http.StatusCreated {
			t.Fatalf("put user %s: %d %s", u, r.StatusCode, r.Body)
		}
	}
	r := stacktest.Do(t, http.MethodPost, "/v1/campaigns", map[string]any{
		"type": "comment.mentioned", "channels": []string{"email"},
		"data":     map[string]any{"actorLabel": "Ann", "url": "https://example.com/c/campaign"},
		"audience": map[string]any{"userIds": users},
	})
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("create campaign: %d %s", r.StatusCode, r.Body)
	}
	var c struct{ ID string }
	r.JSON(t, &c)
	if r := stacktest.Do(t, http.MethodPost, "/v1/campaigns/"+c.ID+"/start", nil); r.StatusCode != http.StatusAccepted {
		t.Fatalf("start campaign: %d %s", r.StatusCode, r.Body)
	}
	return c.ID
}

// TestCampaignMentionFollowsTheEscalation: a campaign of an escalating type
// follows the type's rules like a single notification. Each recipient's
// email is deferred (delayed) through the due index to 30 minutes after its
// notification was created; at send time the recipient who read the item is
// dropped (read_in_app), the one who did not gets one email; cancelling a
// campaign while its emails wait drops them (cancelled), nothing is sent.
func TestCampaignMentionFollowsTheEscalation(t *testing.T) {
	st := stacktest.Stack(t)
	run := uniqueUser(t)
	readUser, unreadUser, cancelledUser := run+"-r", run+"-u", run+"-c"
	started := st.Clock.Now()
	sent := startMentionCampaign(t, readUser, unreadUser)
	cancelled := startMentionCampaign(t, cancelledUser)
	ids := map[string]string{
		readUser:      domain.CampaignNotificationID(sent, readUser),
		unreadUser:    domain.CampaignNotificationID(sent, unreadUser),
		cancelledUser: domain.CampaignNotificationID(cancelled, cancelledUser),
	}
	s := stacktest.Store(t)
	for u, id := range ids {
		// The fan-out (campaign queue, lot, relay) takes longer than one
		// intake on a loaded machine.
		stacktest.Eventually(t, 60*time.Second, u+"'s notification created", func() bool {
			_, err := s.GetNotification(context.Background(), id)
			if err != nil && !errors.Is(err, domain.ErrNotFound) {
				t.Fatal(err)
			}
			return err == nil
		})
		d := waitStatus(t, id, domain.ChannelEmail, domain.StatusDeferred, 60*time.Second)
		if d.Reason != domain.ReasonDelayed || d.DueAt.Before(started.Add(30*time.Minute)) || d.DueAt.After(st.Clock.Now().Add(30*time.Minute)) {
			t.Fatalf("%s: email deferred %q due %v, want delayed due 30 min after the campaign started at %v", u, d.Reason, d.DueAt, started)
		}
	}
	if r := stacktest.Do(t, http.MethodDelete, "/v1/campaigns/"+cancelled, nil); r.StatusCode != http.StatusOK {
		t.Fatalf("cancel campaign: %d %s", r.StatusCode, r.Body)
	}

	advanceTo(t, started.Add(10*time.Minute))
	asUser(t, readUser, http.MethodPost, "/v1/users/"+readUser+"/inbox/"+ids[readUser]+"/read")
	advanceTo(t, started.Add(20*time.Minute))
	settle()
	if n := len(stacktest.EmailsTo(t, unreadUser+"@example.com")); n != 0 {
		t.Fatalf("%d emails before +30 min", n)
	}

	advanceTo(t, st.Clock.Now().Add(31*time.Minute))
	waitStatus(t, ids[unreadUser], domain.ChannelEmail, domain.StatusSent, 30*time.Second)
	waitStatus(t, ids[readUser], domain.ChannelEmail, domain.StatusDropped, 30*time.Second)
	waitStatus(t, ids[cancelledUser], domain.ChannelEmail, domain.StatusDropped, 30*time.Second)
	settle()
	for u, want := range map[string][2]string{readUser: {"dropped", "read_in_app"}, cancelledUser: {"dropped", "cancelled"}, unreadUser: {"sent", ""}} {
		if s, r := statusOf(t, ids[u], "email"); s != want[0] || r != want[1] {
			t.Errorf("%s: email %s: %s, want %s: %s", u, s, r, want[0], want[1])
		}
		wantEmails := 0
		if u == unreadUser {
			wantEmails = 1
		}
		if n := len(stacktest.EmailsTo(t, u+"@example.com")); n != wantEmails {
			t.Errorf("%s: %d emails, want %d", u, n, wantEmails)
		}
	}
}
