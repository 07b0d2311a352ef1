package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/metrics"
)

var (
	cat     = catalog.MustLoad()
	fixedAt = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
)

const user = "u1"

// harness is one worker over fakes.
type harness struct {
	store    *fakeStore
	vis      *fakeVisibility
	provider *fakeProvider
	handler  *Handler
	deps     Deps
	logs     *bytes.Buffer
}

func newHarness(t testing.TB, ch domain.Channel, cfg Config) *harness {
	t.Helper()
	if cfg.BackoffBase == 0 {
		cfg = Config{BackoffBase: 20 * time.Second, BackoffCap: 15 * time.Minute, MaxReceiveCount: 6}
	}
	h := &harness{store: newFakeStore(), vis: &fakeVisibility{}, provider: &fakeProvider{channel: ch}, logs: &bytes.Buffer{}}
	log := slog.New(slog.NewJSONHandler(h.logs, nil))
	h.deps = Deps{Config: cfg, Store: h.store, Visibility: h.vis, Provider: h.provider, Catalog: cat, Now: func() time.Time { return fixedAt }, Log: log}
	h.handler = New(h.deps)
	h.store.profiles[user] = &domain.RecipientProfile{
		User:              &domain.User{ID: user, Email: "u1@example.com", Phone: "+15550001111"},
		Preferences:       domain.Preferences{},
		PushSubscriptions: []domain.PushSubscription{{ID: "s1", Endpoint: "https://push.example/1", P256dh: "k", Auth: "a"}},
	}
	return h
}

// notification stores a notification of typ with one delivery on ch in status.
func (h *harness) notification(id, typ string, ch domain.Channel, status domain.Status) *domain.Notification {
	data := map[string]any{"invoiceUrl": "https://example.com/i/1", "url": "https://example.com/s", "code": "123456", "reservationUrl": "https://example.com/r", "actorLabel": "Ann"}
	t, _ := cat.Lookup(typ)
	n := &domain.Notification{ID: id, Type: typ, Recipient: domain.Recipient{UserID: user}, Data: data, Priority: t.Priority, Status: domain.NotificationAccepted, CreatedAt: fixedAt}
	h.store.put(n, domain.Delivery{Channel: ch, Priority: t.Priority, Status: status})
	return n
}

func message(id, notificationID string, ch domain.Channel, receives int) events.SQSMessage {
	return events.SQSMessage{
		MessageId: id, ReceiptHandle: "rh-" + id, EventSourceARN: "arn:aws:sqs:us-east-1:000000000000:q",
		Body:       fmt.Sprintf(`{"notificationId":%q,"channel":%q}`, notificationID, ch),
		Attributes: map[string]string{"ApproximateReceiveCount": strconv.Itoa(receives)},
	}
}

