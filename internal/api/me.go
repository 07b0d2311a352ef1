package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
)

// MeHandler serves the end user's own routes (/v1/me/…): the user is the
// token's subject and never comes from the path, so no other user's data is
// addressable. They reuse the service routes' logic (preferenceRules:
// readPreferences, mergePreferences).
type MeHandler struct {
	preferenceRules // with the responder: h.log, h.storeError
	users           UserStore
	budgets         BudgetPreferenceStore
}

// MeDeps are the user's own routes' collaborators, all required.
type MeDeps struct {
	// Users reads the profile's locale and schedule.
	Users       UserStore
	Preferences PreferenceStore
	// Budgets keeps the user's own notification budget (budget.go).
	Budgets BudgetPreferenceStore
	Catalog *catalog.Catalog
	Log     *slog.Logger
}

// NewMe wires the user's own routes.
func NewMe(d MeDeps) *MeHandler {
	return &MeHandler{preferenceRules: preferenceRules{responder: responder{log: d.Log}, preferences: d.Preferences, catalog: d.Catalog},
		users: d.Users, budgets: d.Budgets}
}

// typeLabel describes a catalog type to an end user.
type typeLabel struct {
	Label     string `json:"label"`
	Mandatory bool   `json:"mandatory"`
}

// myPreferencesView is the answer of GET and PUT /v1/me/preferences: the
// service route's matrix, the types' labels in the profile's locale, and the
// profile's quiet hours and digest window (read-only here: the profile is
// replaced whole by the service's PUT /v1/users/{userId}, which also holds
// the contacts, so a user route does not write it).
type myPreferencesView struct {
	*preferencesView
	Locale        string               `json:"locale"`
	Types         map[string]typeLabel `json:"types"`
	Timezone      string               `json:"timezone"`
	QuietHours    *domain.QuietHours   `json:"quietHours"`
	DigestMinutes int                  `json:"digestMinutes"`
	// Budget is the user's notification budget (budget.go).
	Budget *budgetView `json:"budget"`
}

// myPreferencesRequest is the body of PUT /v1/me/preferences: the service
// route's overrides (optional here when budget is given) and the budget.
type myPreferencesRequest struct {
	preferencesRequest
	Budget json.RawMessage `json:"budget"`
}

// me returns the token's subject, or a 401 for a request without one (an IAM
// caller has no "me").
func me(req *request) (string, *Problem) {
	if req.subject == "" {
		return "", &Problem{Status: http.StatusUnauthorized, Code: "unauthenticated", Title: "Authentication required",
			Detail: "this route needs a user token"}
	}
	if p := validateUserID(req.subject, ""); p != nil {
		return "", &Problem{Status: http.StatusForbidden, Code: "invalid_subject", Detail: "the token's subject is not a user id"}
	}
	return req.subject, nil
}

func (h *MeHandler) getMyPreferences(ctx context.Context, req *request) response {
	userID, p := me(req)
	if p != nil {
		return problemResponse(p)
	}
	v, resp := h.readPreferences(ctx, userID)
	if v == nil {
		return resp
	}
	return h.myPreferences(ctx, v)
}

func (h *MeHandler) putMyPreferences(ctx context.Context, req *request) response {
	userID, p := me(req)
	if p != nil {
		return problemResponse(p)
	}
	body, p := readBody(req)
	if p != nil {
		return problemResponse(p)
	}
	var pr myPreferencesRequest
	if p := decodeStrict(body, &pr); p != nil {
		return problemResponse(p)
	}
	budget, p := decodeBudgetChange(pr.Budget)
	if p != nil {
		return problemResponse(p)
	}
	var v *preferencesView
	var resp response
	if pr.Preferences == nil && budget.set {
		v, resp = h.readPreferences(ctx, userID) // the budget alone
	} else {
		v, resp = h.mergePreferences(ctx, userID, &pr.preferencesRequest, true)
	}
	if v == nil {
		return resp
	}
	if budget.set {
		if err := h.budgets.SetBudget(ctx, userID, budget.value); err != nil {
			return h.storeError(ctx, "set budget", err, nil)
		}
		h.log.InfoContext(ctx, "budget set", "userId", userID, "own", budget.value != nil, "outcome", "set")
	}
	return h.myPreferences(ctx, v)
}

// myPreferences adds the labels and the profile's schedule to the matrix.
func (h *MeHandler) myPreferences(ctx context.Context, v *preferencesView) response {
	out := &myPreferencesView{preferencesView: v, Types: make(map[string]typeLabel, len(v.Preferences))}
	u, err := h.users.GetUser(ctx, v.UserID)
	switch {
	case errors.Is(err, domain.ErrNotFound):
	case err != nil:
		return h.storeError(ctx, "get user", err, nil)
	default:
		out.Locale, out.Timezone, out.QuietHours, out.DigestMinutes = u.Locale, u.Timezone, u.QuietHours, u.DigestMinutes
	}
	for _, name := range h.catalog.Names() {
		typ, _ := h.catalog.Lookup(name)
		out.Types[name] = typeLabel{Label: typ.Label(out.Locale), Mandatory: typ.Mandatory}
	}
	if out.Budget, err = h.myBudget(ctx, v.UserID); err != nil {
		return h.storeError(ctx, "get budget", err, nil)
	}
	if out.Locale == "" {
		out.Locale = "en"
	}
	return response{status: http.StatusOK, body: out}
}
