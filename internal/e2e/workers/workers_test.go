package workers

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/webpush"
)

func TestEmailDeliversWithOneClickUnsubscribe(t *testing.T) {
	user := stacktest.UniqueID("email")
	addr := user + "@example.com"
	id := stacktest.Notify(t, reservation(user, []string{"email"}, map[string]any{"email": addr}))
	d := waitStatus(t, id, domain.ChannelEmail, domain.StatusSent)
	wantOutcome(t, d, domain.StatusSent, domain.ReasonNone, 1)
	mails := emailsTo(t, addr)
	if len(mails) != 1 || mails[0].MessageID != d.ProviderMessageID || !strings.Contains(mails[0].Subject, "reservation") {
		t.Fatalf("emails %+v, want one with the SES message id %s", mails, d.ProviderMessageID)
	}
	if got := mails[0].header("List-Unsubscribe-Post"); got != "List-Unsubscribe=One-Click" {
		t.Errorf("List-Unsubscribe-Post = %q", got)
	}
	link := strings.TrimSuffix(strings.TrimPrefix(mails[0].header("List-Unsubscribe"), "<"), ">")
	u, err := url.Parse(link)
	if err != nil || u.Path != "/v1/unsubscribe" || u.Query().Get("token") == "" || strings.Contains(link, addr) {
		t.Fatalf("List-Unsubscribe %q: want the unsubscribe route with a token and no address", link)
	}

	// GET shows a confirmation and changes nothing; POST (RFC 8058) turns
	// the type's email off.
	page := stacktest.Do(t, http.MethodGet, u.RequestURI(), nil)
	if page.StatusCode != http.StatusOK || !strings.Contains(string(page.Body), "<form") {
		t.Fatalf("GET unsubscribe = %d %s", page.StatusCode, page.Body)
	}
	if p, _ := stacktest.Store(t).GetRecipientProfile(context.Background(), user); len(p.Preferences) != 0 {
		t.Fatalf("GET changed preferences: %v", p.Preferences)
	}
	done := stacktest.Do(t, http.MethodPost, u.RequestURI(), "List-Unsubscribe=One-Click", "Content-Type: application/x-www-form-urlencoded")
	if done.StatusCode != http.StatusOK {
		t.Fatalf("POST unsubscribe = %d %s", done.StatusCode, done.Body)
	}
	var prefs struct {
		Preferences map[string]map[string]struct {
			Enabled bool
			Source  string
		}
	}
	stacktest.Do(t, http.MethodGet, "/v1/users/"+user+"/preferences", nil).JSON(t, &prefs)
	if cell := prefs.Preferences["reservation.approved"]["email"]; cell.Enabled || cell.Source != "user" {
		t.Fatalf("preference after unsubscribe: %+v, want off by the user", cell)
	}
	if cell := prefs.Preferences["reservation.approved"]["push"]; !cell.Enabled {
		t.Fatalf("unsubscribing from email turned push off: %+v", cell)
	}
	// Idempotent; a forged token is refused.
	if again := stacktest.Do(t, http.MethodPost, u.RequestURI(), "List-Unsubscribe=One-Click", "Content-Type: application/x-www-form-urlencoded"); again.StatusCode != http.StatusOK {
		t.Fatalf("second POST = %d", again.StatusCode)
	}
	if bad := stacktest.Do(t, http.MethodPost, "/v1/unsubscribe?token=x"+u.Query().Get("token"), "List-Unsubscribe=One-Click", "Content-Type: application/x-www-form-urlencoded"); bad.StatusCode != http.StatusBadRequest || !strings.Contains(string(bad.Body), "unsubscribe_token_invalid") {
		t.Fatalf("forged token = %d %s", bad.StatusCode, bad.Body)
	}

	// The next email of that type is not sent.
	next := stacktest.Notify(t, reservation(user, []string{"email"}, map[string]any{"email": addr}))
	stacktest.Eventually(t, settle, "the next email skipped", func() bool {
		d, err := stacktest.Store(t).GetDelivery(context.Background(), next, domain.ChannelEmail)
		return err == nil && d.Reason == domain.ReasonPreference && (d.Status == domain.StatusSkipped || d.Status == domain.StatusDropped)
	})
	if n := len(emailsTo(t, addr)); n != 1 {
		t.Fatalf("%d emails after unsubscribing, want 1", n)
	}
}

