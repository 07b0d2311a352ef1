package deadlines

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
)

// relayLag is how long the tests' notifications wait in the relay DLQ: past
// the end of the quiet hours they were accepted in, and past an escalation's
// delay.
const relayLag = 3 * time.Hour

// TestRelayLagOverQuietHours: a digestible comment and a reservation email
// accepted in the user's quiet hours (an hour either side of acceptance)
// park in the relay DLQ (a corrupt profile); three hours later, the quiet
// hours over, the profile is fixed and the relay DLQ redriven. Planned on
// time they would have waited for the quiet hours' end; planned this late,
// that end is two hours in the past, behind the scheduler's watermark (where
// the minutes of ticks during the lag leave it, an hour behind the clock):
// the comment's digest leader is due at the redrive (issue 36, defect 2:
// its window ended at the quiet hours' end, it was deferred there and lost),
// the email goes at once, and each is sent exactly once.
func TestRelayLagOverQuietHours(t *testing.T) {
	st := stacktest.Stack(t)
	ctx := context.Background()
	user := stacktest.UniqueID("dl-quiet")
	addr := user + "@example.com"
	corruptProfile(t, user)
	accepted := st.Clock.Now()
	comment := stacktest.Notify(t, map[string]any{"type": "comment.created", "recipient": map[string]any{"userId": user}, "batchKey": "thread-" + user,
		"data": map[string]any{"actorLabel": "Someone", "url": "https://example.com/c/" + user}})
	email := stacktest.Notify(t, reservation(user, map[string]any{"email": addr}))
	waitParked(t, comment, email)

	redriven := lagAndFix(t, &domain.User{ID: user, QuietHours: quietAround(accepted)})
	sinkID := addPush(t, user)
	if out := dlq(t, "redrive", "relay", "--all"); !strings.Contains(out, "replanned") {
		t.Fatalf("redrive relay: %s", out)
	}
	var lead *domain.Delivery
	stacktest.Eventually(t, 10*time.Second, "the comment's digest deferred", func() bool {
		var err error
		lead, err = stacktest.Store(t).GetDelivery(ctx, comment, domain.ChannelPush)
		return err == nil && lead.Status == domain.StatusDeferred
	})
	if lead.DueAt.Before(redriven) {
		t.Errorf("the digest planned %v late is due %v, at its quiet hours' end, before the redrive (%v): behind the scheduler's watermark", relayLag, lead.DueAt, redriven)
	}
	st.Clock.Advance(max(lead.DueAt.Sub(st.Clock.Now()), 0) + time.Minute)
	if due, err := st.Scheduler.Tick(ctx); err != nil || due == 0 {
		t.Fatalf("tick after the digest's due time: %d partitions, %v", due, err)
	}
	waitSent(t, comment, domain.ChannelPush)
	waitSent(t, email, domain.ChannelEmail)
	settle(t) // a duplicate would come from a queued message: none is left
	if pushes, emails := st.Push.ReceivedCount(sinkID), len(stacktest.EmailsTo(t, addr)); pushes != 1 || emails != 1 {
		t.Fatalf("%d pushes and %d emails, want one of each", pushes, emails)
	}
}

// TestRelayLagOverAnEscalation: comment.mentioned (push unless the user was
// in the app within 2 minutes, email 30 minutes after acceptance unless the
// inbox item was read) to two users in quiet hours, parked in the relay DLQ
// and redriven three hours later: the email's escalation was due two and a
// half hours before, in quiet hours that have ended too. It is not deferred
// to either past time (behind the scheduler's watermark, lost) but goes at
// the redrive, once, to each (the inbox item is unread); the push follows
// its rule at the redrive's time: sent once to the user away, skipped
// (active_in_app) for the one seen in the app just before.
func TestRelayLagOverAnEscalation(t *testing.T) {
	st := stacktest.Stack(t)
	ctx := context.Background()
	away, seen := stacktest.UniqueID("dl-esc-away"), stacktest.UniqueID("dl-esc-seen")
	accepted := st.Clock.Now()
	ids := map[string]string{}
	for _, user := range []string{away, seen} {
		corruptProfile(t, user)
		ids[user] = stacktest.Notify(t, map[string]any{"type": "comment.mentioned", "recipient": map[string]any{"userId": user},
			"data": map[string]any{"actorLabel": "Someone", "url": "https://example.com/m/" + user}})
	}
	waitParked(t, ids[away], ids[seen])

	redriven := lagAndFix(t, &domain.User{ID: away, Email: away + "@example.com", QuietHours: quietAround(accepted)})
	fixProfile(t, &domain.User{ID: seen, Email: seen + "@example.com", QuietHours: quietAround(accepted)})
	sinks := map[string]string{away: addPush(t, away), seen: addPush(t, seen)}
	if _, err := stacktest.Store(t).TouchPresence(ctx, seen, redriven.Add(-30*time.Second), 0); err != nil {
		t.Fatal(err)
	}
	if out := dlq(t, "redrive", "relay", "--all"); !strings.Contains(out, "replanned") {
		t.Fatalf("redrive relay: %s", out)
	}
	waitSent(t, ids[away], domain.ChannelEmail)
	waitSent(t, ids[seen], domain.ChannelEmail)
	waitSent(t, ids[away], domain.ChannelPush)
	stacktest.Eventually(t, 10*time.Second, "the push to the user seen at the redrive skipped", func() bool {
		d, err := stacktest.Store(t).GetDelivery(ctx, ids[seen], domain.ChannelPush)
		return err == nil && d.Status == domain.StatusSkipped && d.Reason == domain.ReasonActiveInApp
	})
	settle(t) // a duplicate would come from a queued message: none is left
	for user, want := range map[string]int{away: 1, seen: 0} {
		if pushes, emails := st.Push.ReceivedCount(sinks[user]), len(stacktest.EmailsTo(t, user+"@example.com")); pushes != want || emails != 1 {
			t.Errorf("%s: %d pushes and %d emails, want %d and one", user, pushes, emails, want)
		}
	}
}

// quietAround is a user's quiet hours (UTC) from an hour before at to an
// hour after it.
func quietAround(at time.Time) *domain.QuietHours {
	clock := func(t time.Time) string { t = t.UTC(); return fmt.Sprintf("%02d:%02d", t.Hour(), t.Minute()) }
	return &domain.QuietHours{Start: clock(at.Add(-time.Hour)), End: clock(at.Add(time.Hour))}
}

// lagAndFix moves the stack's clock relayLag on, puts the scheduler's
// watermark where a tick a minute during the lag leaves it (an hour behind
// the clock: nothing older is probed again), fixes u's profile and returns
// the time of the redrive to come.
func lagAndFix(t *testing.T, u *domain.User) time.Time {
	t.Helper()
	st := stacktest.Stack(t)
	st.Clock.Advance(relayLag)
	if err := stacktest.Store(t).AdvanceReleaseWatermark(context.Background(), st.Clock.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	fixProfile(t, u)
	return st.Clock.Now()
}

// waitSent waits for id's delivery on c to be sent.
func waitSent(t *testing.T, id string, c domain.Channel) {
	t.Helper()
	stacktest.Eventually(t, 20*time.Second, fmt.Sprintf("%s sent", c), func() bool {
		d, err := stacktest.Store(t).GetDelivery(context.Background(), id, c)
		return err == nil && d.Status == domain.StatusSent
	})
}
