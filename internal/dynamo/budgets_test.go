package dynamo_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/policy"
)

// TestBudgetItemIsOneWriteUnit: the budget's one write per notification
// costs one write unit: its item, full (policy.BudgetSlots counted) for a
// user id of 64 characters, stays under 1 KB, and the item CountBudget
// stores is the size BudgetItemKeys prices.
func TestBudgetItemIsOneWriteUnit(t *testing.T) {
	at := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	long := fmt.Sprintf("%064d", 7)
	k := dynamo.BudgetItemKeys(long, at, policy.BudgetSlots)
	if got := dynamo.WriteUnits(k.Size); got != 1 {
		t.Errorf("a full budget item is %d bytes, %.0f write units; want 1", k.Size, got)
	}
	s, db, _ := newStore(t)
	user := uniq(t)
	wide := domain.Budget{PerHour: policy.BudgetSlots, PerDay: policy.BudgetSlots}
	for i := range policy.BudgetSlots {
		if _, err := s.CountBudget(context.Background(), user, fmt.Sprintf("n%d", i), at, wide, policy.BudgetSlots); err != nil {
			t.Fatal(err)
		}
	}
	stored := dynamo.StoredItemKeys(rawItem(t, db, s.Name(), dynamo.UserPK(user), "BUDGET"))
	if want := dynamo.BudgetItemKeys(user, at, policy.BudgetSlots); stored.Size != want.Size {
		t.Errorf("stored budget item %d bytes, priced %d", stored.Size, want.Size)
	}
}
