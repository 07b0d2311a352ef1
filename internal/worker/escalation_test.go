package worker

import (
	"fmt"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
)

func TestEscalationReason(t *testing.T) {
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	push := catalog.Escalation{UnlessActiveWithin: 2 * time.Minute}
	email := catalog.Escalation{After: 30 * time.Minute, UnlessRead: true}
	tests := []struct {
		name     string
		rule     catalog.Escalation
		lastSeen time.Time
		read     time.Time
		archived time.Time
		want     domain.Reason
	}{
		{"no rule", catalog.Escalation{}, now, now, now, domain.ReasonNone},
		{"seen a moment ago", push, now.Add(-10 * time.Second), time.Time{}, time.Time{}, domain.ReasonActiveInApp},
		{"seen just inside the window", push, now.Add(-2*time.Minute + time.Millisecond), time.Time{}, time.Time{}, domain.ReasonActiveInApp},
		{"seen exactly at the window's edge", push, now.Add(-2 * time.Minute), time.Time{}, time.Time{}, domain.ReasonNone},
		{"seen 5 minutes ago", push, now.Add(-5 * time.Minute), time.Time{}, time.Time{}, domain.ReasonNone},
		{"never seen", push, time.Time{}, time.Time{}, time.Time{}, domain.ReasonNone},
		{"unlessActiveWithin ignores read state", push, time.Time{}, now, time.Time{}, domain.ReasonNone},
		{"read", email, time.Time{}, now.Add(-time.Minute), time.Time{}, domain.ReasonReadInApp},
		{"archived unread", email, time.Time{}, time.Time{}, now.Add(-time.Minute), domain.ReasonReadInApp},
		{"unread", email, now, time.Time{}, time.Time{}, domain.ReasonNone},
		{"both rules: read wins", catalog.Escalation{UnlessActiveWithin: time.Minute, UnlessRead: true}, now, now, time.Time{}, domain.ReasonReadInApp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := &domain.Notification{ReadAt: tt.read, ArchivedAt: tt.archived}
			p := &domain.RecipientProfile{LastSeenAt: tt.lastSeen}
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
