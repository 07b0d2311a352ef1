package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
)

// BudgetPreferenceStore keeps a user's own notification budget (with the
// preferences; dynamo.Users).
type BudgetPreferenceStore interface {
	// GetBudget reads the user's own budget; nil when they chose none.
	GetBudget(ctx context.Context, userID string) (*domain.Budget, error)
	// SetBudget stores the user's own budget; nil removes it (back to the
	// catalog's).
	SetBudget(ctx context.Context, userID string, b *domain.Budget) error
}

// Sources of the budget shown to the user.
const (
	budgetSourceCatalog = "catalog"
	budgetSourceUser    = "user"
)

// budgetView is the `budget` of GET and PUT /v1/me/preferences: the budget
// that holds the user's NORMAL notifications, where it comes from, the
// catalog's default and the largest a user may choose.
type budgetView struct {
	PerHour int           `json:"perHour"`
	PerDay  int           `json:"perDay"`
	Source  string        `json:"source"`
	Default domain.Budget `json:"default"`
	Max     domain.Budget `json:"max"`
}

// myBudgetChange is the `budget` of a PUT body: absent leaves it, null goes
// back to the catalog's, an object sets it.
type myBudgetChange struct {
	set   bool
	value *domain.Budget
}

// decodeBudgetChange validates a PUT body's `budget` against the catalog's
// bounds: 400 invalid_type for a malformed value, 422 invalid_budget (with
// the field's pointer) for one out of bounds.
func decodeBudgetChange(raw json.RawMessage) (myBudgetChange, *Problem) {
	if raw == nil {
		return myBudgetChange{}, nil
	}
	if string(bytes.TrimSpace(raw)) == "null" {
		return myBudgetChange{set: true}, nil
	}
	var b domain.Budget
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return myBudgetChange{}, fieldProblem(http.StatusBadRequest, "invalid_type", "/budget", "budget is {perHour, perDay} (whole numbers) or null")
	}
	if err := catalog.CheckBudget(b); err != nil {
		field, _, _ := strings.Cut(err.Error(), ":")
		return myBudgetChange{}, fieldProblem(http.StatusUnprocessableEntity, "invalid_budget", "/budget/"+field, err.Error())
	}
	return myBudgetChange{set: true, value: &b}, nil
}

// myBudget reads the user's budget as the preference center shows it.
func (h *MeHandler) myBudget(ctx context.Context, userID string) (*budgetView, error) {
	own, err := h.budgets.GetBudget(ctx, userID)
	if err != nil {
		return nil, err
	}
	def, _ := catalog.DefaultBudget(domain.PriorityNormal)
	v := &budgetView{PerHour: def.PerHour, PerDay: def.PerDay, Source: budgetSourceCatalog, Default: def,
		Max: domain.Budget{PerHour: catalog.MaxBudgetPerHour, PerDay: catalog.MaxBudgetPerDay}}
	if own != nil {
		v.PerHour, v.PerDay, v.Source = own.PerHour, own.PerDay, budgetSourceUser
	}
	return v, nil
}