func (h *harness) handle(t testing.TB, msgs ...events.SQSMessage) []string {
	t.Helper()
	resp, err := h.handler.Handle(context.Background(), events.SQSEvent{Records: msgs})
	if err != nil {
		t.Fatalf("Handle returned an error (fails the whole batch): %v", err)
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	return failed
}

func TestHandleOutcomes(t *testing.T) {
	transient := &channel.ProviderError{Transient: true, Code: "Throttling", Err: errors.New("slow down")}
	tests := []struct {
		name      string
		typ       string
		channel   domain.Channel
		status    domain.Status
		receives  int
		setup     func(h *harness, n *domain.Notification)
		errs      []error
		body      string // replaces the work message body
		wantFail  bool
		wantSends int
		want      domain.Status
		reason    domain.Reason
		attempts  int
		lastError string
		// visibility: -1 none expected; otherwise the exact timeout, or a
		// range [visMin, visMax].
		visMin, visMax time.Duration
	}{
		{name: "sent", typ: "invoice.payment_failed", channel: domain.ChannelEmail, status: domain.StatusQueued,
			wantSends: 1, want: domain.StatusSent, attempts: 1, visMin: -1},
		{name: "claim accepts planned (message before queued)", typ: "invoice.payment_failed", channel: domain.ChannelEmail, status: domain.StatusPlanned,
			wantSends: 1, want: domain.StatusSent, attempts: 1, visMin: -1},
		{name: "retrying is claimed again", typ: "invoice.payment_failed", channel: domain.ChannelEmail, status: domain.StatusRetrying,
			wantSends: 1, want: domain.StatusSent, attempts: 1, visMin: -1},
		{name: "already sent: duplicate message", typ: "invoice.payment_failed", channel: domain.ChannelEmail, status: domain.StatusSent,
			want: domain.StatusSent, visMin: -1},
		{name: "cancelled", typ: "invoice.payment_failed", channel: domain.ChannelEmail, status: domain.StatusQueued,
			setup: func(h *harness, n *domain.Notification) { n.Status = domain.NotificationCancelled },
			want:  domain.StatusDropped, reason: domain.ReasonCancelled, visMin: -1},
		{name: "expired", typ: "invoice.payment_failed", channel: domain.ChannelEmail, status: domain.StatusQueued,
			setup: func(h *harness, n *domain.Notification) { n.ExpiresAt = fixedAt },
			want:  domain.StatusDropped, reason: domain.ReasonExpired, visMin: -1},
		{name: "preference turned off since intake", typ: "invoice.payment_failed", channel: domain.ChannelEmail, status: domain.StatusQueued,
			setup: func(h *harness, n *domain.Notification) {
				h.store.profiles[user].Preferences["invoice.payment_failed"] = map[domain.Channel]bool{domain.ChannelEmail: false}
			},
			want: domain.StatusDropped, reason: domain.ReasonPreference, visMin: -1},
		{name: "mandatory type ignores the preference", typ: "security.login_alert", channel: domain.ChannelEmail, status: domain.StatusQueued,
			setup: func(h *harness, n *domain.Notification) {
				h.store.profiles[user].Preferences["security.login_alert"] = map[domain.Channel]bool{domain.ChannelEmail: false}
			},
			wantSends: 1, want: domain.StatusSent, attempts: 1, visMin: -1},
		{name: "suppressed address", typ: "invoice.payment_failed", channel: domain.ChannelEmail, status: domain.StatusQueued,
			setup: func(h *harness, n *domain.Notification) {
				h.store.profiles[user].User.SuppressedEmail = "U1@example.com"
			},
			want: domain.StatusDropped, reason: domain.ReasonSuppressed, visMin: -1},
		{name: "suppression of an old address does not apply", typ: "invoice.payment_failed", channel: domain.ChannelEmail, status: domain.StatusQueued,
			setup: func(h *harness, n *domain.Notification) {
				h.store.profiles[user].User.SuppressedEmail = "old@example.com"
			},
			wantSends: 1, want: domain.StatusSent, attempts: 1, visMin: -1},
		{name: "escalation: push skipped, the user was in the app a moment ago", typ: "comment.mentioned", channel: domain.ChannelPush, status: domain.StatusQueued,
			setup: func(h *harness, n *domain.Notification) {
				h.store.profiles[user].LastSeenAt = fixedAt.Add(-30 * time.Second)
			},
			want: domain.StatusSkipped, reason: domain.ReasonActiveInApp, visMin: -1},
		{name: "escalation: push sent, last seen 5 minutes ago", typ: "comment.mentioned", channel: domain.ChannelPush, status: domain.StatusQueued,
			setup: func(h *harness, n *domain.Notification) {
				h.store.profiles[user].LastSeenAt = fixedAt.Add(-5 * time.Minute)
			},
			wantSends: 1, want: domain.StatusSent, attempts: 1, visMin: -1},
		{name: "escalation: email dropped, read in the inbox", typ: "comment.mentioned", channel: domain.ChannelEmail, status: domain.StatusQueued,
			setup: func(h *harness, n *domain.Notification) { n.ReadAt = fixedAt.Add(-time.Minute) },
			want:  domain.StatusDropped, reason: domain.ReasonReadInApp, visMin: -1},
		{name: "escalation: email dropped, archived in the inbox", typ: "comment.mentioned", channel: domain.ChannelEmail, status: domain.StatusRetrying,
			setup: func(h *harness, n *domain.Notification) { n.ArchivedAt = fixedAt.Add(-time.Minute) },
			want:  domain.StatusDropped, reason: domain.ReasonReadInApp, visMin: -1},
		{name: "escalation: email sent, unread (presence does not matter)", typ: "comment.mentioned", channel: domain.ChannelEmail, status: domain.StatusQueued,
			setup:     func(h *harness, n *domain.Notification) { h.store.profiles[user].LastSeenAt = fixedAt },
			wantSends: 1, want: domain.StatusSent, attempts: 1, visMin: -1},
		{name: "escalation: cancelled wins over read", typ: "comment.mentioned", channel: domain.ChannelEmail, status: domain.StatusQueued,
			setup: func(h *harness, n *domain.Notification) { n.Status, n.ReadAt = domain.NotificationCancelled, fixedAt },
			want:  domain.StatusDropped, reason: domain.ReasonCancelled, visMin: -1},
		{name: "phone removed", typ: "otp.code", channel: domain.ChannelSMS, status: domain.StatusQueued,
			setup: func(h *harness, n *domain.Notification) { h.store.profiles[user].User.Phone = "" },
			want:  domain.StatusDropped, reason: domain.ReasonNoContact, visMin: -1},
		{name: "subscriptions gone", typ: "invoice.payment_failed", channel: domain.ChannelPush, status: domain.StatusQueued,
			setup: func(h *harness, n *domain.Notification) { h.store.profiles[user].PushSubscriptions = nil },
			want:  domain.StatusDropped, reason: domain.ReasonNoContact, visMin: -1},
		{name: "claim held by a live sender", typ: "invoice.payment_failed", channel: domain.ChannelEmail, status: domain.StatusSending,
			setup: func(h *harness, n *domain.Notification) {
				h.store.edit(n.ID, domain.ChannelEmail, func(d *domain.Delivery) { d.LeaseUntil = fixedAt.Add(time.Minute) })
			},
			want: domain.StatusSending, visMin: -1},
		{name: "recheck does not overwrite a live sender", typ: "invoice.payment_failed", channel: domain.ChannelEmail, status: domain.StatusSending,
			setup: func(h *harness, n *domain.Notification) {
				h.store.edit(n.ID, domain.ChannelEmail, func(d *domain.Delivery) { d.LeaseUntil = fixedAt.Add(time.Minute) })
				n.Status = domain.NotificationCancelled
			},
			want: domain.StatusSending, visMin: -1},
		{name: "expired lease is reclaimed", typ: "invoice.payment_failed", channel: domain.ChannelEmail, status: domain.StatusSending,
			setup: func(h *harness, n *domain.Notification) {
				h.store.edit(n.ID, domain.ChannelEmail, func(d *domain.Delivery) { d.LeaseUntil, d.Attempts = fixedAt.Add(-time.Second), 1 })
			},
			wantSends: 1, want: domain.StatusSent, attempts: 2, visMin: -1},
		{name: "transient: retrying with backoff", typ: "invoice.payment_failed", channel: domain.ChannelEmail, status: domain.StatusQueued, receives: 3,
			errs: []error{transient}, wantFail: true, want: domain.StatusRetrying, attempts: 1, lastError: "Throttling",
			// high priority: base 20s/4 = 5s, n=3 → ceiling 20s.
			visMin: time.Second, visMax: 20 * time.Second},
		{name: "transient honours a longer Retry-After", typ: "reservation.approved", channel: domain.ChannelPush, status: domain.StatusQueued, receives: 1,
			errs:     []error{&channel.ProviderError{Transient: true, RetryAfter: 7 * time.Minute, Code: "http_429"}},
			wantFail: true, want: domain.StatusRetrying, attempts: 1, lastError: "http_429", visMin: 7 * time.Minute, visMax: 7 * time.Minute},
		{name: "unclassified errors are transient", typ: "invoice.payment_failed", channel: domain.ChannelEmail, status: domain.StatusQueued, receives: 1,
			errs: []error{errors.New("connection reset")}, wantFail: true, want: domain.StatusRetrying, attempts: 1, lastError: "unclassified",
			visMin: time.Second, visMax: 5 * time.Second},
		{name: "transient on the last receive: exhausted, visible at once for redrive", typ: "invoice.payment_failed", channel: domain.ChannelEmail,
			status: domain.StatusRetrying, receives: 6, errs: []error{transient},
			wantFail: true, want: domain.StatusFailed, reason: domain.ReasonExhausted, attempts: 1, lastError: "Throttling", visMin: 0, visMax: 0},
		{name: "permanent: failed and deleted", typ: "invoice.payment_failed", channel: domain.ChannelEmail, status: domain.StatusQueued,
			errs: []error{&channel.ProviderError{Code: "MessageRejected"}},
			want: domain.StatusFailed, reason: domain.ReasonRejected, attempts: 1, lastError: "MessageRejected", visMin: -1},
		{name: "permanent drop: opted out", typ: "otp.code", channel: domain.ChannelSMS, status: domain.StatusQueued,
			errs: []error{&channel.ProviderError{Drop: true, Reason: domain.ReasonOptedOut, Code: "opted_out"}},
			want: domain.StatusDropped, reason: domain.ReasonOptedOut, attempts: 1, lastError: "opted_out", visMin: -1},
		{name: "malformed body", typ: "invoice.payment_failed", channel: domain.ChannelEmail, status: domain.StatusQueued,
			body: `{"notificationId":`, wantFail: true, want: domain.StatusQueued, visMin: 0, visMax: 0},
		{name: "unknown field", typ: "invoice.payment_failed", channel: domain.ChannelEmail, status: domain.StatusQueued,
			body: `{"notificationId":"n1","channel":"email","x":1}`, wantFail: true, want: domain.StatusQueued, visMin: 0, visMax: 0},
		{name: "work message for another channel", typ: "invoice.payment_failed", channel: domain.ChannelEmail, status: domain.StatusQueued,
			body: `{"notificationId":"n1","channel":"sms"}`, wantFail: true, want: domain.StatusQueued, visMin: 0, visMax: 0},
		// The claim creates a channel's delivery, so a message naming a
		// channel the notification does not plan is malformed (DLQ).
		{name: "channel not planned: malformed", typ: "invoice.payment_failed", channel: domain.ChannelPush, status: domain.StatusQueued,
			setup: func(h *harness, n *domain.Notification) { n.Channels = []domain.Channel{domain.ChannelPush} },
			body:  `{"notificationId":"n1","channel":"email"}`, wantFail: true, want: domain.StatusQueued, visMin: 0, visMax: 0},
		// The worker no longer reads the delivery: a recheck's drop lands on
		// the conditional write, whose refusal says what the delivery is.
		{name: "cancelled after sent: duplicate, the outcome stays", typ: "invoice.payment_failed", channel: domain.ChannelEmail, status: domain.StatusSent,
			setup: func(h *harness, n *domain.Notification) { n.Status = domain.NotificationCancelled },
			want:  domain.StatusSent, visMin: -1},
		{name: "cancelled and channel not planned: malformed", typ: "invoice.payment_failed", channel: domain.ChannelPush, status: domain.StatusQueued,
			setup: func(h *harness, n *domain.Notification) {
				n.Status, n.Channels = domain.NotificationCancelled, []domain.Channel{domain.ChannelPush}
			},
			body: `{"notificationId":"n1","channel":"email"}`, wantFail: true, want: domain.StatusQueued, visMin: 0, visMax: 0},
		{name: "unknown type: failed not_applicable", typ: "invoice.payment_failed", channel: domain.ChannelEmail, status: domain.StatusQueued,
			setup: func(h *harness, n *domain.Notification) { n.Type = "no.such.type" },
			want:  domain.StatusFailed, reason: domain.ReasonNotApplicable, lastError: "unknown type", visMin: -1},
		{name: "notification gone (TTL)", typ: "invoice.payment_failed", channel: domain.ChannelEmail, status: domain.StatusQueued,
			body: `{"notificationId":"gone","channel":"email"}`, want: domain.StatusQueued, visMin: -1},
		{name: "table unavailable: retried after the backoff", typ: "invoice.payment_failed", channel: domain.ChannelEmail, status: domain.StatusQueued, receives: 1,
			setup: func(h *harness, n *domain.Notification) {
				h.store.loadErr = errors.New("ProvisionedThroughputExceeded")
			},
			wantFail: true, want: domain.StatusQueued, visMin: time.Second, visMax: 20 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := tt.channel
			if tt.body != "" {
				ch = domain.ChannelEmail
			}
			h := newHarness(t, ch, Config{})
			n := h.notification("n1", tt.typ, tt.channel, tt.status)
			if tt.setup != nil {
				tt.setup(h, n)
			}
			h.provider.errs = tt.errs
			receives := max(tt.receives, 1)
			msg := message("m1", "n1", tt.channel, receives)
			if tt.body != "" {
				msg.Body = tt.body
			}
			failed := h.handle(t, msg)
			if gotFail := len(failed) == 1 && failed[0] == "m1"; gotFail != tt.wantFail || len(failed) > 1 {
				t.Errorf("batch item failures %v, want failed=%v", failed, tt.wantFail)
			}
			if got := h.provider.sends(); got != tt.wantSends {
				t.Errorf("provider sends = %d, want %d", got, tt.wantSends)
			}
			d := h.store.delivery("n1", tt.channel)
			if d.Status != tt.want || d.Reason != tt.reason {
				t.Errorf("delivery = %s/%q, want %s/%q", d.Status, d.Reason, tt.want, tt.reason)
			}
			if tt.attempts != 0 && d.Attempts != tt.attempts {
				t.Errorf("attempts = %d, want %d", d.Attempts, tt.attempts)
			}
			if d.LastError != tt.lastError {
				t.Errorf("lastError = %q, want %q", d.LastError, tt.lastError)
			}
			vis := h.vis.all()
			switch {
			case tt.visMin < 0 && len(vis) != 0:
				t.Errorf("visibility changed %v, want untouched", vis)
			case tt.visMin >= 0 && len(vis) != 1:
				t.Errorf("visibility calls %v, want one", vis)
			case tt.visMin >= 0 && (vis[0].timeout < tt.visMin || vis[0].timeout > tt.visMax || vis[0].receipt != "rh-m1"):
				t.Errorf("visibility %v, want within [%v, %v] for rh-m1", vis[0], tt.visMin, tt.visMax)
			}
			if tt.wantSends > 0 && d.Status == domain.StatusSent && d.ProviderMessageID == "" {
				t.Error("sent without the provider's message id")
			}
		})
	}
}

