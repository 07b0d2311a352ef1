package catalog

import (
	_ "embed"
	"fmt"

	"github.com/heraldhq/herald/internal/domain"
)

// The bounds of a notification budget, the catalog's and the users' own
// alike: at least one notification an hour, at most MaxBudgetPerHour an hour
// and MaxBudgetPerDay a day, and never more an hour than a day.
// MaxBudgetPerDay is also how many notifications the budget item remembers
// (policy.BudgetSlots), so it bounds the item's size: 40 slots of 21 bytes
// keep it under one write unit (docs/capacity.md).
const (
	MaxBudgetPerHour = 20
	MaxBudgetPerDay  = 40
)

// defaultBudgets are the budgets of the priorities that have one: NORMAL and
// LOW count together (one history per user) against 5 an hour and 20 a day.
// HIGH has none: it is never held.
var defaultBudgets = map[domain.Priority]domain.Budget{
	domain.PriorityNormal: {PerHour: 5, PerDay: 20},
	domain.PriorityLow:    {PerHour: 5, PerDay: 20},
}

// DefaultBudget is the catalog's budget of a priority; ok is false for a
// priority that is never held (HIGH).
func DefaultBudget(p domain.Priority) (b domain.Budget, ok bool) {
	b, ok = defaultBudgets[p]
	return b, ok
}

// CheckBudget reports whether b is within the catalog's bounds; the error
// names the field at fault ("perHour", "perDay").
func CheckBudget(b domain.Budget) error {
	switch {
	case b.PerHour < 1 || b.PerHour > MaxBudgetPerHour:
		return fmt.Errorf("perHour: must be between 1 and %d", MaxBudgetPerHour)
	case b.PerDay < 1 || b.PerDay > MaxBudgetPerDay:
		return fmt.Errorf("perDay: must be between 1 and %d", MaxBudgetPerDay)
	case b.PerHour > b.PerDay:
		return fmt.Errorf("perHour: must not exceed perDay (%d)", b.PerDay)
	}
	return nil
}

// BudgetOverride is the type's own budget (the YAML `budget:` section), which
// replaces its priority's default; ok is false when the type has none.
func (t *Type) BudgetOverride() (domain.Budget, bool) {
	if t.budget == nil {
		return domain.Budget{}, false
	}
	return *t.budget, true
}

// fileBudget is the YAML shape of a type's `budget:` section.
type fileBudget struct {
	PerHour int `yaml:"perHour"`
	PerDay  int `yaml:"perDay"`
}

// parseBudget checks a type's `budget:` section: within the bounds, and only
// on a type a budget can hold (not mandatory, not high priority).
func (t *Type) parseBudget(f *fileBudget) error {
	if f == nil {
		return nil
	}
	if t.Mandatory || t.Priority == domain.PriorityHigh {
		return fmt.Errorf("budget: a mandatory or high-priority type is never held")
	}
	b := domain.Budget{PerHour: f.PerHour, PerDay: f.PerDay}
	if err := CheckBudget(b); err != nil {
		return fmt.Errorf("budget.%w", err)
	}
	t.budget = &b
	return nil
}

//go:embed budget.yaml
var budgetDigestYAML []byte

// BudgetDigest is what renders a budget digest (budget.yaml): its digest
// templates list the held notifications, each item one notification's in-app
// rendering (BudgetDigestItem). It is not one of the catalog's types.
func (c *Catalog) BudgetDigest() *Type { return c.budgetDigest }

// BudgetDigestItem is a held notification as a budget digest lists it: its
// own in-app title, body and link.
func BudgetDigestItem(inapp Content) map[string]any {
	return map[string]any{"title": inapp.Title, "body": inapp.Body, "url": inapp.URL}
}
