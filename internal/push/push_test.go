package push

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/devstack/pushsink"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/webpush"
)

type deletedSubs struct {
	mu  sync.Mutex
	ids []string
	err error // answered by the next delete instead of deleting
}

func (d *deletedSubs) DeletePushSubscription(_ context.Context, userID, id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if userID != "u1" {
		return errors.New("wrong user")
	}
	if err := d.err; err != nil {
		d.err = nil
		return err
	}
	d.ids = append(d.ids, id)
	return nil
}

// env is a provider with the real sender talking to the local push service.
type env struct {
	sink     *pushsink.Sink
	provider *Provider
	deleted  *deletedSubs
	now      time.Time
}

func newEnv(t *testing.T) *env {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	sink, err := pushsink.New(srv.URL, clock)
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/", sink)
	keys, err := webpush.GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	hosts, err := webpush.ParseHostList(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	sender, err := webpush.NewSender(webpush.SenderConfig{Keys: keys, Contact: "mailto:ops@example.com", Now: clock, AllowInsecureLoopback: true, Hosts: hosts})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{sink: sink, deleted: &deletedSubs{}, now: now}
	e.provider = New(sender, e.deleted, clock)
	return e
}

// subscribe makes n sink subscriptions and returns them as the user's.
func (e *env) subscribe(t *testing.T, n int) []domain.PushSubscription {
	t.Helper()
	var out []domain.PushSubscription
	for range n {
		id, sub, err := e.sink.NewSubscription("")
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, domain.PushSubscription{ID: id, Endpoint: sub.Endpoint, P256dh: sub.P256dh, Auth: sub.Auth})
	}
	return out
}

func message(subs []domain.PushSubscription, pr domain.Priority, expiresAt time.Time) *channel.Message {
	ty, _ := catalog.MustLoad().Lookup("reservation.approved")
	return &channel.Message{
		Notification: &domain.Notification{ID: "n-42", Type: ty.Name, Priority: pr, ExpiresAt: expiresAt, Recipient: domain.Recipient{UserID: "u1"}},
		Type:         ty,
		Profile:      &domain.RecipientProfile{PushSubscriptions: subs},
		Content:      catalog.Content{Title: "Reservation confirmed", Body: "Approved.", URL: "https://example.com/r/1"},
	}
}

func TestPushIsDecryptedWithHeadersAndVAPID(t *testing.T) {
	tests := []struct {
		pr      domain.Priority
		expires time.Duration // from now; 0 = none
		ttl     int
		urgency string
	}{
		{domain.PriorityHigh, 0, 3600, "high"},
		{domain.PriorityNormal, 0, 86400, "normal"},
		{domain.PriorityLow, 0, 259200, "low"},
		{domain.PriorityNormal, 10 * time.Minute, 600, "normal"},
	}
	for _, tt := range tests {
		t.Run(string(tt.pr), func(t *testing.T) {
			e := newEnv(t)
			subs := e.subscribe(t, 1)
			var exp time.Time
			if tt.expires > 0 {
				exp = e.now.Add(tt.expires)
			}
			id, err := e.provider.Send(context.Background(), message(subs, tt.pr, exp))
			if err != nil || id == "" {
				t.Fatalf("Send = %q, %v", id, err)
			}
			got := e.sink.MessagesFor(subs[0].ID)
			if len(got) != 1 {
				t.Fatalf("%d messages", len(got))
			}
			m := got[0]
			var p struct{ ID, Title, Body, URL string }
			if err := json.Unmarshal(m.Body, &p); err != nil {
				t.Fatal(err)
			}
			if p.ID != "n-42" || p.Title != "Reservation confirmed" || p.Body != "Approved." || p.URL != "https://example.com/r/1" {
				t.Errorf("payload %s", m.Body)
			}
			if m.TTL != tt.ttl || m.Urgency != tt.urgency || m.Topic != webpush.TopicFor("n-42") || m.VAPIDSub != "mailto:ops@example.com" {
				t.Errorf("ttl=%d urgency=%s topic=%s sub=%s", m.TTL, m.Urgency, m.Topic, m.VAPIDSub)
			}
		})
	}
}