func TestHandleBatchWithOneMalformedMessage(t *testing.T) {
	h := newHarness(t, domain.ChannelEmail, Config{})
	var msgs []events.SQSMessage
	for i := range 9 {
		id := fmt.Sprintf("n%d", i)
		h.notification(id, "reservation.approved", domain.ChannelEmail, domain.StatusQueued)
		msgs = append(msgs, message("m"+id, id, domain.ChannelEmail, 1))
	}
	bad := message("bad", "x", domain.ChannelEmail, 1)
	bad.Body = "not json"
	msgs = append(msgs[:4], append([]events.SQSMessage{bad}, msgs[4:]...)...)

	failed := h.handle(t, msgs...)
	if len(failed) != 1 || failed[0] != "bad" {
		t.Fatalf("failures %v, want only the malformed message", failed)
	}
	if got := h.provider.sends(); got != 9 {
		t.Fatalf("sends = %d, want 9", got)
	}
	for i := range 9 {
		if d := h.store.delivery(fmt.Sprintf("n%d", i), domain.ChannelEmail); d.Status != domain.StatusSent {
			t.Errorf("n%d: %s", i, d.Status)
		}
	}
}

func TestDuplicateMessagesSendOnce(t *testing.T) {
	h := newHarness(t, domain.ChannelEmail, Config{})
	h.notification("n1", "reservation.approved", domain.ChannelEmail, domain.StatusQueued)
	failed := h.handle(t, message("a", "n1", domain.ChannelEmail, 1), message("b", "n1", domain.ChannelEmail, 1))
	if len(failed) != 0 {
		t.Fatalf("failures %v", failed)
	}
	if h.provider.sends() != 1 {
		t.Fatalf("sends = %d, want 1", h.provider.sends())
	}
}

