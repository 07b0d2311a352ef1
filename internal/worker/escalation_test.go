package worker

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/policy"
)

func TestEscalationReason(t *testing.T) {
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	push := catalog.Escalation{UnlessActiveWithin: 2 * time.Minute}
	email := catalog.Escalation{After: 30 * time.Minute, UnlessRead: true}
	tests := []struct {
		name     string
		rule     catalog.Escalation
		lastSeen time.Time
		present  time.Time // a live connection's lease
		read     time.Time
		archived time.Time
		want     domain.Reason
	}{
		{"no rule", catalog.Escalation{}, now, now.Add(time.Minute), now, now, domain.ReasonNone},
		{"seen a moment ago", push, now.Add(-10 * time.Second), time.Time{}, time.Time{}, time.Time{}, domain.ReasonActiveInApp},
		{"seen just inside the window", push, now.Add(-2*time.Minute + time.Millisecond), time.Time{}, time.Time{}, time.Time{}, domain.ReasonActiveInApp},
		{"seen exactly at the window's edge", push, now.Add(-2 * time.Minute), time.Time{}, time.Time{}, time.Time{}, domain.ReasonNone},
		{"seen 5 minutes ago", push, now.Add(-5 * time.Minute), time.Time{}, time.Time{}, time.Time{}, domain.ReasonNone},
		{"last ping 9 minutes ago, its lease running", push, now.Add(-9 * time.Minute), now.Add(time.Minute), time.Time{}, time.Time{}, domain.ReasonActiveInApp},
		{"a lease at its term", push, now.Add(-10 * time.Minute), now, time.Time{}, time.Time{}, domain.ReasonNone},
		{"never seen", push, time.Time{}, time.Time{}, time.Time{}, time.Time{}, domain.ReasonNone},
		{"unlessActiveWithin ignores read state", push, time.Time{}, time.Time{}, now, time.Time{}, domain.ReasonNone},
		{"read", email, time.Time{}, time.Time{}, now.Add(-time.Minute), time.Time{}, domain.ReasonReadInApp},
		{"archived unread", email, time.Time{}, time.Time{}, time.Time{}, now.Add(-time.Minute), domain.ReasonReadInApp},
		{"unread", email, now, now.Add(time.Minute), time.Time{}, time.Time{}, domain.ReasonNone},
		{"both rules: read wins", catalog.Escalation{UnlessActiveWithin: time.Minute, UnlessRead: true}, now, time.Time{}, now, time.Time{}, domain.ReasonReadInApp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := &domain.Notification{ReadAt: tt.read, ArchivedAt: tt.archived}
			p := &domain.RecipientProfile{LastSeenAt: tt.lastSeen, PresentUntil: tt.present}
			if got := escalationReason(tt.rule, n, p, now); got != tt.want {
				t.Errorf("reason %q, want %q", got, tt.want)
			}
		})
	}
}

// TestEscalationOutcomesAreCounted: skipped: active_in_app and dropped:
// read_in_app reach the Skipped and Dropped metrics by reason.
func TestEscalationOutcomesAreCounted(t *testing.T) {
	for _, tt := range []struct {
		channel domain.Channel
		setup   func(h *harness, n *domain.Notification)
		want    string
	}{
		{domain.ChannelPush, func(h *harness, n *domain.Notification) { h.store.profiles[user].LastSeenAt = fixedAt }, "Skipped/push/normal/active_in_app"},
		{domain.ChannelEmail, func(h *harness, n *domain.Notification) { n.ReadAt = fixedAt }, "Dropped/email/normal/read_in_app"},
	} {
		t.Run(tt.want, func(t *testing.T) {
			h := newHarness(t, tt.channel, Config{})
			rec := &recorder{counts: map[string]int{}}
			h.deps.Metrics = rec
			h.handler = New(h.deps)
			n := h.notification("n1", "comment.mentioned", tt.channel, domain.StatusQueued)
			tt.setup(h, n)
			h.handle(t, message("m1", "n1", tt.channel, 1))
			if fmt.Sprint(rec.counts) != fmt.Sprint(map[string]int{tt.want: 1}) {
				t.Errorf("counts %v, want %s: 1", rec.counts, tt.want)
			}
			if h.provider.sends() != 0 {
				t.Errorf("%d sends", h.provider.sends())
			}
		})
	}
}