func TestGoneSubscriptionIsDeletedOthersStillReceive(t *testing.T) {
	for _, status := range []int{http.StatusGone, http.StatusNotFound} {
		e := newEnv(t)
		subs := e.subscribe(t, 2)
		if status == http.StatusGone {
			if err := e.sink.Expire(subs[0].ID); err != nil {
				t.Fatal(err)
			}
		} else {
			subs[0].Endpoint += "-unknown" // the sink answers 404
		}
		if _, err := e.provider.Send(context.Background(), message(subs, domain.PriorityNormal, time.Time{})); err != nil {
			t.Fatalf("%d: Send = %v", status, err)
		}
		if !slices.Equal(e.deleted.ids, []string{subs[0].ID}) {
			t.Errorf("%d: deleted %v, want [%s]", status, e.deleted.ids, subs[0].ID)
		}
		if n := len(e.sink.MessagesFor(subs[1].ID)); n != 1 {
			t.Errorf("%d: other subscription got %d messages", status, n)
		}
	}
}

// A stored endpoint that is not (or no longer) on a push service of the
// allow-list is never contacted, and is deleted like a gone subscription.
func TestEndpointOffTheAllowListIsDeletedNeverContacted(t *testing.T) {
	for _, endpoint := range []string{
		"https://169.254.169.254/latest/meta-data/",
		"https://2852039166/",
		"https://push.example.net/x",
	} {
		e := newEnv(t)
		subs := e.subscribe(t, 2)
		subs[0].Endpoint = endpoint
		if _, err := e.provider.Send(context.Background(), message(subs, domain.PriorityNormal, time.Time{})); err != nil {
			t.Fatalf("%s: Send = %v", endpoint, err)
		}
		if !slices.Equal(e.deleted.ids, []string{subs[0].ID}) {
			t.Errorf("%s: deleted %v, want [%s]", endpoint, e.deleted.ids, subs[0].ID)
		}

		e = newEnv(t)
		subs = e.subscribe(t, 1)
		subs[0].Endpoint = endpoint
		_, err := e.provider.Send(context.Background(), message(subs, domain.PriorityNormal, time.Time{}))
		var pe *channel.ProviderError
		if !errors.As(err, &pe) || pe.Transient || !pe.Drop || pe.Reason != domain.ReasonNoContact {
			t.Fatalf("%s: err = %v, want dropped: no_contact", endpoint, err)
		}
		if !slices.Equal(e.deleted.ids, []string{subs[0].ID}) {
			t.Errorf("%s: deleted %v, want [%s]", endpoint, e.deleted.ids, subs[0].ID)
		}
	}
}

// A gone subscription whose removal fails retries the delivery, but the
// targets reached meanwhile are still reported: the retry pushes only the
// gone one again (to remove it), never a target that already has the push.
func TestFailedCleanupStillReportsTheTargetsReached(t *testing.T) {
	e := newEnv(t)
	subs := e.subscribe(t, 3)
	if err := e.sink.Expire(subs[1].ID); err != nil {
		t.Fatal(err)
	}
	e.deleted.err = errors.New("ProvisionedThroughputExceededException")
	m := message(subs, domain.PriorityNormal, time.Time{})
	_, err := e.provider.Send(context.Background(), m)
	var pe *channel.ProviderError
	if !errors.As(err, &pe) || !pe.Transient || pe.Code != "delete_subscription" {
		t.Fatalf("Send = %v, want transient delete_subscription", err)
	}
	if !sameTargets(m.Accepted, []string{subs[0].ID, subs[2].ID}) {
		t.Fatalf("accepted %v, want the two live subscriptions", m.Accepted)
	}
	retry := message(subs, domain.PriorityNormal, time.Time{})
	retry.SentTargets = m.Accepted
	if _, err := e.provider.Send(context.Background(), retry); err != nil {
		t.Fatalf("retry = %v, want sent (the gone subscription removed, the others reached before)", err)
	}
	for _, s := range []domain.PushSubscription{subs[0], subs[2]} {
		if n := len(e.sink.MessagesFor(s.ID)); n != 1 {
			t.Errorf("subscription %s got %d pushes, want 1", s.ID, n)
		}
	}
	if !slices.Equal(e.deleted.ids, []string{subs[1].ID}) {
		t.Errorf("deleted %v, want the gone subscription", e.deleted.ids)
	}
}