// TestConcurrentDuplicateLosesClaim: a copy arriving while another worker
// sends (its claim is live) sends nothing and is deleted; the holder records sent.
func TestConcurrentDuplicateLosesClaim(t *testing.T) {
	h := newHarness(t, domain.ChannelEmail, Config{})
	h.notification("n1", "reservation.approved", domain.ChannelEmail, domain.StatusQueued)
	var dupFailed []string
	h.provider.during = func() {
		h.provider.during = nil
		dupFailed = h.handle(t, message("dup", "n1", domain.ChannelEmail, 1))
	}
	if failed := h.handle(t, message("orig", "n1", domain.ChannelEmail, 1)); len(failed) != 0 || len(dupFailed) != 0 {
		t.Fatalf("failures %v / %v", failed, dupFailed)
	}
	if h.provider.sends() != 1 {
		t.Fatalf("sends = %d, want 1", h.provider.sends())
	}
	if d := h.store.delivery("n1", domain.ChannelEmail); d.Status != domain.StatusSent || d.Attempts != 1 {
		t.Fatalf("delivery %+v", d)
	}
}

func TestBackoffGrowsWithReceivesAndHighIsShorter(t *testing.T) {
	cfg := Config{BackoffBase: 8 * time.Second, BackoffCap: time.Minute, MaxReceiveCount: 10}
	transient := &channel.ProviderError{Transient: true, Code: "Throttling"}
	ceiling := func(base time.Duration, n int) time.Duration {
		return max(min(cfg.BackoffCap, base<<(n-1)), time.Second)
	}
	for _, tc := range []struct {
		typ  string
		base time.Duration
	}{{"reservation.approved", 8 * time.Second}, {"invoice.payment_failed", 2 * time.Second}} {
		for n := 1; n <= 5; n++ {
			// Many samples: full jitter spreads them over [1s, ceiling].
			var top time.Duration
			for range 40 {
				h := newHarness(t, domain.ChannelEmail, cfg)
				h.notification("n1", tc.typ, domain.ChannelEmail, domain.StatusQueued)
				h.provider.errs = []error{transient}
				h.handle(t, message("m", "n1", domain.ChannelEmail, n))
				got := h.vis.all()[0].timeout
				if got < time.Second || got > ceiling(tc.base, n) {
					t.Fatalf("%s n=%d: delay %v outside [1s, %v]", tc.typ, n, got, ceiling(tc.base, n))
				}
				top = max(top, got)
			}
			if want := ceiling(tc.base, n) / 2; top < want {
				t.Errorf("%s n=%d: largest of 40 delays %v, want ≥ %v (jitter over the whole range)", tc.typ, n, top, want)
			}
		}
	}
}

