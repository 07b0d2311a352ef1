package policy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/webpush"
)

func TestPreferenceOffSkipsTheEmailButKeepsTheInAppItem(t *testing.T) {
	user := uniqueUser(t)
	addr := user + "@example.com"
	putPrefs(t, user, map[string]map[string]bool{"reservation.approved": {"email": false}})
	id := stacktest.Notify(t, reservation(user, addr, nil))
	d := waitStatus(t, id, domain.ChannelEmail, domain.StatusSkipped, 10*time.Second)
	if d.Reason != domain.ReasonPreference {
		t.Errorf("reason %q, want preference", d.Reason)
	}
	s := stacktest.Store(t)
	n, err := s.GetNotification(context.Background(), id)
	if err != nil || n.Recipient.UserID != user {
		t.Fatalf("in-app item: %+v, %v", n, err)
	}
	settle()
	if got := stacktest.EmailsTo(t, addr); len(got) != 0 {
		t.Errorf("%d emails sent with the preference off", len(got))
	}
}

func TestMandatoryTypeSendsDespiteTheOverride(t *testing.T) {
	user := uniqueUser(t)
	addr := user + "@example.com"
	putUser(t, domain.User{ID: user, Email: addr})
	putPrefs(t, user, map[string]map[string]bool{"security.login_alert": {"email": false, "sms": false}})
	id := stacktest.Notify(t, map[string]any{
		"type": "security.login_alert", "recipient": map[string]any{"userId": user},
		"data": map[string]any{"url": "https://example.com/security"}, "channels": []string{"email"},
	})
	waitStatus(t, id, domain.ChannelEmail, domain.StatusSent, 15*time.Second)
	if got := stacktest.EmailsTo(t, addr); len(got) != 1 {
		t.Errorf("%d emails, want 1", len(got))
	}
}

func TestSixthEmailInAMinuteIsRateLimitedButHighIsExempt(t *testing.T) {
	st := stacktest.Stack(t)
	user := uniqueUser(t)
	addr := user + "@example.com"
	// A budget that lets the minute's six through: the rate limit is under
	// test (budget_test.go holds the budget).
	setBudget(t, user, domain.Budget{PerHour: 20, PerDay: 40})
	// Start at the beginning of a rate window so all six fall into it.
	now := st.Clock.Now()
	advanceTo(t, now.Truncate(time.Minute).Add(time.Minute+time.Second))
	var ids []string
	for range 6 {
		ids = append(ids, stacktest.Notify(t, reservation(user, addr, nil)))
	}
	for _, id := range ids[:5] {
		waitStatus(t, id, domain.ChannelEmail, domain.StatusSent, 15*time.Second)
	}
	if d := waitStatus(t, ids[5], domain.ChannelEmail, domain.StatusSkipped, 10*time.Second); d.Reason != domain.ReasonRateLimited {
		t.Errorf("6th: reason %q, want rate_limited", d.Reason)
	}
	high := stacktest.Notify(t, reservation(user, addr, map[string]any{"priority": "high"}))
	waitStatus(t, high, domain.ChannelEmail, domain.StatusSent, 15*time.Second)
	if got := stacktest.EmailsTo(t, addr); len(got) != 6 {
		t.Errorf("%d emails, want 6 (5 normal + 1 high)", len(got))
	}
}

func TestQuietHoursDeferUntilTheWindowEnds(t *testing.T) {
	st := stacktest.Stack(t)
	user := uniqueUser(t)
	addr := user + "@example.com"
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	local := st.Clock.Now().In(tokyo)
	putUser(t, domain.User{ID: user, Email: addr, Timezone: "Asia/Tokyo",
		QuietHours: &domain.QuietHours{Start: fmtClock(local.Add(-time.Hour)), End: fmtClock(local.Add(time.Hour))}})
	wantDue := local.Add(time.Hour).Truncate(time.Minute)

	id := stacktest.Notify(t, reservation(user, "", nil))
	d := waitStatus(t, id, domain.ChannelEmail, domain.StatusDeferred, 10*time.Second)
	if d.Reason != domain.ReasonQuietHours || !d.DueAt.Equal(wantDue) {
		t.Fatalf("deferred %q due %v, want quiet_hours due %v", d.Reason, d.DueAt, wantDue)
	}
	high := stacktest.Notify(t, reservation(user, "", map[string]any{"priority": "high"}))
	waitStatus(t, high, domain.ChannelEmail, domain.StatusSent, 15*time.Second)
	settle()
	if got := stacktest.EmailsTo(t, addr); len(got) != 1 {
		t.Fatalf("%d emails during quiet hours, want only the high-priority one", len(got))
	}
	if d, _ := delivery(t, id, domain.ChannelEmail); d.Status != domain.StatusDeferred {
		t.Fatalf("before the window ends: %s", d.Status)
	}

	advanceTo(t, wantDue.Add(time.Second))
	sent := waitStatus(t, id, domain.ChannelEmail, domain.StatusSent, 15*time.Second)
	if sent.UpdatedAt.Before(wantDue) {
		t.Errorf("sent at %v, before the window ended at %v", sent.UpdatedAt, wantDue)
	}
	if got := stacktest.EmailsTo(t, addr); len(got) != 2 {
		t.Errorf("%d emails after the window, want 2", len(got))
	}
}