func TestSMSDelivers(t *testing.T) {
	user, phone := stacktest.UniqueID("sms"), uniquePhone()
	id := stacktest.Notify(t, otp(user, phone))
	d := waitStatus(t, id, domain.ChannelSMS, domain.StatusSent)
	wantOutcome(t, d, domain.StatusSent, domain.ReasonNone, 1)
	msgs := smsTo(t, phone)
	if len(msgs) != 1 || !strings.Contains(msgs[0].Text, "246810") || msgs[0].Type != "Transactional" || msgs[0].MessageID != d.ProviderMessageID {
		t.Fatalf("sms %+v", msgs)
	}
}

func TestPushDeliversDecryptedPayload(t *testing.T) {
	user := stacktest.UniqueID("push")
	sub := pushSubscription(t, user)
	id := stacktest.Notify(t, reservation(user, []string{"push"}, nil))
	d := waitStatus(t, id, domain.ChannelPush, domain.StatusSent)
	wantOutcome(t, d, domain.StatusSent, domain.ReasonNone, 1)
	msgs := pushesTo(t, sub.SinkID)
	if len(msgs) != 1 {
		t.Fatalf("%d pushes", len(msgs))
	}
	m := msgs[0]
	if m.Payload.ID != id || m.Payload.Title != "Reservation confirmed" || m.Payload.URL != "https://example.com/r/"+user || m.Payload.Body == "" {
		t.Errorf("payload %+v", m.Payload)
	}
	if m.Urgency != "normal" || m.TTL != 24*3600 || m.Topic != webpush.TopicFor(id) || m.VAPIDSub != "mailto:ops@example.com" {
		t.Errorf("urgency %s ttl %d topic %s sub %s", m.Urgency, m.TTL, m.Topic, m.VAPIDSub)
	}
}

// channelCase sends one notification on a channel and finds what it produced.
type channelCase struct {
	channel domain.Channel
	queue   string // work queue the notification travels on
	dlq     string
	send    func(t *testing.T) (id string, received func() int)
}

var channelCases = []channelCase{
	{domain.ChannelEmail, "EmailNormalQueue", "EmailDLQ", func(t *testing.T) (string, func() int) {
		user := stacktest.UniqueID("fe")
		addr := user + "@example.com"
		id := stacktest.Notify(t, reservation(user, []string{"email"}, map[string]any{"email": addr}))
		return id, func() int { return len(emailsTo(t, addr)) }
	}},
	{domain.ChannelSMS, "SmsHighQueue", "SmsDLQ", func(t *testing.T) (string, func() int) {
		user, phone := stacktest.UniqueID("fs"), uniquePhone()
		id := stacktest.Notify(t, otp(user, phone))
		return id, func() int { return len(smsTo(t, phone)) }
	}},
	{domain.ChannelPush, "PushNormalQueue", "PushDLQ", func(t *testing.T) (string, func() int) {
		user := stacktest.UniqueID("fp")
		sub := pushSubscription(t, user)
		id := stacktest.Notify(t, reservation(user, []string{"push"}, nil))
		return id, func() int { return stacktest.Stack(t).Push.ReceivedCount(sub.SinkID) }
	}},
}

// TestTwoTransientFaultsThenDelivered: two transient provider failures are
// retried with backoff; the third attempt delivers, once.
func TestTwoTransientFaultsThenDelivered(t *testing.T) {
	for _, tc := range channelCases {
		t.Run(string(tc.channel), func(t *testing.T) {
			inject(t, tc.channel, "transient", 2)
			id, received := tc.send(t)
			d := waitStatus(t, id, tc.channel, domain.StatusSent)
			wantOutcome(t, d, domain.StatusSent, domain.ReasonNone, 3)
			stacktest.Eventually(t, settle, "the queue to drain", func() bool { return queueIdle(t, tc.queue) })
			if n := received(); n != 1 {
				t.Fatalf("received %d, want exactly 1", n)
			}
		})
	}
}

// TestPermanentFaultFails: a permanent failure is recorded and the message
// deleted at once — nothing waits in the queue or reaches the DLQ.
func TestPermanentFaultFails(t *testing.T) {
	for _, tc := range channelCases {
		t.Run(string(tc.channel), func(t *testing.T) {
			inject(t, tc.channel, "permanent", 1)
			id, received := tc.send(t)
			d := waitStatus(t, id, tc.channel, domain.StatusFailed)
			wantOutcome(t, d, domain.StatusFailed, domain.ReasonRejected, 1)
			stacktest.Eventually(t, settle, "the message deleted", func() bool { return queueIdle(t, tc.queue) })
			if dlqContains(t, tc.dlq, id) || received() != 0 {
				t.Fatalf("permanent failure: in DLQ %v, received %d", dlqContains(t, tc.dlq, id), received())
			}
		})
	}
}