// The same for a device whose disabled endpoint cannot be deleted.
func TestFailedDeviceCleanupStillReportsTheTargetsReached(t *testing.T) {
	for _, failing := range []string{"endpoint", "device"} {
		e, mob, del := mobileEnv(t)
		subs := e.subscribe(t, 1)
		mob.fail["arn:e/apns"] = &MobileError{Kind: MobileGone, Code: "EndpointDisabled", Err: errors.New("disabled")}
		if failing == "endpoint" {
			mob.deleteErr = errors.New("Throttled")
		} else {
			del.err = errors.New("ProvisionedThroughputExceededException")
		}
		m := withDevices(message(subs, domain.PriorityHigh, time.Time{}), devices...)
		_, err := e.provider.Send(context.Background(), m)
		var pe *channel.ProviderError
		if !errors.As(err, &pe) || !pe.Transient || pe.Code != "delete_"+failing {
			t.Fatalf("%s: Send = %v, want transient delete_%s", failing, err, failing)
		}
		if want := []string{subs[0].ID, "dS", "dF"}; !sameTargets(m.Accepted, want) {
			t.Errorf("%s: accepted %v, want %v", failing, m.Accepted, want)
		}
	}
}

func sameTargets(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func TestAllSubscriptionsGoneIsDropped(t *testing.T) {
	e := newEnv(t)
	subs := e.subscribe(t, 1)
	_ = e.sink.Expire(subs[0].ID)
	_, err := e.provider.Send(context.Background(), message(subs, domain.PriorityNormal, time.Time{}))
	var pe *channel.ProviderError
	if !errors.As(err, &pe) || !pe.Drop || pe.Reason != domain.ReasonNoContact {
		t.Fatalf("err = %v, want dropped: no_contact", err)
	}
}

func TestStatusClassification(t *testing.T) {
	tests := []struct {
		status     int
		retryAfter time.Duration
		transient  bool
		code       string
	}{
		{http.StatusTooManyRequests, 30 * time.Second, true, "http_429"},
		{http.StatusServiceUnavailable, 0, true, "http_503"},
		{http.StatusInternalServerError, 0, true, "http_500"},
		{http.StatusRequestEntityTooLarge, 0, false, "http_413"},
		{http.StatusBadRequest, 0, false, "http_400"},
	}
	for _, tt := range tests {
		e := newEnv(t)
		subs := e.subscribe(t, 1)
		e.sink.FailNext(1, tt.status, tt.retryAfter)
		_, err := e.provider.Send(context.Background(), message(subs, domain.PriorityNormal, time.Time{}))
		var pe *channel.ProviderError
		if !errors.As(err, &pe) || pe.Transient != tt.transient || pe.Code != tt.code || pe.RetryAfter != tt.retryAfter {
			t.Errorf("%d: err = %+v, want transient=%v code=%s retryAfter=%v", tt.status, pe, tt.transient, tt.code, tt.retryAfter)
			continue
		}
		if !tt.transient && (pe.Reason != domain.ReasonRejected || pe.Drop) {
			t.Errorf("%d: permanent outcome %+v", tt.status, pe)
		}
		if len(e.deleted.ids) != 0 {
			t.Errorf("%d: deleted %v", tt.status, e.deleted.ids)
		}
	}
}

// 401 and 403 refuse the stack's VAPID credentials (a key pair changed or
// lost): every push of the account fails, by no subscription's fault. They
// are transient with an operator alert — the delivery waits for the keys
// to be restored (retried, then parked in the DLQ) instead of failing.
func TestRefusedCredentialsAreTransientAndAlert(t *testing.T) {
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		e := newEnv(t)
		subs := e.subscribe(t, 1)
		e.sink.FailNext(1, status, 0)
		_, err := e.provider.Send(context.Background(), message(subs, domain.PriorityNormal, time.Time{}))
		var pe *channel.ProviderError
		if !errors.As(err, &pe) || !pe.Transient || !pe.Alert || pe.Code != fmt.Sprintf("http_%d", status) {
			t.Errorf("%d: err = %+v, want transient with an alert", status, pe)
		}
		if len(e.deleted.ids) != 0 {
			t.Errorf("%d: deleted %v, want the subscription kept", status, e.deleted.ids)
		}
	}
}

