package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

// CountBudgetFunc is a store's CountBudget (dynamo.Budgets; MemBudgets).
type CountBudgetFunc func(ctx context.Context, userID, notificationID string, accepted time.Time, b domain.Budget, slots int) (domain.BudgetCount, error)

// BudgetContract: a notification is within budget while fewer than PerHour
// counted ones fall in the hour before it and fewer than PerDay in the day
// before it (to the second: one exactly an hour old no longer holds it);
// counting it again answers the first answer without counting; one over
// budget is not counted and the answer lists the history, latest first;
// only the last `slots` counted are remembered; a budget beyond the slots
// is refused. The table may be shared: users are this run's own.
func BudgetContract(t *testing.T, count CountBudgetFunc) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	const slots = 40
	check := func(t *testing.T, user, id string, at time.Time, b domain.Budget, want bool) domain.BudgetCount {
		t.Helper()
		got, err := count(ctx, user, id, at, b, slots)
		if err != nil {
			t.Fatalf("count %s at %s: %v", id, at, err)
		}
		if got.Within != want {
			t.Fatalf("count %s at %s: within = %v, want %v", id, at.Format(time.TimeOnly), got.Within, want)
		}
		return got
	}
	t.Run("hour", func(t *testing.T) {
		user, b := newID("budget-hour"), domain.Budget{PerHour: 3, PerDay: 20}
		for i := range 3 {
			check(t, user, newID("n"), t0.Add(time.Duration(i)*time.Minute), b, true)
		}
		over := check(t, user, "over-1", t0.Add(10*time.Minute), b, false)
		want := []time.Time{t0.Add(2 * time.Minute), t0.Add(time.Minute), t0}
		if !slices.EqualFunc(over.History, want, time.Time.Equal) {
			t.Fatalf("history = %v, want %v (latest first)", over.History, want)
		}
		// Not counted: asking again is still over, and the next one too.
		check(t, user, "over-1", t0.Add(10*time.Minute), b, false)
		check(t, user, newID("n"), t0.Add(59*time.Minute+59*time.Second), b, false)
		// Exactly an hour after the oldest, it no longer holds the budget.
		check(t, user, "after-1", t0.Add(time.Hour), b, true)
		check(t, user, newID("n"), t0.Add(time.Hour+30*time.Second), b, false)
	})
	t.Run("retry counts once", func(t *testing.T) {
		user, b := newID("budget-retry"), domain.Budget{PerHour: 2, PerDay: 20}
		check(t, user, "a", t0, b, true)
		check(t, user, "a", t0, b, true)
		check(t, user, "b", t0.Add(time.Second), b, true)
		check(t, user, "a", t0, b, true) // counted already: still within, though full
		check(t, user, "c", t0.Add(2*time.Second), b, false)
	})
	t.Run("day", func(t *testing.T) {
		user, b := newID("budget-day"), domain.Budget{PerHour: 5, PerDay: 3}
		for i := range 3 {
			check(t, user, newID("n"), t0.Add(time.Duration(i)*2*time.Hour), b, true)
		}
		over := check(t, user, newID("n"), t0.Add(23*time.Hour), b, false)
		if len(over.History) != 3 || !over.History[2].Equal(t0) {
			t.Fatalf("history = %v, want 3 counted, oldest %s", over.History, t0)
		}
		check(t, user, newID("n"), t0.Add(24*time.Hour), b, true)
	})
	t.Run("remembers the last slots", func(t *testing.T) {
		user, daily := newID("budget-slots"), domain.Budget{PerHour: 1, PerDay: 1}
		last := t0
		for i := range slots + 5 {
			last = t0.Add(time.Duration(i) * domain.BudgetDay)
			check(t, user, newID("n"), last, daily, true)
		}
		over := check(t, user, newID("n"), last.Add(time.Minute), daily, false)
		if len(over.History) != slots || !over.History[0].Equal(last) {
			t.Fatalf("history has %d entries from %v, want the last %d from %s", len(over.History), over.History[:1], slots, last)
		}
	})
	t.Run("beyond the slots", func(t *testing.T) {
		if _, err := count(ctx, newID("budget-beyond"), "x", t0, domain.Budget{PerHour: 1, PerDay: slots + 1}, slots); err == nil {
			t.Fatal("a budget a day beyond the slots remembered was accepted")
		}
	})
}