func TestLeaseEndsAtTheInvocationDeadline(t *testing.T) {
	h := newHarness(t, domain.ChannelEmail, Config{BackoffBase: time.Second, BackoffCap: time.Second, MaxReceiveCount: 3, Lease: time.Hour})
	h.notification("n1", "reservation.approved", domain.ChannelEmail, domain.StatusQueued)
	var lease time.Time
	h.provider.during = func() { lease = h.store.delivery("n1", domain.ChannelEmail).LeaseUntil }
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := h.handler.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{message("m", "n1", domain.ChannelEmail, 1)}}); err != nil {
		t.Fatal(err)
	}
	if d := lease.Sub(fixedAt); d < 29*time.Second || d > 30*time.Second {
		t.Fatalf("lease %v after now, want the 30 s deadline", d)
	}
}

func TestOperatorAlertIsLogged(t *testing.T) {
	h := newHarness(t, domain.ChannelEmail, Config{})
	h.notification("n1", "reservation.approved", domain.ChannelEmail, domain.StatusQueued)
	h.provider.errs = []error{&channel.ProviderError{Transient: true, Code: "AccountSuspendedException", Alert: true, Err: errors.New("suspended")}}
	h.handle(t, message("m", "n1", domain.ChannelEmail, 1))
	logs := h.logs.String()
	if !strings.Contains(logs, `"level":"ERROR","msg":"`+channel.OperatorAlert+`"`) || !strings.Contains(logs, `"code":"AccountSuspendedException"`) {
		t.Fatalf("no operator alert in logs:\n%s", logs)
	}
	if d := h.store.delivery("n1", domain.ChannelEmail); d.Status != domain.StatusRetrying {
		t.Fatalf("status %s, want retrying (the account's condition is not the recipient's)", d.Status)
	}
}

