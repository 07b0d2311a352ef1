package policy

import (
	"slices"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
)

var (
	normalType    = &catalog.Type{Name: "reservation.approved", Priority: domain.PriorityNormal, Channels: []domain.Channel{domain.ChannelEmail, domain.ChannelPush}}
	mandatoryType = &catalog.Type{Name: "security.login_alert", Priority: domain.PriorityHigh, Channels: []domain.Channel{domain.ChannelEmail, domain.ChannelSMS}, Mandatory: true}
	digestType    = &catalog.Type{Name: "comment.created", Priority: domain.PriorityLow, Channels: []domain.Channel{domain.ChannelPush}, Digestible: true}
	mentionType   = &catalog.Type{Name: "comment.mentioned", Priority: domain.PriorityNormal, Channels: []domain.Channel{domain.ChannelPush, domain.ChannelEmail},
		Escalations: map[domain.Channel]catalog.Escalation{
			domain.ChannelPush:  {UnlessActiveWithin: 2 * time.Minute},
			domain.ChannelEmail: {After: 30 * time.Minute, UnlessRead: true}}}
	delayedDigestType = &catalog.Type{Name: "comment.created", Priority: domain.PriorityLow, Channels: []domain.Channel{domain.ChannelPush}, Digestible: true,
		Escalations: map[domain.Channel]catalog.Escalation{domain.ChannelPush: {After: 5 * time.Minute}}}
)

