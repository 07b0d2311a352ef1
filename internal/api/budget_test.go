package api

import (
	"testing"

	"github.com/heraldhq/herald/internal/domain"
)

type myBudget struct {
	Budget budgetView `json:"budget"`
}

// TestMyBudget: the preference center shows the catalog's budget until the
// user sets their own, which PUT stores (with or without overrides in the
// same body) and null removes; the service route's matrix is untouched.
func TestMyBudget(t *testing.T) {
	ta := newTestAPI(t)
	get := func() budgetView {
		t.Helper()
		resp := ta.do(t, apiCall{route: "GET /v1/me/preferences", jwtSub: "u1"})
		if resp.StatusCode != 200 {
			t.Fatalf("GET = %d %s", resp.StatusCode, resp.Body)
		}
		return decodeBody[myBudget](t, resp.Body).Budget
	}
	catalogs := budgetView{PerHour: 5, PerDay: 20, Source: "catalog", Default: domain.Budget{PerHour: 5, PerDay: 20}, Max: domain.Budget{PerHour: 20, PerDay: 40}}
	if got := get(); got != catalogs {
		t.Errorf("before = %+v, want %+v", got, catalogs)
	}
	put := func(body string) budgetView {
		t.Helper()
		resp := ta.do(t, apiCall{route: "PUT /v1/me/preferences", jwtSub: "u1", body: body})
		if resp.StatusCode != 200 {
			t.Fatalf("PUT %s = %d %s", body, resp.StatusCode, resp.Body)
		}
		return decodeBody[myBudget](t, resp.Body).Budget
	}
	own := catalogs
	own.PerHour, own.PerDay, own.Source = 2, 8, "user"
	if got := put(`{"budget":{"perHour":2,"perDay":8}}`); got != own {
		t.Errorf("PUT budget alone answered %+v, want %+v", got, own)
	}
	if got := get(); got != own {
		t.Errorf("after = %+v, want %+v", got, own)
	}
	if b, _ := ta.store.GetBudget(t.Context(), "u2"); b != nil {
		t.Errorf("another user's budget changed: %+v", b)
	}
	own.PerHour = 3
	if got := put(`{"preferences":{"comment.created":{"push":false}},"budget":{"perHour":3,"perDay":8}}`); got != own {
		t.Errorf("PUT with overrides answered %+v", got)
	}
	if got := put(`{"preferences":{"comment.created":{"push":null}}}`); got != own {
		t.Errorf("PUT without budget changed it: %+v", got)
	}
	if got := put(`{"budget":null}`); got != catalogs {
		t.Errorf("PUT null answered %+v, want the catalog's", got)
	}
}

func TestMyBudgetRefusals(t *testing.T) {
	ta := newTestAPI(t)
	for _, c := range []struct {
		name, body    string
		status        int
		code, pointer string
	}{
		{"zero an hour", `{"budget":{"perHour":0,"perDay":5}}`, 422, "invalid_budget", "/budget/perHour"},
		{"above the hour's bound", `{"budget":{"perHour":21,"perDay":40}}`, 422, "invalid_budget", "/budget/perHour"},
		{"above the day's bound", `{"budget":{"perHour":5,"perDay":41}}`, 422, "invalid_budget", "/budget/perDay"},
		{"more an hour than a day", `{"budget":{"perHour":6,"perDay":5}}`, 422, "invalid_budget", "/budget/perHour"},
		{"not a number", `{"budget":{"perHour":"5","perDay":20}}`, 400, "invalid_type", "/budget"},
		{"a fraction", `{"budget":{"perHour":2.5,"perDay":20}}`, 400, "invalid_type", "/budget"},
		{"an unknown field", `{"budget":{"perHour":2,"perDay":20,"perWeek":50}}`, 400, "invalid_type", "/budget"},
		{"not an object", `{"budget":5}`, 400, "invalid_type", "/budget"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := ta.do(t, apiCall{route: "PUT /v1/me/preferences", body: c.body, jwtSub: "u1"})
			p := decodeProblem(t, resp)
			if resp.StatusCode != c.status || p.Code != c.code || p.Pointer != c.pointer {
				t.Errorf("= %d %s", resp.StatusCode, resp.Body)
			}
		})
	}
	if n := ta.store.writeCount(); n != 0 {
		t.Errorf("refused requests wrote %d times", n)
	}
}
