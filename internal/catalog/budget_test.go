package catalog

import (
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/domain"
)

func TestBudgetBoundsAndOverride(t *testing.T) {
	for _, tt := range []struct {
		b    domain.Budget
		want string // "" valid, else the field at fault
	}{
		{domain.Budget{PerHour: 1, PerDay: 1}, ""},
		{domain.Budget{PerHour: MaxBudgetPerHour, PerDay: MaxBudgetPerDay}, ""},
		{domain.Budget{PerHour: 0, PerDay: 5}, "perHour"},
		{domain.Budget{PerHour: MaxBudgetPerHour + 1, PerDay: MaxBudgetPerDay}, "perHour"},
		{domain.Budget{PerHour: 3, PerDay: MaxBudgetPerDay + 1}, "perDay"},
		{domain.Budget{PerHour: 6, PerDay: 5}, "perHour"},
	} {
		err := CheckBudget(tt.b)
		if (err == nil) != (tt.want == "") || err != nil && !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("CheckBudget(%+v) = %v, want fault %q", tt.b, err, tt.want)
		}
	}
	base := "type: t.x\npriority: %s\nchannels: [push]\n%s\ntemplates:\n  en:\n    push: {title: a, body: b}\n    inapp: {title: a, body: b}\n"
	parse := func(priority, extra string) (*Type, error) {
		return parseType([]byte(strings.NewReplacer("%s", "").Replace(strings.Replace(strings.Replace(base, "%s", priority, 1), "%s", extra, 1))))
	}
	typ, err := parse("normal", "budget: {perHour: 3, perDay: 10}")
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := typ.BudgetOverride(); !ok || b != (domain.Budget{PerHour: 3, PerDay: 10}) {
		t.Errorf("override = %+v, %v", b, ok)
	}
	if _, err := parse("high", "budget: {perHour: 3, perDay: 10}"); err == nil {
		t.Error("a high-priority type with a budget loaded")
	}
	if _, err := parse("normal", "budget: {perHour: 30, perDay: 10}"); err == nil {
		t.Error("a budget beyond the bounds loaded")
	}
	if c := MustLoad(); c.BudgetDigest() == nil || !c.BudgetDigest().Digestible {
		t.Error("the catalog has no budget digest")
	}
}