// TestTransientForeverGoesToDLQ: every receive fails; the gaps between
// attempts follow the backoff (1 s, then 1–2 s); the last allowed receive
// records failed: exhausted and SQS redrives the message to the DLQ.
func TestTransientForeverGoesToDLQ(t *testing.T) {
	st := stacktest.Stack(t)
	before := len(st.Faults.Hits(domain.ChannelEmail))
	inject(t, domain.ChannelEmail, "transient", 0)
	user := stacktest.UniqueID("dlq")
	id := stacktest.Notify(t, reservation(user, []string{"email"}, map[string]any{"email": user + "@example.com"}))
	d := waitStatus(t, id, domain.ChannelEmail, domain.StatusFailed)
	wantOutcome(t, d, domain.StatusFailed, domain.ReasonExhausted, maxReceiveCount)
	stacktest.Eventually(t, settle, "the message in the email DLQ", func() bool { return dlqContains(t, "EmailDLQ", id) })
	if !queueIdle(t, "EmailNormalQueue") {
		t.Error("work queue not empty after the redrive")
	}

	hits := st.Faults.Hits(domain.ChannelEmail)[before:]
	if len(hits) != maxReceiveCount {
		t.Fatalf("%d provider calls, want %d (one per receive)", len(hits), maxReceiveCount)
	}
	// Gap n follows receive n: full jitter over min(cap, base·2^(n-1)) —
	// ceilings 1 s then 2 s here — floored at SQS's 1 s granularity, plus the
	// poller's latency. With full jitter the ceilings double but a single
	// sample need not grow; the unit test TestBackoffGrowsWithReceivesAndHighIsShorter
	// checks the distribution. Here: never sooner than the floor, never later
	// than the ceiling (the queue's own timeout would be 180 s).
	const slack = 2 * time.Second
	var gaps []time.Duration
	for i := 1; i < len(hits); i++ {
		gap := hits[i].Sub(hits[i-1])
		gaps = append(gaps, gap)
		ceiling := min(backoffCap, backoffBase<<(i-1))
		if gap < time.Second || gap > ceiling+slack {
			t.Errorf("gap %d = %v, want within [1s, %v + latency]", i, gap, ceiling)
		}
	}
	t.Logf("receive gaps %v", gaps)
}

// TestGoneSubscriptionIsDeleted: a 410 removes that subscription while the
// user's other subscription still receives the push.
func TestGoneSubscriptionIsDeleted(t *testing.T) {
	st := stacktest.Stack(t)
	user := stacktest.UniqueID("gone")
	expired, live := pushSubscription(t, user), pushSubscription(t, user)
	if resp := stacktest.Do(t, http.MethodDelete, "/_dev/push-subscriptions/"+expired.SinkID, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("expire: %d", resp.StatusCode)
	}
	id := stacktest.Notify(t, reservation(user, []string{"push"}, nil))
	wantOutcome(t, waitStatus(t, id, domain.ChannelPush, domain.StatusSent), domain.StatusSent, domain.ReasonNone, 1)
	if n := len(pushesTo(t, live.SinkID)); n != 1 {
		t.Errorf("live subscription got %d pushes", n)
	}
	if st.Push.ReceivedCount(expired.SinkID) != 0 {
		t.Error("the expired subscription received a push")
	}
	p, err := stacktest.Store(t).GetRecipientProfile(context.Background(), user)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range p.PushSubscriptions {
		ids = append(ids, s.ID)
	}
	if !slices.Equal(ids, []string{live.ID}) {
		t.Fatalf("subscriptions %v, want only %s", ids, live.ID)
	}
}