// TestLogsCarryNoContact: addresses never reach the logs.
func TestLogsCarryNoContact(t *testing.T) {
	h := newHarness(t, domain.ChannelEmail, Config{})
	h.notification("n1", "reservation.approved", domain.ChannelEmail, domain.StatusQueued)
	h.provider.errs = []error{&channel.ProviderError{Transient: true, Code: "Throttling", Err: errors.New("x")}}
	h.handle(t, message("m", "n1", domain.ChannelEmail, 1))
	h.handle(t, message("m", "n1", domain.ChannelEmail, 2))
	if strings.Contains(h.logs.String(), "u1@example.com") {
		t.Fatalf("address in logs:\n%s", h.logs)
	}
}

// TestBatchIsProcessedConcurrently: a batch takes about its slowest send, and
// a panic fails only its own message.
func TestBatchIsProcessedConcurrently(t *testing.T) {
	h := newHarness(t, domain.ChannelEmail, Config{})
	var msgs []events.SQSMessage
	for i := range 10 {
		id := fmt.Sprintf("n%d", i)
		h.notification(id, "reservation.approved", domain.ChannelEmail, domain.StatusQueued)
		msgs = append(msgs, message("m"+id, id, domain.ChannelEmail, 1))
	}
	var calls atomic.Int32
	h.provider.during = func() {
		if calls.Add(1) == 3 {
			panic("provider bug")
		}
		time.Sleep(100 * time.Millisecond)
	}
	start := time.Now()
	failed := h.handle(t, msgs...)
	if elapsed := time.Since(start); elapsed > 600*time.Millisecond {
		t.Errorf("10 sends of 100 ms took %v: not concurrent", elapsed)
	}
	if len(failed) != 1 || h.provider.sends() != 9 {
		t.Fatalf("failures %v, sends %d: want exactly the panicking message failed", failed, h.provider.sends())
	}
}

