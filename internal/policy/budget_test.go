package policy_test

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/policy"
)

func TestBudgetOf(t *testing.T) {
	c := catalog.MustLoad()
	typ := func(name string) *catalog.Type {
		tt, ok := c.Lookup(name)
		if !ok {
			t.Fatalf("no type %s", name)
		}
		return tt
	}
	own := &domain.Budget{PerHour: 2, PerDay: 8}
	tests := []struct {
		name     string
		typ      *catalog.Type
		priority domain.Priority
		own      *domain.Budget
		want     domain.Budget
		held     bool
	}{
		{"normal: the catalog's default", typ("reservation.approved"), domain.PriorityNormal, nil, domain.Budget{PerHour: 5, PerDay: 20}, true},
		{"low: the catalog's default", typ("comment.created"), domain.PriorityLow, nil, domain.Budget{PerHour: 5, PerDay: 20}, true},
		{"the user's own wins", typ("reservation.approved"), domain.PriorityNormal, own, *own, true},
		{"high is never held", typ("reservation.approved"), domain.PriorityHigh, own, domain.Budget{}, false},
		{"mandatory is never held", typ("security.login_alert"), domain.PriorityNormal, own, domain.Budget{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, held := policy.BudgetOf(tt.typ, tt.priority, tt.own)
			if got != tt.want || held != tt.held {
				t.Errorf("BudgetOf = %+v, %v; want %+v, %v", got, held, tt.want, tt.held)
			}
		})
	}
}

func TestBudgetFreesAt(t *testing.T) {
	at := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	b := domain.Budget{PerHour: 2, PerDay: 3}
	ago := func(d time.Duration) time.Time { return at.Add(-d) }
	tests := []struct {
		name    string
		history []time.Time // latest counted first
		frees   time.Time   // zero: within
	}{
		{"empty", nil, time.Time{}},
		{"one this hour", []time.Time{ago(time.Minute)}, time.Time{}},
		{"hour full", []time.Time{ago(time.Minute), ago(30 * time.Minute)}, ago(30 * time.Minute).Add(time.Hour)},
		{"second exactly an hour old", []time.Time{ago(time.Minute), ago(time.Hour)}, time.Time{}},
		{"day full, hour not", []time.Time{ago(2 * time.Hour), ago(3 * time.Hour), ago(20 * time.Hour)}, ago(20 * time.Hour).Add(24 * time.Hour)},
		{"both full: the later", []time.Time{ago(time.Minute), ago(2 * time.Minute), ago(23 * time.Hour)}, ago(23 * time.Hour).Add(24 * time.Hour)},
		{"day's oldest a day old", []time.Time{ago(2 * time.Hour), ago(3 * time.Hour), ago(24 * time.Hour)}, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := policy.BudgetFreesAt(b, tt.history, at)
			if !got.Equal(tt.frees) {
				t.Errorf("BudgetFreesAt = %s, want %s", got, tt.frees)
			}
			if allows := policy.BudgetAllows(b, tt.history, at); allows != tt.frees.IsZero() {
				t.Errorf("BudgetAllows = %v, want %v", allows, tt.frees.IsZero())
			}
		})
	}
}

func TestBudgetDigestDue(t *testing.T) {
	opened := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	if got := policy.BudgetDigestDue(nil, opened, time.Time{}); !got.Equal(opened.Add(policy.DefaultDigestMinutes * time.Minute)) {
		t.Errorf("budget not full: due %s, want the digest window's end", got)
	}
	frees := opened.Add(40 * time.Minute)
	if got := policy.BudgetDigestDue(nil, opened, frees); !got.Equal(frees) {
		t.Errorf("due %s, want when the budget frees, %s", got, frees)
	}
	quiet := &domain.User{Timezone: "UTC", QuietHours: &domain.QuietHours{Start: "12:30", End: "14:00"}}
	if got, want := policy.BudgetDigestDue(quiet, opened, frees), opened.Add(2*time.Hour); !got.Equal(want) {
		t.Errorf("frees in quiet hours: due %s, want their end %s", got, want)
	}
}