// TestRecheckDropsCancelledAndExpired: the worker re-reads the notification
// before sending. The delivery is still queued when the notification changes
// (a cancel that lost the race with the work message, or an expiry while it
// waited), so only the recheck stands between it and a send.
func TestRecheckDropsCancelledAndExpired(t *testing.T) {
	st := stacktest.Stack(t)
	tests := []struct {
		name   string
		change func(t *testing.T, id string)
		reason domain.Reason
	}{
		{"cancelled", func(t *testing.T, id string) {
			n, err := stacktest.Store(t).GetNotification(context.Background(), id)
			if err == nil {
				_, err = stacktest.Store(t).CancelNotification(context.Background(), id, n.Caller)
			}
			if err != nil {
				t.Fatal(err)
			}
		}, domain.ReasonCancelled},
		{"expired", func(t *testing.T, id string) {
			updateNotification(t, id, map[string]string{"expiresAt": st.Clock.Now().Add(-time.Second).UTC().Format("2006-01-02T15:04:05.000000000Z")})
		}, domain.ReasonExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			user := stacktest.UniqueID("re")
			addr := user + "@example.com"
			id := queued(t, user, domain.ChannelEmail, map[string]any{"email": addr})
			tt.change(t, id)
			stacktest.SendWork(t, "EmailNormalQueue", workMessage(id, domain.ChannelEmail))
			d := waitStatus(t, id, domain.ChannelEmail, domain.StatusDropped)
			wantOutcome(t, d, domain.StatusDropped, tt.reason, 0)
			if n := len(emailsTo(t, addr)); n != 0 {
				t.Fatalf("%d emails sent", n)
			}
		})
	}
}

// TestMalformedMessageInBatchOfTen: one bad body in a batch of ten does not
// hold up the other nine, and reaches the DLQ by redrive.
func TestMalformedMessageInBatchOfTen(t *testing.T) {
	prefix := stacktest.UniqueID("batch")
	var ids, bodies []string
	for i := range 9 {
		// One user each: nine emails to one user in a minute would be rate limited.
		user := fmt.Sprintf("%s-%d", prefix, i)
		id := queued(t, user, domain.ChannelEmail, map[string]any{"email": user + "@example.com"})
		ids = append(ids, id)
		bodies = append(bodies, workMessage(id, domain.ChannelEmail))
	}
	bad := `{"notificationId":"` + prefix + `-malformed","channel":"email","extra":true}`
	bodies = slices.Insert(bodies, 4, bad)
	stacktest.SendWork(t, "EmailLowQueue", bodies...)
	for _, id := range ids {
		wantOutcome(t, waitStatus(t, id, domain.ChannelEmail, domain.StatusSent), domain.StatusSent, domain.ReasonNone, 1)
	}
	stacktest.Eventually(t, settle, "the malformed message in the DLQ", func() bool { return dlqContains(t, "EmailDLQ", prefix+"-malformed") })
	stacktest.Eventually(t, settle, "the queue to drain", func() bool { return queueIdle(t, "EmailLowQueue") })
}

// TestDuplicateMessageSendsOnce: the same work message twice (SQS
// at-least-once, or a relay retry) is one send.
func TestDuplicateMessageSendsOnce(t *testing.T) {
	user := stacktest.UniqueID("dup")
	addr := user + "@example.com"
	id := queued(t, user, domain.ChannelEmail, map[string]any{"email": addr})
	msg := workMessage(id, domain.ChannelEmail)
	stacktest.SendWork(t, "EmailNormalQueue", msg, msg)
	stacktest.SendWork(t, "EmailNormalQueue", msg)
	wantOutcome(t, waitStatus(t, id, domain.ChannelEmail, domain.StatusSent), domain.StatusSent, domain.ReasonNone, 1)
	stacktest.Eventually(t, settle, "the duplicates consumed", func() bool { return queueIdle(t, "EmailNormalQueue") })
	if n := len(emailsTo(t, addr)); n != 1 {
		t.Fatalf("%d emails, want 1", n)
	}
}

// TestOptedOutNumberIsDropped: SNS would accept the publish and drop it
// silently, so the worker asks first and records why.
func TestOptedOutNumberIsDropped(t *testing.T) {
	st := stacktest.Stack(t)
	user, phone := stacktest.UniqueID("stop"), uniquePhone()
	st.SMS.OptOut(phone)
	id := stacktest.Notify(t, otp(user, phone))
	d := waitStatus(t, id, domain.ChannelSMS, domain.StatusDropped)
	wantOutcome(t, d, domain.StatusDropped, domain.ReasonOptedOut, 1)
	for _, m := range append(st.SMS.Messages(), st.SMS.Suppressed()...) {
		if m.To == phone {
			t.Fatalf("published to an opted-out number: %+v", m)
		}
	}
}