func TestSendAtDefersUntilItIsDue(t *testing.T) {
	st := stacktest.Stack(t)
	user := uniqueUser(t)
	addr := user + "@example.com"
	sendAt := st.Clock.Now().Add(90 * time.Second).UTC().Truncate(time.Millisecond)
	id := stacktest.Notify(t, reservation(user, addr, map[string]any{"sendAt": sendAt.Format(time.RFC3339Nano)}))
	d := waitStatus(t, id, domain.ChannelEmail, domain.StatusDeferred, 10*time.Second)
	if d.Reason != domain.ReasonScheduled || !d.DueAt.Equal(sendAt) {
		t.Fatalf("deferred %q due %v, want scheduled due %v", d.Reason, d.DueAt, sendAt)
	}

	st.Clock.Advance(60 * time.Second)
	settle() // four scheduler runs
	if d, _ := delivery(t, id, domain.ChannelEmail); d.Status != domain.StatusDeferred {
		t.Fatalf("60 s later: %s, want still deferred", d.Status)
	}
	if got := stacktest.EmailsTo(t, addr); len(got) != 0 {
		t.Fatalf("%d emails before sendAt", len(got))
	}

	advanceTo(t, sendAt.Add(time.Second))
	sent := waitStatus(t, id, domain.ChannelEmail, domain.StatusSent, 15*time.Second)
	if sent.UpdatedAt.Before(sendAt) {
		t.Errorf("sent at %v, before sendAt %v", sent.UpdatedAt, sendAt)
	}
	if got := stacktest.EmailsTo(t, addr); len(got) != 1 {
		t.Errorf("%d emails, want 1", len(got))
	}
}

func TestFiveCommentsInAWindowBecomeOneDigest(t *testing.T) {
	user := uniqueUser(t)
	putUser(t, domain.User{ID: user})
	sub := addPushSubscription(t, user)
	batchKey := "thread-" + user
	var ids, urls []string
	for i := range 5 {
		url := "https://example.com/c/" + user + "/" + string(rune('a'+i))
		urls = append(urls, url)
		ids = append(ids, stacktest.Notify(t, map[string]any{
			"type": "comment.created", "recipient": map[string]any{"userId": user}, "batchKey": batchKey,
			"data": map[string]any{"actorLabel": "Someone", "url": url},
		}))
	}
	leader := ids[0]
	lead := waitStatus(t, leader, domain.ChannelPush, domain.StatusDeferred, 10*time.Second)
	if lead.Reason != domain.ReasonDigest || lead.DigestID != leader {
		t.Fatalf("leader %+v", lead)
	}
	for _, id := range ids[1:] {
		if d := waitStatus(t, id, domain.ChannelPush, domain.StatusSkipped, 10*time.Second); d.Reason != domain.ReasonDigested || d.DigestID != leader {
			t.Errorf("member %s: %+v", id, d)
		}
	}
	s := stacktest.Store(t)
	for _, id := range ids { // every in-app item remains
		if _, err := s.GetNotification(context.Background(), id); err != nil {
			t.Errorf("in-app item %s: %v", id, err)
		}
	}
	settle()
	if got := pushesTo(t, sub); len(got) != 0 {
		t.Fatalf("%d pushes before the window ended", len(got))
	}

	advanceTo(t, lead.DueAt.Add(time.Second))
	waitStatus(t, leader, domain.ChannelPush, domain.StatusSent, 15*time.Second)
	settle()
	got := pushesTo(t, sub)
	if len(got) != 1 {
		t.Fatalf("%d pushes, want one digest", len(got))
	}
	p := got[0]
	if p.ID != leader || p.Title != "5 new comments" || p.URL != urls[4] {
		t.Errorf("digest %+v", p)
	}
	// The body lists all five, newest first.
	rest := p.Body
	for i := 4; i >= 0; i-- {
		at := strings.Index(rest, urls[i])
		if at < 0 {
			t.Fatalf("digest body %q lacks %s in newest-first order", p.Body, urls[i])
		}
		rest = rest[at+len(urls[i]):]
	}
}