// recorder captures metrics.
type recorder struct {
	mu      sync.Mutex
	counts  map[string]int
	latency []float64
	flushes int
}

func (r *recorder) Add(_ context.Context, name metrics.Name, d metrics.Dims, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts[fmt.Sprintf("%s/%s/%s/%s", name, d.Channel, d.Priority, d.Reason)] += n
}

func (r *recorder) Observe(_ context.Context, name metrics.Name, d metrics.Dims, v float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if name == metrics.DeliveryLatency && d.Channel == domain.ChannelEmail {
		r.latency = append(r.latency, v)
	}
}

func (r *recorder) Flush(context.Context) { r.mu.Lock(); r.flushes++; r.mu.Unlock() }

// TestOutcomeMetrics: every recorded outcome is counted by channel, priority
// and reason, sends also report their latency, once flushed per invocation.
func TestOutcomeMetrics(t *testing.T) {
	h := newHarness(t, domain.ChannelEmail, Config{})
	rec := &recorder{counts: map[string]int{}}
	h.deps.Metrics = rec
	h.handler = New(h.deps)
	for i, st := range []domain.Status{domain.StatusQueued, domain.StatusQueued, domain.StatusQueued, domain.StatusQueued} {
		n := h.notification(fmt.Sprintf("n%d", i), "reservation.approved", domain.ChannelEmail, st)
		n.CreatedAt = fixedAt.Add(-1500 * time.Millisecond)
	}
	h.store.notifications["n3"].Status = domain.NotificationCancelled
	h.provider.errs = []error{nil, &channel.ProviderError{Transient: true, Code: "Throttling"}, &channel.ProviderError{Code: "MessageRejected"}}
	// Sequential batches keep the scripted errors in order.
	for i := range 4 {
		h.handle(t, message(fmt.Sprintf("m%d", i), fmt.Sprintf("n%d", i), domain.ChannelEmail, 1))
	}
	want := map[string]int{
		"Sent/email/normal/": 1, "Retried/email/normal/": 1,
		"Failed/email/normal/rejected": 1, "Dropped/email/normal/cancelled": 1, "Throttled/email/normal/": 1,
	}
	if fmt.Sprint(rec.counts) != fmt.Sprint(want) {
		t.Errorf("counts %v, want %v", rec.counts, want)
	}
	if len(rec.latency) != 1 || rec.latency[0] != 1500 {
		t.Errorf("latency %v, want [1500]", rec.latency)
	}
	if rec.flushes != 4 {
		t.Errorf("%d flushes, want one per invocation", rec.flushes)
	}
}