// One subscription accepted and one failed transiently: the send is retried
// (transient), the accepted one reported, and the retry pushes only to the
// other — never twice to a target that already has it.
func TestPartialSuccessRetriesOnlyTheRest(t *testing.T) {
	e := newEnv(t)
	subs := e.subscribe(t, 2)
	e.sink.FailNext(1, http.StatusServiceUnavailable, 0)
	m := message(subs, domain.PriorityNormal, time.Time{})
	_, err := e.provider.Send(context.Background(), m)
	var pe *channel.ProviderError
	if !errors.As(err, &pe) || !pe.Transient {
		t.Fatalf("Send = %v, want transient (one subscription failed)", err)
	}
	if len(m.Accepted) != 1 {
		t.Fatalf("accepted %v, want one target", m.Accepted)
	}
	before := len(e.sink.Messages())
	retry := message(subs, domain.PriorityNormal, time.Time{})
	retry.SentTargets = m.Accepted
	if _, err := e.provider.Send(context.Background(), retry); err != nil {
		t.Fatalf("retry = %v", err)
	}
	if got := len(e.sink.Messages()) - before; got != 1 {
		t.Errorf("retry pushed %d messages, want 1 (only the failed subscription)", got)
	}
	if len(retry.Accepted) != 1 || retry.Accepted[0] == m.Accepted[0] {
		t.Errorf("retry accepted %v after %v", retry.Accepted, m.Accepted)
	}
	// Nothing left to send: reached earlier, so success without a push.
	again := message(subs, domain.PriorityNormal, time.Time{})
	again.SentTargets = append(m.Accepted, retry.Accepted...)
	if _, err := e.provider.Send(context.Background(), again); err != nil || len(e.sink.Messages())-before != 1 {
		t.Errorf("third send = %v, %d messages", err, len(e.sink.Messages())-before)
	}
}

// A push never fails for its size: it is shortened to fit
// webpush.MaxPlaintextSize, the link given up before the text.
func TestOversizedContentIsFittedNotDropped(t *testing.T) {
	for _, tc := range []struct {
		name    string
		body    string
		url     string
		wantURL bool
	}{
		{name: "long body", body: strings.Repeat("x", webpush.MaxPlaintextSize), url: "https://example.com/r/1", wantURL: true},
		{name: "long body and link", body: strings.Repeat("x", 3980), url: "https://example.com/" + strings.Repeat("u", 3950)},
		{name: "two 2,000-character links", body: "2 new comments\nhttps://example.com/" + strings.Repeat("a", 1980) + "\nhttps://example.com/" + strings.Repeat("b", 1980), url: "https://example.com/" + strings.Repeat("a", 1980), wantURL: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			subs := e.subscribe(t, 1)
			m := message(subs, domain.PriorityNormal, time.Time{})
			m.Content.Body, m.Content.URL = tc.body, tc.url
			if _, err := e.provider.Send(context.Background(), m); err != nil {
				t.Fatalf("Send = %v, want delivered", err)
			}
			got := e.sink.MessagesFor(subs[0].ID)
			if len(got) != 1 {
				t.Fatalf("%d messages", len(got))
			}
			var p catalog.PushPayload
			if err := json.Unmarshal(got[0].Body, &p); err != nil {
				t.Fatal(err)
			}
			if len(got[0].Body) > webpush.MaxPlaintextSize || p.ID != "n-42" || p.Title != "Reservation confirmed" ||
				!strings.HasSuffix(p.Body, catalog.Ellipsis) || (p.URL == tc.url) != tc.wantURL {
				t.Fatalf("%d bytes: %+v", len(got[0].Body), p)
			}
		})
	}
}

