package policy

import (
	"fmt"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
)

// Quiet hours move a send time by less than MaxQuietDeferral, however long
// the window and whatever daylight-saving change falls in it (Troll's is 2
// hours, Lord Howe's 30 minutes).
func TestQuietDeferralIsBounded(t *testing.T) {
	zones := []string{"UTC", "America/New_York", "Australia/Lord_Howe", "Antarctica/Troll"}
	// The longest windows, starting on a probed instant (every hour; Lord
	// Howe is 30 minutes off the hour).
	windows := [][2]string{{"00:00", "23:59"}, {"00:30", "00:29"}}
	longest := time.Duration(0)
	for _, tz := range zones {
		for _, w := range windows {
			u := &domain.User{Timezone: tz, QuietHours: &domain.QuietHours{Start: w[0], End: w[1]}}
			// Every hour of a year: every transition of every zone.
			for at := utc("2026-01-01T00:00:00Z"); at.Before(utc("2027-01-01T00:00:00Z")); at = at.Add(time.Hour) {
				if end, quiet := QuietUntil(u, at); quiet {
					if d := end.Sub(at); d > longest {
						longest = d
					}
					if end.Sub(at) > MaxQuietDeferral {
						t.Fatalf("%s %s–%s at %v: deferred %v, more than MaxQuietDeferral", tz, w[0], w[1], at, end.Sub(at))
					}
				}
			}
		}
	}
	t.Logf("longest quiet-hours deferral: %v", longest)
}

// Planned on time, no channel of any type is due after LatestDue: not with
// a far sendAt, an escalation delay, the longest digest window (or a
// stored one longer than the users API allows) or the longest quiet hours.
func TestLatestDueBoundsEveryPlannedDueTime(t *testing.T) {
	cat := catalog.MustLoad()
	accepted := utc("2026-03-28T21:30:00Z") // a DST weekend in Europe
	users := []*domain.User{
		nil,
		{ID: "u", Email: "u@example.com", Phone: "+15551234567"},
		{ID: "u", Email: "u@example.com", Phone: "+15551234567", Timezone: "Europe/London", QuietHours: &domain.QuietHours{Start: "22:00", End: "21:59"}, DigestMinutes: 24 * 60},
		{ID: "u", Email: "u@example.com", Phone: "+15551234567", Timezone: "Antarctica/Troll", QuietHours: &domain.QuietHours{Start: "00:00", End: "23:59"}, DigestMinutes: 100000},
	}
	checked := 0
	for _, name := range cat.Names() {
		typ, _ := cat.Lookup(name)
		for _, sendAt := range []time.Time{{}, accepted.Add(200 * 24 * time.Hour)} {
			for _, prio := range []domain.Priority{domain.PriorityHigh, domain.PriorityNormal, domain.PriorityLow} {
				for ui, u := range users {
					n := &domain.Notification{ID: "n", Type: name, Recipient: domain.Recipient{UserID: "u"}, Priority: prio, BatchKey: "k",
						SendAt: sendAt, CreatedAt: accepted, Status: domain.NotificationAccepted}
					profile := &domain.RecipientProfile{User: u, Preferences: domain.Preferences{},
						PushSubscriptions: []domain.PushSubscription{{ID: "s"}}}
					bound := LatestDue(n, typ)
					for _, d := range Decide(Input{Notification: n, Type: typ, Profile: profile, Now: accepted}) {
						what := fmt.Sprintf("%s %s sendAt %v user %d: %s", name, prio, sendAt, ui, d.Channel)
						if d.DueAt.After(bound) {
							t.Errorf("%s due %v, after LatestDue %v", what, d.DueAt, bound)
						}
						if d.DigestUntil.After(bound) {
							t.Errorf("%s digest until %v, after LatestDue %v", what, d.DigestUntil, bound)
						}
						checked++
					}
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("checked %d decisions: is the catalog empty?", checked)
	}
}

// A sendAt sets the bound; high priority is not moved by quiet hours.
func TestLatestDue(t *testing.T) {
	cat := catalog.MustLoad()
	res, _ := cat.Lookup("reservation.approved")
	accepted := utc("2026-03-02T12:00:00Z")
	n := &domain.Notification{Type: res.Name, Priority: domain.PriorityNormal, CreatedAt: accepted}
	if got, want := LatestDue(n, res), accepted.Add(MaxQuietDeferral); !got.Equal(want) {
		t.Errorf("at once: %v, want %v", got, want)
	}
	n.SendAt = accepted.Add(300 * 24 * time.Hour)
	if got, want := LatestDue(n, res), n.SendAt.Add(MaxQuietDeferral); !got.Equal(want) {
		t.Errorf("scheduled: %v, want %v", got, want)
	}
	n.Priority = domain.PriorityHigh
	if got := LatestDue(n, res); !got.Equal(n.SendAt) {
		t.Errorf("high priority, scheduled: %v, want sendAt %v", got, n.SendAt)
	}
}