// A channel sent at once has no delivery until the claim: the claim creates
// it (with the notification's fields delivery events carry), one sender at a
// time; the recheck's outcome creates it in that outcome; a cancelled
// notification gets nothing created (its view derives dropped: cancelled),
// a cancelled campaign's notification gets its dropped item (its lot counts it).
func TestClaimCreatesTheDelivery(t *testing.T) {
	newNotification := func(h *harness, id string) *domain.Notification {
		n := h.notification(id, "invoice.payment_failed", domain.ChannelPush, domain.StatusQueued) // email has no item
		n.Caller, n.ResourceID = "billing", "inv-9"
		return n
	}
	t.Run("sent", func(t *testing.T) {
		h := newHarness(t, domain.ChannelEmail, Config{})
		n := newNotification(h, "n1")
		if failed := h.handle(t, message("m1", "n1", domain.ChannelEmail, 1)); len(failed) != 0 {
			t.Fatalf("failures %v", failed)
		}
		d, ok := h.store.deliveries.Get("n1", domain.ChannelEmail)
		if !ok || d.Status != domain.StatusSent || d.Attempts != 1 || d.UserID != user || d.Priority != n.Priority ||
			d.Caller != "billing" || d.Type != n.Type || d.ResourceID != "inv-9" || h.provider.sends() != 1 {
			t.Fatalf("delivery %+v (found %v), sends %d; want created, sent once with the notification's fields", d, ok, h.provider.sends())
		}
		// A duplicate message finds it sent: nothing more.
		if failed := h.handle(t, message("m2", "n1", domain.ChannelEmail, 1)); len(failed) != 0 || h.provider.sends() != 1 {
			t.Errorf("duplicate: failures %v, sends %d; want none and still 1", failed, h.provider.sends())
		}
	})
	t.Run("recheck outcome", func(t *testing.T) {
		h := newHarness(t, domain.ChannelEmail, Config{})
		n := newNotification(h, "n1")
		n.ExpiresAt = fixedAt.Add(-time.Second)
		if failed := h.handle(t, message("m1", "n1", domain.ChannelEmail, 1)); len(failed) != 0 {
			t.Fatalf("failures %v", failed)
		}
		if d, ok := h.store.deliveries.Get("n1", domain.ChannelEmail); !ok || d.Status != domain.StatusDropped || d.Reason != domain.ReasonExpired || d.Caller != "billing" {
			t.Errorf("delivery %+v (found %v); want created dropped: expired", d, ok)
		}
	})
	t.Run("cancelled notification", func(t *testing.T) {
		h := newHarness(t, domain.ChannelEmail, Config{})
		n := newNotification(h, "n1")
		n.Status = domain.NotificationCancelled
		if failed := h.handle(t, message("m1", "n1", domain.ChannelEmail, 1)); len(failed) != 0 || len(h.vis.all()) != 0 {
			t.Fatalf("failures %v, visibility %v; want the message deleted", failed, h.vis.all())
		}
		if d, ok := h.store.deliveries.Get("n1", domain.ChannelEmail); ok || h.provider.sends() != 0 {
			t.Errorf("delivery %+v created, sends %d; want none (derived dropped: cancelled)", d, h.provider.sends())
		}
	})
	t.Run("cancel between read and claim", func(t *testing.T) {
		// The worker read the notification before the cancel; the cancel
		// writes its dropped: cancelled item for the unclaimed channel
		// (internal/api), so the claim loses and nothing is sent.
		h := newHarness(t, domain.ChannelEmail, Config{})
		n := newNotification(h, "n1")
		h.store.afterLoad = func() {
			h.store.afterLoad = nil
			tomb := domain.DeliveryOf(n, domain.ChannelEmail)
			tomb.Status, tomb.Reason = domain.StatusDropped, domain.ReasonCancelled
			if _, err := h.store.deliveries.CreateDelivery(context.Background(), tomb); err != nil {
				t.Error(err)
			}
		}
		if failed := h.handle(t, message("m1", "n1", domain.ChannelEmail, 1)); len(failed) != 0 {
			t.Fatalf("failures %v", failed)
		}
		if d, _ := h.store.deliveries.Get("n1", domain.ChannelEmail); d.Status != domain.StatusDropped || h.provider.sends() != 0 {
			t.Errorf("delivery %+v, sends %d; want the cancel's dropped: cancelled kept and nothing sent", d, h.provider.sends())
		}
	})
	t.Run("cancelled campaign", func(t *testing.T) {
		h := newHarness(t, domain.ChannelEmail, Config{})
		n := newNotification(h, "n1")
		n.Status, n.CampaignID = domain.NotificationCancelled, "cmp-1"
		if failed := h.handle(t, message("m1", "n1", domain.ChannelEmail, 1)); len(failed) != 0 {
			t.Fatalf("failures %v", failed)
		}
		if d, ok := h.store.deliveries.Get("n1", domain.ChannelEmail); !ok || d.Status != domain.StatusDropped || d.Reason != domain.ReasonCancelled || d.CampaignID != "cmp-1" {
			t.Errorf("delivery %+v (found %v); want created dropped: cancelled for the campaign's count", d, ok)
		}
	})
}