// Fits is the budget a digest is rendered to (fewer items before shortening).
func TestFitsIsTheWebPushLimit(t *testing.T) {
	e := newEnv(t)
	if !e.provider.Fits(catalog.Content{Title: "t", Body: strings.Repeat("x", 3800)}) {
		t.Error("3,800 bytes of body should fit")
	}
	if e.provider.Fits(catalog.Content{Title: "t", Body: strings.Repeat("x", webpush.MaxPlaintextSize)}) {
		t.Error("MaxPlaintextSize of body alone cannot fit with the rest of the payload")
	}
}

// Every push the catalog can produce — each type with a push template (a
// campaign's notifications and comment.mentioned included: they render and
// send like any other) and each digestible type's digest of ten items, in
// every locale, from the largest data intake accepts — is delivered within
// webpush.MaxPlaintextSize with its id and a title.
func TestEveryCatalogPushFitsFromWorstCaseData(t *testing.T) {
	cat := catalog.MustLoad()
	checked := 0
	for _, name := range cat.Names() {
		typ, _ := cat.Lookup(name)
		if !typ.HasChannel(domain.ChannelPush) {
			continue
		}
		worst := typ.WorstCaseData()
		if err := typ.ValidateData(worst); err != nil {
			t.Fatalf("%s: worst-case data is not valid data: %v", name, err)
		}
		for _, locale := range typ.Locales() {
			contents := map[string]catalog.Content{}
			c, err := typ.Render(catalog.KindPush, locale, worst)
			if err != nil {
				t.Fatalf("%s %s: %v", name, locale, err)
			}
			contents["single"] = c
			e := newEnv(t)
			if typ.Digestible {
				items := make([]map[string]any, catalog.MaxDigestItems)
				for i := range items {
					items[i] = worst
				}
				d, err := typ.RenderDigestWithin(catalog.KindPush, locale, catalog.DigestData{Count: 25, Items: items}, e.provider.Fits)
				if err != nil {
					t.Fatalf("%s %s digest: %v", name, locale, err)
				}
				contents["digest"] = d
			}
			for kind, c := range contents {
				subs := e.subscribe(t, 1)
				m := message(subs, domain.PriorityNormal, time.Time{})
				m.Notification.ID, m.Notification.Type, m.Type, m.Content = domain.CampaignNotificationID("c"+strings.Repeat("0", 26), "u1"), name, typ, c
				if _, err := e.provider.Send(context.Background(), m); err != nil {
					t.Fatalf("%s %s %s: Send = %v, want delivered", name, locale, kind, err)
				}
				got := e.sink.MessagesFor(subs[0].ID)
				if len(got) != 1 {
					t.Fatalf("%s %s %s: %d messages", name, locale, kind, len(got))
				}
				var p catalog.PushPayload
				if err := json.Unmarshal(got[0].Body, &p); err != nil {
					t.Fatal(err)
				}
				if len(got[0].Body) > webpush.MaxPlaintextSize || p.ID != m.Notification.ID || p.Title == "" {
					t.Fatalf("%s %s %s: %d bytes, %+v", name, locale, kind, len(got[0].Body), p)
				}
				checked++
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d pushes: is the catalog loaded?", checked)
	}
	t.Logf("%d pushes checked", checked)
}
