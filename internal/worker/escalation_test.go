package worker

import (
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
