package policy

import (
	"time"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
)

// BudgetSlots is how many counted notifications a user's budget remembers:
// the largest budget a day the catalog allows, so the rolling day of any
// budget within the bounds is fully known.
const BudgetSlots = catalog.MaxBudgetPerDay

// BudgetOf is the budget that holds a notification of type t at priority p
// for a user whose own budget is own (nil: none chosen). High priority and
// mandatory types are never held (ok false). Otherwise the user's own budget
// wins, then the type's override, then the priority's default.
func BudgetOf(t *catalog.Type, p domain.Priority, own *domain.Budget) (b domain.Budget, ok bool) {
	if Exempt(t, p) {
		return domain.Budget{}, false
	}
	if own != nil {
		return *own, true
	}
	if b, ok := t.BudgetOverride(); ok {
		return b, true
	}
	return catalog.DefaultBudget(p)
}

// BudgetAllows is the rule the budget's one conditional write holds, stated
// on the history (the acceptance times of the counted notifications, newest
// first): a notification accepted at `at` is within budget when fewer than
// PerHour of them fall in the hour before it and fewer than PerDay in the
// day before it — that is, when the PerHour-th newest is at least an hour
// old and the PerDay-th newest at least a day old. Times are compared to the
// second, as the store keeps them.
func BudgetAllows(b domain.Budget, history []time.Time, at time.Time) bool {
	return BudgetFreesAt(b, history, at).IsZero()
}

// BudgetFreesAt is when a budget that is full at `at` lets a notification
// through again (the latest over its full windows of the window's oldest
// counted notification plus the window); zero when it is not full.
func BudgetFreesAt(b domain.Budget, history []time.Time, at time.Time) time.Time {
	var frees time.Time
	for _, w := range []struct {
		limit  int
		window time.Duration
	}{{b.PerHour, domain.BudgetHour}, {b.PerDay, domain.BudgetDay}} {
		if w.limit <= 0 || w.limit > len(history) {
			continue
		}
		free := history[w.limit-1].Truncate(time.Second).Add(w.window)
		if free.After(at.Truncate(time.Second)) && free.After(frees) {
			frees = free
		}
	}
	return frees
}

// BudgetDigestDue is when the budget digest opened by a notification accepted
// at `opened` goes out: after the user's digest window and not before the
// budget frees (one digest per freed budget), pushed past quiet hours.
func BudgetDigestDue(u *domain.User, opened, freesAt time.Time) time.Time {
	due := domain.Latest(opened.Add(DigestWindow(u)), freesAt)
	if end, quiet := QuietUntil(u, due); quiet {
		due = end
	}
	return due
}
