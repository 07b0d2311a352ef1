package intake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

// loseFirstAnswer delivers the first request to Herald and then reports a
// network error instead of its answer, as when a connection drops after the
// server committed: the client's retry must not create a second notification.
type loseFirstAnswer struct {
	sent atomic.Int32
}

func (l *loseFirstAnswer) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if l.sent.Add(1) == 1 && err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil, errors.New("connection reset after the request was sent")
	}
	return resp, err
}

func TestClientRetryAfterALostAnswerCreatesOneNotification(t *testing.T) {
	user := stacktest.UniqueID("sdk-retry")
	lossy := &loseFirstAnswer{}
	c := stacktest.Client(t, "sdk", client.WithHTTPClient(&http.Client{Transport: lossy}),
		client.WithRetryPolicy(client.RetryPolicy{MaxAttempts: 3, Base: 10 * time.Millisecond, Max: 50 * time.Millisecond}))
	a, err := c.Send(context.Background(), client.Notification{Type: "otp.code", Recipient: client.Recipient{UserID: user}, Data: map[string]string{"code": "424242"}})
	if err != nil {
		t.Fatal(err)
	}
	if lossy.sent.Load() != 2 || !a.Replayed || a.IdempotencyKey == "" {
		t.Fatalf("sent %d times, accepted %+v: want the retry to replay the first answer under the generated key", lossy.sent.Load(), a)
	}
	if n := inboxCount(t, user); n != 1 {
		t.Fatalf("%d notifications for %s after a retried send, want 1", n, user)
	}
}