// MemBudgets is an in-memory budget store with the semantics of
// dynamo.Budgets (BudgetContract). The zero value is ready to use.
type MemBudgets struct {
	mu      sync.Mutex
	history map[string][]budgetEntry // latest first
	// Calls counts CountBudget calls.
	Calls int
}

type budgetEntry struct {
	at time.Time
	id string
}

// CountBudget counts a notification against a user's budget.
func (m *MemBudgets) CountBudget(_ context.Context, userID, notificationID string, accepted time.Time, b domain.Budget, slots int) (domain.BudgetCount, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Calls++
	if b.PerHour > slots || b.PerDay > slots || slots < 1 {
		return domain.BudgetCount{}, fmt.Errorf("budget %+v beyond the %d slots remembered", b, slots)
	}
	if m.history == nil {
		m.history = map[string][]budgetEntry{}
	}
	h := m.history[userID]
	at := accepted.Truncate(time.Second)
	if slices.ContainsFunc(h, func(e budgetEntry) bool { return e.id == notificationID && e.at.Equal(at) }) {
		return domain.BudgetCount{Within: true}, nil
	}
	full := func(limit int, window time.Duration) bool {
		return limit > 0 && len(h) >= limit && h[limit-1].at.After(at.Add(-window))
	}
	if full(b.PerHour, domain.BudgetHour) || full(b.PerDay, domain.BudgetDay) {
		out := domain.BudgetCount{}
		for _, e := range h {
			out.History = append(out.History, e.at.UTC())
		}
		return out, nil
	}
	h = append([]budgetEntry{{at: at, id: notificationID}}, h...)
	m.history[userID] = h[:min(len(h), slots)]
	return domain.BudgetCount{Within: true}, nil
}

// BudgetPreferenceHarness is one implementation of a user's own budget
// (dynamo.Users; the API's fake).
type BudgetPreferenceHarness struct {
	GetBudget func(ctx context.Context, userID string) (*domain.Budget, error)
	SetBudget func(ctx context.Context, userID string, b *domain.Budget) error
	// MergePreferences, when set, is the same store's override merge: it
	// must leave the budget as it is, and the budget its overrides.
	MergePreferences func(ctx context.Context, userID string, changes map[string]map[domain.Channel]*bool) (domain.Preferences, error)
}

// BudgetPreferenceContract: a user without one has no budget of their own;
// set, it reads back; set again, it is replaced; nil removes it; merging
// overrides and setting the budget leave each other alone.
func BudgetPreferenceContract(t *testing.T, h BudgetPreferenceHarness) {
	ctx := context.Background()
	user := newID("budget-prefs")
	want := func(b *domain.Budget) {
		t.Helper()
		got, err := h.GetBudget(ctx, user)
		if err != nil {
			t.Fatal(err)
		}
		if (got == nil) != (b == nil) || got != nil && *got != *b {
			t.Fatalf("budget = %+v, want %+v", got, b)
		}
	}
	set := func(b *domain.Budget) {
		t.Helper()
		if err := h.SetBudget(ctx, user, b); err != nil {
			t.Fatal(err)
		}
	}
	want(nil)
	set(&domain.Budget{PerHour: 2, PerDay: 10})
	want(&domain.Budget{PerHour: 2, PerDay: 10})
	set(&domain.Budget{PerHour: 3, PerDay: 12})
	if h.MergePreferences != nil {
		off := false
		prefs, err := h.MergePreferences(ctx, user, map[string]map[domain.Channel]*bool{"reservation.approved": {domain.ChannelEmail: &off}})
		if err != nil {
			t.Fatal(err)
		}
		if on, ok := prefs.Enabled("reservation.approved", domain.ChannelEmail); !ok || on {
			t.Fatalf("preferences after the merge %v", prefs)
		}
	}
	want(&domain.Budget{PerHour: 3, PerDay: 12})
	set(nil)
	want(nil)
	if h.MergePreferences != nil {
		prefs, err := h.MergePreferences(ctx, user, nil)
		if err != nil {
			t.Fatal(err)
		}
		if on, ok := prefs.Enabled("reservation.approved", domain.ChannelEmail); !ok || on {
			t.Fatalf("the budget's removal changed the overrides: %v", prefs)
		}
	}
}