// TestEscalationIsRecheckedAfterAQuotaDeferralOrARetry: a delivery that the
// send quota deferred, or that a transient provider error put back, is
// rechecked on its next receive: read or seen in between → dropped:
// read_in_app or skipped: active_in_app, no send (and the quota is not even
// asked); nothing in between → sent.
func TestEscalationIsRecheckedAfterAQuotaDeferralOrARetry(t *testing.T) {
	slot := policy.SlotStart(fixedAt)
	transient := &channel.ProviderError{Transient: true, Code: "throttled", Err: errors.New("slow down")}
	for _, tc := range []struct {
		name       string
		channel    domain.Channel
		firstBy    string // "quota": the slot is used up; "provider": a transient error
		between    func(h *harness, n *domain.Notification, at time.Time)
		wantStatus domain.Status
		wantReason domain.Reason
		wantSends  int
	}{
		{"quota-deferred email, read meanwhile", domain.ChannelEmail, "quota",
			func(h *harness, n *domain.Notification, at time.Time) { n.ReadAt = at }, domain.StatusDropped, domain.ReasonReadInApp, 0},
		{"quota-deferred email, archived meanwhile", domain.ChannelEmail, "quota",
			func(h *harness, n *domain.Notification, at time.Time) { n.ArchivedAt = at }, domain.StatusDropped, domain.ReasonReadInApp, 0},
		{"quota-deferred push, user seen meanwhile", domain.ChannelPush, "quota",
			func(h *harness, n *domain.Notification, at time.Time) { h.store.profiles[user].LastSeenAt = at }, domain.StatusSkipped, domain.ReasonActiveInApp, 0},
		{"quota-deferred email, still unread", domain.ChannelEmail, "quota",
			func(*harness, *domain.Notification, time.Time) {}, domain.StatusSent, domain.ReasonNone, 1},
		{"retrying email, read meanwhile", domain.ChannelEmail, "provider",
			func(h *harness, n *domain.Notification, at time.Time) { n.ReadAt = at }, domain.StatusDropped, domain.ReasonReadInApp, 0},
		{"retrying push, user seen meanwhile", domain.ChannelPush, "provider",
			func(h *harness, n *domain.Notification, at time.Time) { h.store.profiles[user].LastSeenAt = at }, domain.StatusSkipped, domain.ReasonActiveInApp, 0},
		{"retrying push, user away", domain.ChannelPush, "provider",
			func(*harness, *domain.Notification, time.Time) {}, domain.StatusSent, domain.ReasonNone, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.channel, Config{BackoffBase: 20 * time.Second, BackoffCap: 15 * time.Minute, MaxReceiveCount: 6,
				SendQuota: policy.SendQuota{Rate: 30, BulkShare: 60}}) // the whole quota (normal's): 5 a slot
			clock := &testClock{t: fixedAt}
			q := &fakeQuota{counts: map[string]int{}}
			if tc.firstBy == "quota" {
				q.counts[quotaKey(tc.channel, 0, slot)] = 5
			} else {
				h.provider.errs = []error{transient}
			}
			h.deps.Quota, h.deps.Requeuer, h.deps.Now = q, &fakeRequeuer{}, clock.Now
			h.handler = New(h.deps)
			h.handler.sleep = func(_ context.Context, d time.Duration) error { clock.Advance(d); return nil }
			n := h.notification("n1", "comment.mentioned", tc.channel, domain.StatusQueued)

			if failed := h.handle(t, message("m1", "n1", tc.channel, 1)); len(failed) != 1 {
				t.Fatalf("first receive: failed %v, want the message retried", failed)
			}
			if d := h.store.delivery("n1", tc.channel); d.Status.Terminal() {
				t.Fatalf("first receive ended %s: %s", d.Status, d.Reason)
			}
			clock.Advance(time.Minute) // the retry comes later, in a fresh slot
			tc.between(h, n, clock.Now().Add(-10*time.Second))
			asked := q.calls
			h.handle(t, message("m1", "n1", tc.channel, 2))

			d := h.store.delivery("n1", tc.channel)
			if d.Status != tc.wantStatus || d.Reason != tc.wantReason {
				t.Errorf("second receive: %s: %s, want %s: %s", d.Status, d.Reason, tc.wantStatus, tc.wantReason)
			}
			if got := h.provider.sends(); got != tc.wantSends { // a failed call is not a send
				t.Errorf("%d sends, want %d", got, tc.wantSends)
			}
			if tc.wantSends == 0 && q.calls != asked {
				t.Errorf("the quota was asked %d times for a delivery the recheck ends", q.calls-asked)
			}
		})
	}
}