func TestClientServiceRoutes(t *testing.T) {
	ctx := context.Background()
	st := stacktest.Stack(t)
	c := stacktest.Client(t, "sdk")
	user := stacktest.UniqueID("sdk")

	// Users and preferences.
	digest := 15
	u, err := c.PutUser(ctx, user, client.User{Email: user + "@example.com", Phone: "+15551234567", Timezone: "Asia/Tokyo", DigestMinutes: &digest})
	if err != nil || u.Email != user+"@example.com" || u.UpdatedAt == nil {
		t.Fatalf("PutUser = %+v, %v", u, err)
	}
	if got, err := c.GetUser(ctx, user); err != nil || got.Timezone != "Asia/Tokyo" || *got.DigestMinutes != 15 {
		t.Fatalf("GetUser = %+v, %v", got, err)
	}
	if _, err := c.GetUser(ctx, user+"-missing"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("GetUser(missing) error = %v, want ErrNotFound", err)
	}
	prefs, err := c.UpdatePreferences(ctx, user, map[string]map[string]*bool{"comment.created": {"push": client.Disable}})
	if err != nil || prefs.Preferences["comment.created"]["push"] != (client.PreferenceCell{Enabled: false, Source: "user"}) {
		t.Fatalf("UpdatePreferences = %+v, %v", prefs, err)
	}
	if prefs, err = c.GetPreferences(ctx, user); err != nil || prefs.Preferences["invoice.payment_failed"]["email"].Source != "default" {
		t.Fatalf("GetPreferences = %+v, %v", prefs, err)
	}

	// Push subscriptions (a browser-like one from the local push service).
	_, browser, err := st.Push.NewSubscription("")
	if err != nil {
		t.Fatal(err)
	}
	var sub client.PushSubscription
	sub.Endpoint, sub.Keys.P256dh, sub.Keys.Auth = browser.Endpoint, browser.P256dh, browser.Auth
	ref, err := c.CreatePushSubscription(ctx, user, sub)
	if err != nil || !ref.Created {
		t.Fatalf("CreatePushSubscription = %+v, %v", ref, err)
	}
	if again, err := c.CreatePushSubscription(ctx, user, sub); err != nil || again.Created || again.ID != ref.ID {
		t.Fatalf("registering again = %+v, %v; want the same id, not created", again, err)
	}
	if err := c.DeletePushSubscription(ctx, user, ref.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.DeletePushSubscription(ctx, user, ref.ID); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("deleting twice: %v, want ErrNotFound", err)
	}

	// Notifications: send, replay, a reused key, a bad payload, status, cancel.
	n := client.Notification{Type: "comment.created", Recipient: client.Recipient{UserID: user},
		Data: map[string]string{"actorLabel": "Ann", "url": "https://example.com/c/1"}, IdempotencyKey: user + "-k1"}
	first, err := c.Send(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	replay, err := c.Send(ctx, n)
	if err != nil || !replay.Replayed || replay.ID != first.ID {
		t.Fatalf("replay = %+v, %v; first %+v", replay, err, first)
	}
	n.Data["actorLabel"] = "Bob"
	var herr *client.Error
	if _, err := c.Send(ctx, n); !errors.As(err, &herr) || herr.Status != 422 || herr.Code != "idempotency_key_reused" {
		t.Fatalf("reused key: %v", err)
	}
	if _, err := c.Send(ctx, client.Notification{Type: "otp.code", Recipient: client.Recipient{UserID: user}}); !errors.As(err, &herr) ||
		herr.Code != "missing_variable" || herr.Pointer != "/data/code" {
		t.Fatalf("missing variable: %v", err)
	}
	later := time.Now().Add(48 * time.Hour).UTC()
	deferred, err := c.Send(ctx, client.Notification{Type: "otp.code", Recipient: client.Recipient{UserID: user}, Data: map[string]string{"code": "1"}, SendAt: &later})
	if err != nil {
		t.Fatal(err)
	}
	var status *client.NotificationStatus
	stacktest.Eventually(t, 20*time.Second, "deliveries planned", func() bool {
		status, err = c.GetNotification(ctx, deferred.ID)
		return err == nil && len(status.Deliveries) > 0
	})
	cancelled, err := c.CancelNotification(ctx, deferred.ID)
	if err != nil || cancelled.Status != "cancelled" || cancelled.CancelledAt == nil {
		t.Fatalf("cancel = %+v, %v", cancelled, err)
	}
	for ch, d := range cancelled.Deliveries {
		if d.Status != "dropped" || d.Reason != "cancelled" {
			t.Errorf("%s after cancel = %+v", ch, d)
		}
	}
	if _, err := stacktest.Client(t, "someone-else").GetNotification(ctx, deferred.ID); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("another caller read the notification: %v", err)
	}

	// Batch: one good, one bad item.
	results, err := c.SendBatch(ctx, []client.Notification{
		{Type: "otp.code", Recipient: client.Recipient{UserID: user}, Data: map[string]string{"code": "2"}},
		{Type: "no.such.type", Recipient: client.Recipient{UserID: user}},
	})
	if err != nil || len(results) != 2 {
		t.Fatalf("SendBatch = %+v, %v", results, err)
	}
	if results[0].Err() != nil || results[0].ID == "" || results[0].IdempotencyKey == "" {
		t.Errorf("item 0 = %+v", results[0])
	}
	if err := results[1].Err(); !errors.As(err, &herr) || herr.Code != "unknown_type" || herr.Pointer == "" {
		t.Errorf("item 1 error = %v", err)
	}

	// Announcements.
	a, err := c.CreateAnnouncement(ctx, client.Announcement{Title: "SDK " + user, Body: "Hello", ExpiresAt: time.Now().Add(time.Hour)})
	if err != nil || a.ID == "" || a.Status != "active" {
		t.Fatalf("CreateAnnouncement = %+v, %v", a, err)
	}
	page, err := c.ListAnnouncements(ctx, client.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, it := range page.Items {
		found = found || it.ID == a.ID
	}
	if !found {
		t.Errorf("announcement %s not listed in %+v", a.ID, page)
	}
}

// TestClientCampaignCalls drives the campaign routes through the client on
// the local stack: a create retried with its key replays, chunks upload (a
// repeated chunk is safe, other ids conflict), the start fans out to every
// recipient, and the typed errors carry the API's codes.
func TestClientCampaignCalls(t *testing.T) {
	ctx := context.Background()
	caller := stacktest.UniqueID("sdk-campaigns")
	c := stacktest.Client(t, caller)
	prefix := stacktest.UniqueID("sdk-cu")
	var recipients []string
	for i := range 5 {
		u := fmt.Sprintf("%s-%d", prefix, i)
		if _, err := c.PutUser(ctx, u, client.User{Email: u + "@example.com"}); err != nil {
			t.Fatal(err)
		}
		recipients = append(recipients, u)
	}
	spec := client.Campaign{Type: "reservation.approved", Channels: []string{"email"},
		Data: map[string]string{"reservationUrl": "https://example.com/r/" + prefix}, IdempotencyKey: prefix}
	created, err := c.CreateCampaign(ctx, spec)
	if err != nil || created.Status != "draft" || created.Replayed {
		t.Fatalf("CreateCampaign = %+v, %v", created, err)
	}
	again, err := c.CreateCampaign(ctx, spec)
	if err != nil || !again.Replayed || again.ID != created.ID {
		t.Fatalf("CreateCampaign with the same key = %+v, %v; want a replay of %s", again, err, created.ID)
	}
	if n, err := c.AddRecipients(ctx, created.ID, 0, recipients[:3]); err != nil || n != 3 {
		t.Fatalf("AddRecipients chunk 0 = %d, %v", n, err)
	}
	if n, err := c.AddRecipients(ctx, created.ID, 0, recipients[:3]); err != nil || n != 3 {
		t.Fatalf("AddRecipients chunk 0 again = %d, %v", n, err)
	}
	var herr *client.Error
	if _, err := c.AddRecipients(ctx, created.ID, 0, recipients[3:]); !errors.As(err, &herr) || herr.Code != "chunk_conflict" || herr.Status != http.StatusConflict {
		t.Fatalf("AddRecipients chunk 0 with other ids: %v, want chunk_conflict", err)
	}
	if _, err := c.AddRecipients(ctx, created.ID, 1, recipients[3:]); err != nil {
		t.Fatal(err)
	}
	if st, err := c.GetCampaign(ctx, created.ID); err != nil || st.Status != "draft" || st.Recipients != len(recipients) {
		t.Fatalf("GetCampaign before start = %+v, %v", st, err)
	}
	started, err := c.StartCampaign(ctx, created.ID)
	if err != nil || started.Status != "running" {
		t.Fatalf("StartCampaign = %+v, %v", started, err)
	}
	if _, err := c.StartCampaign(ctx, created.ID); !errors.As(err, &herr) || herr.Code != "campaign_not_draft" {
		t.Errorf("StartCampaign again: %v, want campaign_not_draft", err)
	}
	if _, err := stacktest.Client(t, caller+"-other").GetCampaign(ctx, created.ID); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("another caller read the campaign: %v", err)
	}
	var last *client.CampaignStatus
	stacktest.Eventually(t, 90*time.Second, "the campaign to notify every recipient", func() bool {
		last, err = c.GetCampaign(ctx, created.ID)
		return err == nil && last.Notified+last.Skipped+last.Failed+last.Dropped >= len(recipients)
	})
	if last.Notified != len(recipients) {
		t.Errorf("campaign counts = %+v, want %d notified (every recipient has an email)", *last, len(recipients))
	}

	// A second draft, cancelled: repeating the cancel is safe.
	draft, err := c.CreateCampaign(ctx, client.Campaign{Type: "reservation.approved",
		Data: map[string]string{"reservationUrl": "https://example.com/r/x"}, Audience: &client.Audience{UserIDs: recipients[:1]}})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if st, err := c.CancelCampaign(ctx, draft.ID); err != nil || st.Status != "cancelled" {
			t.Fatalf("CancelCampaign = %+v, %v", st, err)
		}
	}
}