// Issue 36, defect 2: a digest planned hours after its comments were
// accepted (a stream backlog, a relay DLQ redrive) had its leader deferred
// to the window's end, hours in the past: a due-index bucket behind the
// scheduler's watermark, never probed again, and the whole digest was lost
// (its member already skipped: digested). The notifications are written as
// intake writes them, accepted three hours ago, so the relay plans them
// three hours late.
func TestDigestPlannedHoursLateIsSent(t *testing.T) {
	st, s := stacktest.Stack(t), stacktest.Store(t)
	user := uniqueUser(t)
	putUser(t, domain.User{ID: user})
	sub := addPushSubscription(t, user)
	accepted := st.Clock.Now().Add(-3 * time.Hour)
	var ids []string
	for i := range 2 {
		n := &domain.Notification{ID: stacktest.UniqueID("late"), Caller: "e2e", Type: "comment.created", Recipient: domain.Recipient{UserID: user},
			Priority: domain.PriorityLow, BatchKey: "thread-" + user, CreatedAt: accepted.Add(time.Duration(i) * time.Second), Status: domain.NotificationAccepted,
			Data: map[string]any{"actorLabel": "Someone", "url": fmt.Sprintf("https://example.com/c/%s/%d", user, i)}}
		if _, err := s.CreateNotification(context.Background(), n); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, n.ID)
	}
	waitStatus(t, ids[1], domain.ChannelPush, domain.StatusSkipped, 10*time.Second)
	lead := waitStatus(t, ids[0], domain.ChannelPush, domain.StatusSent, 15*time.Second)
	if lead.DigestID != ids[0] {
		t.Errorf("leader %+v: want its own digest", lead)
	}
	if got := pushesTo(t, sub); len(got) != 1 || got[0].Title != "2 new comments" {
		t.Errorf("pushes %+v, want one digest of both comments", got)
	}
}

// Issue 13 §2: two comments with 2,000-character links made a digest larger
// than Web Push allows; it failed and the member was skipped, so neither was
// ever delivered. The digest now lists what fits and is delivered.
func TestOversizedDigestIsDeliveredNotDropped(t *testing.T) {
	user := uniqueUser(t)
	putUser(t, domain.User{ID: user})
	sub := addPushSubscription(t, user)
	var ids, urls []string
	for i := range 2 {
		url := "https://example.com/c/" + user + "/" + string(rune('a'+i)) + "/" + strings.Repeat("x", 1960)
		urls = append(urls, url)
		ids = append(ids, stacktest.Notify(t, map[string]any{
			"type": "comment.created", "recipient": map[string]any{"userId": user}, "batchKey": "thread-" + user,
			"data": map[string]any{"actorLabel": "Someone", "url": url},
		}))
	}
	lead := waitStatus(t, ids[0], domain.ChannelPush, domain.StatusDeferred, 10*time.Second)
	waitStatus(t, ids[1], domain.ChannelPush, domain.StatusSkipped, 10*time.Second)
	advanceTo(t, lead.DueAt.Add(time.Second))
	waitStatus(t, ids[0], domain.ChannelPush, domain.StatusSent, 15*time.Second)
	got := pushesTo(t, sub)
	if len(got) != 1 {
		t.Fatalf("%d pushes, want one digest", len(got))
	}
	p := got[0]
	// One item listed (the newest), its link kept; the body shortened to fit.
	if p.ID != ids[0] || p.Title != "2 new comments" || p.URL != urls[1] ||
		!strings.HasPrefix(p.Body, "There are 2 new comments") || !strings.Contains(p.Body, urls[1][:100]) || strings.Contains(p.Body, urls[0][:100]) {
		t.Errorf("digest %+v", p)
	}
	if raw := stacktest.Stack(t).Push.MessagesFor(sub)[0].Body; len(raw) > webpush.MaxPlaintextSize {
		t.Errorf("payload of %d bytes", len(raw))
	}
}