func TestChannels(t *testing.T) {
	tests := []struct {
		name      string
		requested []domain.Channel
		want      []domain.Channel
	}{
		{"none requested: the type's defaults", nil, []domain.Channel{domain.ChannelEmail, domain.ChannelPush}},
		{"intersection with the type", []domain.Channel{domain.ChannelSMS, domain.ChannelPush}, []domain.Channel{domain.ChannelPush}},
		{"duplicates collapse", []domain.Channel{domain.ChannelEmail, domain.ChannelEmail}, []domain.Channel{domain.ChannelEmail}},
		{"nothing in common", []domain.Channel{domain.ChannelSMS}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Channels(&domain.Notification{Channels: tt.requested}, normalType)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Channels = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEnabled(t *testing.T) {
	off := domain.Preferences{
		"reservation.approved": {domain.ChannelEmail: false},
		"security.login_alert": {domain.ChannelEmail: false},
	}
	on := domain.Preferences{"reservation.approved": {domain.ChannelEmail: true}}
	tests := []struct {
		name  string
		typ   *catalog.Type
		prefs domain.Preferences
		c     domain.Channel
		want  bool
	}{
		{"no override: type default (on)", normalType, nil, domain.ChannelEmail, true},
		{"override off", normalType, off, domain.ChannelEmail, false},
		{"override on", normalType, on, domain.ChannelEmail, true},
		{"override on another channel only", normalType, off, domain.ChannelPush, true},
		{"mandatory ignores the override", mandatoryType, off, domain.ChannelEmail, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Enabled(tt.typ, tt.prefs, tt.c); got != tt.want {
				t.Errorf("Enabled = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC) // 12:00 UTC
	user := &domain.User{ID: "u1", Email: "u1@example.com", Phone: "+15551234567"}
	quiet := &domain.User{ID: "u1", Email: "u1@example.com", Timezone: "UTC", QuietHours: &domain.QuietHours{Start: "11:00", End: "13:30"}}
	subs := []domain.PushSubscription{{ID: "s1"}}
	profile := func(u *domain.User, prefs domain.Preferences, subs []domain.PushSubscription) *domain.RecipientProfile {
		return &domain.RecipientProfile{User: u, Preferences: prefs, PushSubscriptions: subs}
	}
	note := func(mod func(*domain.Notification)) *domain.Notification {
		n := &domain.Notification{ID: "n1", Type: "reservation.approved", Recipient: domain.Recipient{UserID: "u1"},
			Priority: domain.PriorityNormal, CreatedAt: now, Status: domain.NotificationAccepted}
		if mod != nil {
			mod(n)
		}
		return n
	}
	type want struct {
		status  domain.Status
		reason  domain.Reason
		due     time.Time
		limited bool
		digest  time.Time
	}
	tests := []struct {
		name    string
		n       *domain.Notification
		typ     *catalog.Type
		profile *domain.RecipientProfile
		want    map[domain.Channel]want
	}{
		{
			name: "both channels go now and count against the limit",
			n:    note(nil), typ: normalType, profile: profile(user, nil, subs),
			want: map[domain.Channel]want{
				domain.ChannelEmail: {status: domain.StatusQueued, limited: true},
				domain.ChannelPush:  {status: domain.StatusQueued, limited: true},
			},
		},
		{
			name: "cancelled",
			n:    note(func(n *domain.Notification) { n.Status = domain.NotificationCancelled }), typ: normalType, profile: profile(user, nil, subs),
			want: map[domain.Channel]want{
				domain.ChannelEmail: {status: domain.StatusDropped, reason: domain.ReasonCancelled},
				domain.ChannelPush:  {status: domain.StatusDropped, reason: domain.ReasonCancelled},
			},
		},
		{
			name: "expiresAt already past",
			n:    note(func(n *domain.Notification) { n.ExpiresAt = now.Add(-time.Second) }), typ: normalType, profile: profile(user, nil, subs),
			want: map[domain.Channel]want{
				domain.ChannelEmail: {status: domain.StatusDropped, reason: domain.ReasonExpired},
				domain.ChannelPush:  {status: domain.StatusDropped, reason: domain.ReasonExpired},
			},
		},
		{
			name: "muted topic: every channel skipped",
			n:    note(func(n *domain.Notification) { n.Topic, n.Muted = "thread:42", true }), typ: normalType, profile: profile(user, nil, subs),
			want: map[domain.Channel]want{
				domain.ChannelEmail: {status: domain.StatusSkipped, reason: domain.ReasonMuted},
				domain.ChannelPush:  {status: domain.StatusSkipped, reason: domain.ReasonMuted},
			},
		},
		{
			name: "muted topic: a mandatory type still goes",
			n: note(func(n *domain.Notification) {
				n.Type, n.Priority, n.Topic, n.Muted = "security.login_alert", domain.PriorityHigh, "thread:42", true
			}),
			typ: mandatoryType, profile: profile(user, nil, subs),
			want: map[domain.Channel]want{
				domain.ChannelEmail: {status: domain.StatusQueued},
				domain.ChannelSMS:   {status: domain.StatusQueued},
			},
		},
		{
			name: "preference off on one channel",
			n:    note(nil), typ: normalType,
			profile: profile(user, domain.Preferences{"reservation.approved": {domain.ChannelEmail: false}}, subs),
			want: map[domain.Channel]want{
				domain.ChannelEmail: {status: domain.StatusSkipped, reason: domain.ReasonPreference},
				domain.ChannelPush:  {status: domain.StatusQueued, limited: true},
			},
		},
		{
			name: "mandatory type: override off ignored, never rate limited",
			n:    note(func(n *domain.Notification) { n.Type, n.Priority = "security.login_alert", domain.PriorityNormal }), typ: mandatoryType,
			profile: profile(user, domain.Preferences{"security.login_alert": {domain.ChannelEmail: false, domain.ChannelSMS: false}}, nil),
			want: map[domain.Channel]want{
				domain.ChannelEmail: {status: domain.StatusQueued},
				domain.ChannelSMS:   {status: domain.StatusQueued},
			},
		},
		{
			name: "no contact: no profile, no override, no subscription",
			n:    note(nil), typ: normalType, profile: profile(nil, nil, nil),
			want: map[domain.Channel]want{
				domain.ChannelEmail: {status: domain.StatusSkipped, reason: domain.ReasonNoContact},
				domain.ChannelPush:  {status: domain.StatusSkipped, reason: domain.ReasonNoContact},
			},
		},
		{
			name: "intake contact override replaces the profile",
			n: note(func(n *domain.Notification) {
				n.Recipient.Email = "x@example.com"
				n.Channels = []domain.Channel{domain.ChannelEmail}
			}),
			typ: normalType, profile: profile(nil, nil, nil),
			want: map[domain.Channel]want{domain.ChannelEmail: {status: domain.StatusQueued, limited: true}},
		},
		{
			name: "high priority is exempt from the limit",
			n:    note(func(n *domain.Notification) { n.Priority = domain.PriorityHigh }), typ: normalType, profile: profile(user, nil, subs),
			want: map[domain.Channel]want{
				domain.ChannelEmail: {status: domain.StatusQueued},
				domain.ChannelPush:  {status: domain.StatusQueued},
			},
		},
		{
			name: "sendAt in the future defers",
			n:    note(func(n *domain.Notification) { n.SendAt = now.Add(90 * time.Second) }), typ: normalType, profile: profile(user, nil, subs),
			want: map[domain.Channel]want{
				domain.ChannelEmail: {status: domain.StatusDeferred, reason: domain.ReasonScheduled, due: now.Add(90 * time.Second), limited: true},
				domain.ChannelPush:  {status: domain.StatusDeferred, reason: domain.ReasonScheduled, due: now.Add(90 * time.Second), limited: true},
			},
		},
		{
			name: "sendAt just past goes now",
			n:    note(func(n *domain.Notification) { n.SendAt = now.Add(-30 * time.Second) }), typ: normalType, profile: profile(user, nil, subs),
			want: map[domain.Channel]want{
				domain.ChannelEmail: {status: domain.StatusQueued, limited: true},
				domain.ChannelPush:  {status: domain.StatusQueued, limited: true},
			},
		},
		{
			name: "escalation: push now (checked at send), email delayed 30 min from acceptance",
			n:    note(func(n *domain.Notification) { n.Type = "comment.mentioned" }), typ: mentionType, profile: profile(user, nil, subs),
			want: map[domain.Channel]want{
				domain.ChannelPush:  {status: domain.StatusQueued, limited: true},
				domain.ChannelEmail: {status: domain.StatusDeferred, reason: domain.ReasonDelayed, due: now.Add(30 * time.Minute), limited: true},
			},
		},
		{
			name: "escalation: the delay counts from acceptance, not from the decision",
			n:    note(func(n *domain.Notification) { n.Type, n.CreatedAt = "comment.mentioned", now.Add(-20*time.Minute) }), typ: mentionType, profile: profile(user, nil, subs),
			want: map[domain.Channel]want{
				domain.ChannelPush:  {status: domain.StatusQueued, limited: true},
				domain.ChannelEmail: {status: domain.StatusDeferred, reason: domain.ReasonDelayed, due: now.Add(10 * time.Minute), limited: true},
			},
		},
		{
			name: "escalation: a later sendAt wins over the delay",
			n:    note(func(n *domain.Notification) { n.Type, n.SendAt = "comment.mentioned", now.Add(time.Hour) }), typ: mentionType, profile: profile(user, nil, subs),
			want: map[domain.Channel]want{
				domain.ChannelPush:  {status: domain.StatusDeferred, reason: domain.ReasonScheduled, due: now.Add(time.Hour), limited: true},
				domain.ChannelEmail: {status: domain.StatusDeferred, reason: domain.ReasonScheduled, due: now.Add(time.Hour), limited: true},
			},
		},
		{
			name: "escalation: delayed into quiet hours moves to the window's end",
			n:    note(func(n *domain.Notification) { n.Type = "comment.mentioned" }), typ: mentionType, profile: profile(quiet, nil, subs),
			want: map[domain.Channel]want{
				domain.ChannelPush:  {status: domain.StatusDeferred, reason: domain.ReasonQuietHours, due: time.Date(2026, 3, 2, 13, 30, 0, 0, time.UTC), limited: true},
				domain.ChannelEmail: {status: domain.StatusDeferred, reason: domain.ReasonQuietHours, due: time.Date(2026, 3, 2, 13, 30, 0, 0, time.UTC), limited: true},
			},
		},
		{
			name: "escalation: expiring before the delay drops the delayed channel only",
			n:    note(func(n *domain.Notification) { n.Type, n.ExpiresAt = "comment.mentioned", now.Add(10*time.Minute) }), typ: mentionType, profile: profile(user, nil, subs),
			want: map[domain.Channel]want{
				domain.ChannelPush:  {status: domain.StatusQueued, limited: true},
				domain.ChannelEmail: {status: domain.StatusDropped, reason: domain.ReasonExpired},
			},
		},
		{
			name: "escalation: cancelled drops every channel",
			n:    note(func(n *domain.Notification) { n.Type, n.Status = "comment.mentioned", domain.NotificationCancelled }), typ: mentionType, profile: profile(user, nil, subs),
			want: map[domain.Channel]want{
				domain.ChannelPush:  {status: domain.StatusDropped, reason: domain.ReasonCancelled},
				domain.ChannelEmail: {status: domain.StatusDropped, reason: domain.ReasonCancelled},
			},
		},
		{
			name: "escalation: a delayed channel does not join a digest",
			n: note(func(n *domain.Notification) {
				n.Type, n.Priority, n.BatchKey = "comment.created", domain.PriorityLow, "thread-1"
			}), typ: delayedDigestType, profile: profile(user, nil, subs),
			want: map[domain.Channel]want{
				domain.ChannelPush: {status: domain.StatusDeferred, reason: domain.ReasonDelayed, due: now.Add(5 * time.Minute), limited: true},
			},
		},
		{
			name: "quiet hours defer non-high to the window's end",
			n:    note(func(n *domain.Notification) { n.Channels = []domain.Channel{domain.ChannelEmail} }), typ: normalType, profile: profile(quiet, nil, nil),
			want: map[domain.Channel]want{
				domain.ChannelEmail: {status: domain.StatusDeferred, reason: domain.ReasonQuietHours, due: time.Date(2026, 3, 2, 13, 30, 0, 0, time.UTC), limited: true},
			},
		},
		{
			name: "quiet hours: high priority goes now",
			n: note(func(n *domain.Notification) {
				n.Channels = []domain.Channel{domain.ChannelEmail}
				n.Priority = domain.PriorityHigh
			}), typ: normalType, profile: profile(quiet, nil, nil),
			want: map[domain.Channel]want{domain.ChannelEmail: {status: domain.StatusQueued}},
		},
		{
			name: "sendAt inside quiet hours moves to the window's end",
			n: note(func(n *domain.Notification) {
				n.Channels = []domain.Channel{domain.ChannelEmail}
				n.SendAt = now.Add(time.Hour)
			}), typ: normalType, profile: profile(quiet, nil, nil),
			want: map[domain.Channel]want{
				domain.ChannelEmail: {status: domain.StatusDeferred, reason: domain.ReasonQuietHours, due: time.Date(2026, 3, 2, 13, 30, 0, 0, time.UTC), limited: true},
			},
		},
		{
			name: "sendAt after the quiet window is just scheduled",
			n: note(func(n *domain.Notification) {
				n.Channels = []domain.Channel{domain.ChannelEmail}
				n.SendAt = now.Add(2 * time.Hour)
			}), typ: normalType, profile: profile(quiet, nil, nil),
			want: map[domain.Channel]want{
				domain.ChannelEmail: {status: domain.StatusDeferred, reason: domain.ReasonScheduled, due: now.Add(2 * time.Hour), limited: true},
			},
		},
		{
			name: "deferred past expiresAt is dropped as expired",
			n: note(func(n *domain.Notification) {
				n.Channels = []domain.Channel{domain.ChannelEmail}
				n.ExpiresAt = now.Add(time.Hour)
			}), typ: normalType, profile: profile(quiet, nil, nil),
			want: map[domain.Channel]want{domain.ChannelEmail: {status: domain.StatusDropped, reason: domain.ReasonExpired}},
		},
		{
			name: "digest candidate: batch key on a digestible type",
			n: note(func(n *domain.Notification) {
				n.Type, n.Priority, n.BatchKey = "comment.created", domain.PriorityLow, "thread-1"
			}), typ: digestType, profile: profile(user, nil, subs),
			want: map[domain.Channel]want{domain.ChannelPush: {status: domain.StatusQueued, limited: true, digest: now.Add(5 * time.Minute)}},
		},
		{
			name: "digest window from the user's digestMinutes",
			n: note(func(n *domain.Notification) {
				n.Type, n.Priority, n.BatchKey = "comment.created", domain.PriorityLow, "thread-1"
			}), typ: digestType, profile: profile(&domain.User{ID: "u1", DigestMinutes: 2}, nil, subs),
			want: map[domain.Channel]want{domain.ChannelPush: {status: domain.StatusQueued, limited: true, digest: now.Add(2 * time.Minute)}},
		},
		{
			name: "no digest without a batch key",
			n:    note(func(n *domain.Notification) { n.Type, n.Priority = "comment.created", domain.PriorityLow }), typ: digestType, profile: profile(user, nil, subs),
			want: map[domain.Channel]want{domain.ChannelPush: {status: domain.StatusQueued, limited: true}},
		},
		{
			name: "no digest for a type that is not digestible",
			n: note(func(n *domain.Notification) {
				n.BatchKey = "k"
				n.Channels = []domain.Channel{domain.ChannelPush}
			}), typ: normalType, profile: profile(user, nil, subs),
			want: map[domain.Channel]want{domain.ChannelPush: {status: domain.StatusQueued, limited: true}},
		},
		{
			name: "no digest for high priority",
			n: note(func(n *domain.Notification) {
				n.Type, n.Priority, n.BatchKey = "comment.created", domain.PriorityHigh, "thread-1"
			}), typ: digestType, profile: profile(user, nil, subs),
			want: map[domain.Channel]want{domain.ChannelPush: {status: domain.StatusQueued}},
		},
		{
			name: "no digest for a scheduled notification",
			n: note(func(n *domain.Notification) {
				n.Type, n.Priority, n.BatchKey, n.SendAt = "comment.created", domain.PriorityLow, "thread-1", now.Add(time.Hour)
			}), typ: digestType, profile: profile(user, nil, subs),
			want: map[domain.Channel]want{domain.ChannelPush: {status: domain.StatusDeferred, reason: domain.ReasonScheduled, due: now.Add(time.Hour), limited: true}},
		},
		{
			name: "no digest when it would expire before the digest is sent",
			n: note(func(n *domain.Notification) {
				n.Type, n.Priority, n.BatchKey, n.ExpiresAt = "comment.created", domain.PriorityLow, "thread-1", now.Add(time.Minute)
			}), typ: digestType, profile: profile(user, nil, subs),
			want: map[domain.Channel]want{domain.ChannelPush: {status: domain.StatusQueued, limited: true}},
		},
		{
			name: "digest during quiet hours closes when they end",
			n: note(func(n *domain.Notification) {
				n.Type, n.Priority, n.BatchKey = "comment.created", domain.PriorityLow, "thread-1"
			}), typ: digestType, profile: profile(quiet, nil, subs),
			want: map[domain.Channel]want{domain.ChannelPush: {
				status: domain.StatusDeferred, reason: domain.ReasonQuietHours, due: time.Date(2026, 3, 2, 13, 30, 0, 0, time.UTC),
				limited: true, digest: time.Date(2026, 3, 2, 13, 30, 0, 0, time.UTC),
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(Input{Notification: tt.n, Type: tt.typ, Profile: tt.profile, Now: now})
			if len(got) != len(tt.want) {
				t.Fatalf("got %d decisions %+v, want %d", len(got), got, len(tt.want))
			}
			for _, d := range got {
				w, ok := tt.want[d.Channel]
				if !ok {
					t.Fatalf("unexpected channel %s", d.Channel)
				}
				if d.Status != w.status || d.Reason != w.reason || !d.DueAt.Equal(w.due) || d.Limited != w.limited || !d.DigestUntil.Equal(w.digest) {
					t.Errorf("%s: got {%s %s due=%v limited=%v digest=%v}, want {%s %s due=%v limited=%v digest=%v}",
						d.Channel, d.Status, d.Reason, d.DueAt, d.Limited, d.DigestUntil, w.status, w.reason, w.due, w.limited, w.digest)
				}
			}
		})
	}
}

func TestExempt(t *testing.T) {
	tests := []struct {
		typ  *catalog.Type
		p    domain.Priority
		want bool
	}{
		{normalType, domain.PriorityNormal, false},
		{normalType, domain.PriorityLow, false},
		{normalType, domain.PriorityHigh, true},
		{mandatoryType, domain.PriorityNormal, true},
	}
	for _, tt := range tests {
		if got := Exempt(tt.typ, tt.p); got != tt.want {
			t.Errorf("Exempt(%s, %s) = %v, want %v", tt.typ.Name, tt.p, got, tt.want)
		}
	}
}

func TestLimitsFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    Limits
		wantErr bool
	}{
		{"defaults", nil, DefaultLimits(), false},
		{"overrides", map[string]string{"RATE_LIMIT_WINDOW": "30s", "RATE_LIMIT_EMAIL": "2", "RATE_LIMIT_PUSH": "0"},
			Limits{Window: 30 * time.Second, PerWindow: map[domain.Channel]int{domain.ChannelEmail: 2, domain.ChannelSMS: 5, domain.ChannelPush: 0}}, false},
		{"bad window", map[string]string{"RATE_LIMIT_WINDOW": "soon"}, Limits{}, true},
		{"window too short", map[string]string{"RATE_LIMIT_WINDOW": "10ms"}, Limits{}, true},
		{"negative limit", map[string]string{"RATE_LIMIT_SMS": "-1"}, Limits{}, true},
		{"not a number", map[string]string{"RATE_LIMIT_SMS": "five"}, Limits{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LimitsFromEnv(func(k string) string { return tt.env[k] })
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if got.Window != tt.want.Window {
				t.Errorf("window = %v, want %v", got.Window, tt.want.Window)
			}
			for _, c := range domain.Channels {
				if got.For(c) != tt.want.For(c) {
					t.Errorf("%s limit = %d, want %d", c, got.For(c), tt.want.For(c))
				}
			}
		})
	}
}

func TestWindowStart(t *testing.T) {
	l := DefaultLimits()
	at := time.Date(2026, 3, 2, 12, 34, 56, 789, time.FixedZone("JST", 9*3600))
	want := time.Date(2026, 3, 2, 3, 34, 0, 0, time.UTC)
	if got := l.WindowStart(at); !got.Equal(want) {
		t.Errorf("WindowStart = %v, want %v", got, want)
	}
	if got := l.WindowStart(at.Add(3 * time.Second)); !got.Equal(want) {
		t.Errorf("same window: %v", got)
	}
	if got := l.WindowStart(want.Add(time.Minute)); !got.Equal(want.Add(time.Minute)) {
		t.Errorf("next window: %v", got)
	}
}

func TestDigestDue(t *testing.T) {
	opened := time.Date(2026, 3, 2, 21, 58, 0, 0, time.UTC)
	night := &domain.User{Timezone: "UTC", QuietHours: &domain.QuietHours{Start: "22:00", End: "07:00"}, DigestMinutes: 10}
	tests := []struct {
		name string
		u    *domain.User
		p    domain.Priority
		want time.Time
	}{
		{"no profile: default window", nil, domain.PriorityLow, opened.Add(5 * time.Minute)},
		{"the user's window", &domain.User{DigestMinutes: 15}, domain.PriorityLow, opened.Add(15 * time.Minute)},
		{"ends in quiet hours: sent when they end", night, domain.PriorityLow, time.Date(2026, 3, 3, 7, 0, 0, 0, time.UTC)},
		{"high ignores quiet hours", night, domain.PriorityHigh, opened.Add(10 * time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DigestDue(tt.u, tt.p, opened); !got.Equal(tt.want) {
				t.Errorf("DigestDue = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNeedsProfile(t *testing.T) {
	otp := &catalog.Type{Name: "otp.code", Priority: domain.PriorityHigh, Channels: []domain.Channel{domain.ChannelSMS}, Mandatory: true}
	withPush := &catalog.Type{Name: "x", Priority: domain.PriorityHigh, Channels: []domain.Channel{domain.ChannelSMS, domain.ChannelPush}, Mandatory: true}
	phone := domain.Recipient{UserID: "u1", Phone: "+15551234567"}
	tests := []struct {
		name string
		n    *domain.Notification
		typ  *catalog.Type
		want bool
	}{
		{"mandatory, high, contact given", &domain.Notification{Recipient: phone, Priority: domain.PriorityHigh}, otp, false},
		{"no contact given: read the stored one", &domain.Notification{Recipient: domain.Recipient{UserID: "u1"}, Priority: domain.PriorityHigh}, otp, true},
		{"not high: quiet hours and limits apply", &domain.Notification{Recipient: phone, Priority: domain.PriorityNormal}, otp, true},
		{"not mandatory: preferences apply", &domain.Notification{Recipient: phone, Priority: domain.PriorityHigh}, normalType, true},
		{"push needs the subscriptions", &domain.Notification{Recipient: phone, Priority: domain.PriorityHigh}, withPush, true},
		{"only the channel with a contact requested", &domain.Notification{Recipient: phone, Priority: domain.PriorityHigh, Channels: []domain.Channel{domain.ChannelSMS}}, withPush, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NeedsProfile(tt.n, tt.typ); got != tt.want {
				t.Errorf("NeedsProfile = %v, want %v", got, tt.want)
			}
		})
	}
}