// TestEmailFeedback: SES events (through SNS) refine sent; a hard bounce
// suppresses the address, so later email to it is dropped.
func TestEmailFeedback(t *testing.T) {
	user := stacktest.UniqueID("fb")
	addr := user + "@example.com"
	if resp := stacktest.Do(t, http.MethodPut, "/v1/users/"+user, map[string]any{"email": addr}); resp.StatusCode/100 != 2 {
		t.Fatalf("PUT user = %d %s", resp.StatusCode, resp.Body)
	}
	first := stacktest.Notify(t, reservation(user, []string{"email"}, nil))
	waitStatus(t, first, domain.ChannelEmail, domain.StatusSent)

	if resp := sesEvent(t, "Delivery", first, addr, `,"delivery":{"recipients":["`+addr+`"]}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("Delivery event = %d %s", resp.StatusCode, resp.Body)
	}
	wantOutcome(t, delivery(t, first, domain.ChannelEmail), domain.StatusDelivered, domain.ReasonNone, 1)
	bounce := `,"bounce":{"bounceType":"Permanent","bounceSubType":"General","bouncedRecipients":[{"emailAddress":"` + addr + `"}]}`
	if resp := sesEvent(t, "Bounce", first, addr, bounce); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("Bounce event = %d %s", resp.StatusCode, resp.Body)
	}
	wantOutcome(t, delivery(t, first, domain.ChannelEmail), domain.StatusBounced, domain.ReasonNone, 1)
	if p, _ := stacktest.Store(t).GetRecipientProfile(context.Background(), user); p.User == nil || p.User.SuppressedEmail != addr || p.User.Email != addr {
		t.Fatalf("profile after a hard bounce: %+v", p.User)
	}
	// A duplicate event changes nothing and succeeds.
	if resp := sesEvent(t, "Bounce", first, addr, bounce); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("duplicate Bounce = %d", resp.StatusCode)
	}

	// Writing the profile again with the same address keeps the suppression.
	if resp := stacktest.Do(t, http.MethodPut, "/v1/users/"+user, map[string]any{"email": addr}); resp.StatusCode/100 != 2 {
		t.Fatalf("PUT user = %d %s", resp.StatusCode, resp.Body)
	}
	second := stacktest.Notify(t, reservation(user, []string{"email"}, nil))
	wantOutcome(t, waitStatus(t, second, domain.ChannelEmail, domain.StatusDropped), domain.StatusDropped, domain.ReasonSuppressed, 0)
	if n := len(emailsTo(t, addr)); n != 1 {
		t.Fatalf("%d emails to a suppressed address, want only the first", n)
	}
	// A new address lifts it.
	newAddr := user + "-new@example.com"
	if resp := stacktest.Do(t, http.MethodPut, "/v1/users/"+user, map[string]any{"email": newAddr}); resp.StatusCode/100 != 2 {
		t.Fatalf("PUT user = %d %s", resp.StatusCode, resp.Body)
	}
	fourth := stacktest.Notify(t, reservation(user, []string{"email"}, nil))
	wantOutcome(t, waitStatus(t, fourth, domain.ChannelEmail, domain.StatusSent), domain.StatusSent, domain.ReasonNone, 1)
	if n := len(emailsTo(t, newAddr)); n != 1 {
		t.Fatalf("%d emails to the new address, want 1", n)
	}

	// A complaint on another user's mail: complained and suppressed.
	other := stacktest.UniqueID("fc")
	otherAddr := other + "@example.com"
	third := stacktest.Notify(t, reservation(other, []string{"email"}, map[string]any{"email": otherAddr}))
	waitStatus(t, third, domain.ChannelEmail, domain.StatusSent)
	if resp := sesEvent(t, "Complaint", third, otherAddr, `,"complaint":{"complainedRecipients":[{"emailAddress":"`+otherAddr+`"}],"complaintFeedbackType":"abuse"}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("Complaint event = %d %s", resp.StatusCode, resp.Body)
	}
	wantOutcome(t, delivery(t, third, domain.ChannelEmail), domain.StatusComplained, domain.ReasonNone, 1)
	if p, _ := stacktest.Store(t).GetRecipientProfile(context.Background(), other); p.User == nil || p.User.SuppressedEmail != otherAddr {
		t.Fatalf("profile after a complaint: %+v", p.User)
	}
}

// TestFeedbackBeforeSentIsRetried: an SES event that overtakes the worker's
// write fails the invocation (Lambda retries it) and changes nothing.
func TestFeedbackBeforeSentIsRetried(t *testing.T) {
	user := stacktest.UniqueID("early")
	id := queued(t, user, domain.ChannelEmail, map[string]any{"email": user + "@example.com"})
	if resp := sesEvent(t, "Delivery", id, user+"@example.com", ""); resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("event before sent = %d %s, want 500 (retry)", resp.StatusCode, resp.Body)
	}
	wantOutcome(t, delivery(t, id, domain.ChannelEmail), domain.StatusQueued, domain.ReasonNone, 0)
}
