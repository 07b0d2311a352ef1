package api

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/policy"
)

// preferenceRules reads and merges a user's preferences against the catalog:
// the service's preference routes (UsersHandler) and the user's own
// (MeHandler) run this same code. It answers its failures itself, so it
// carries the handler's responder.
type preferenceRules struct {
	responder
	preferences PreferenceStore
	catalog     *catalog.Catalog
}

// PreferenceStore is what the preference routes need from the table.
type PreferenceStore interface {
	GetPreferences(ctx context.Context, userID string) (domain.Preferences, error)
	// MergePreferences applies type → channel → on/off (nil: remove the
	// override) and returns the merged overrides.
	MergePreferences(ctx context.Context, userID string, changes map[string]map[domain.Channel]*bool) (domain.Preferences, error)
}

// Sources of an effective preference.
const (
	sourceDefault   = "default"
	sourceUser      = "user"
	sourceMandatory = "mandatory"
)

type preferenceCell struct {
	Enabled bool   `json:"enabled"`
	Source  string `json:"source"`
}

// preferencesView is the effective matrix: every catalog type × each of its
// channels, with where the value comes from.
type preferencesView struct {
	UserID      string                               `json:"userId"`
	Preferences map[string]map[string]preferenceCell `json:"preferences"`
}

// preferencesRequest is the body of PUT …/preferences: overrides to merge,
// type → channel → true, false or null (back to the default).
type preferencesRequest struct {
	Preferences map[string]json.RawMessage `json:"preferences"`
}

func (h *preferenceRules) effectivePreferences(userID string, prefs domain.Preferences) *preferencesView {
	v := &preferencesView{UserID: userID, Preferences: map[string]map[string]preferenceCell{}}
	for _, name := range h.catalog.Names() {
		typ, _ := h.catalog.Lookup(name)
		row := make(map[string]preferenceCell, len(typ.Channels))
		for _, c := range typ.Channels {
			cell := preferenceCell{Enabled: policy.Enabled(typ, prefs, c), Source: sourceDefault}
			if typ.Mandatory {
				cell.Source = sourceMandatory
			} else if _, ok := prefs.Enabled(name, c); ok {
				cell.Source = sourceUser
			}
			row[string(c)] = cell
		}
		v.Preferences[name] = row
	}
	return v
}

func (h *UsersHandler) getPreferences(ctx context.Context, req *request) response {
	userID, p := pathUserID(req)
	if p != nil {
		return problemResponse(p)
	}
	v, resp := h.readPreferences(ctx, userID)
	if v == nil {
		return resp
	}
	return response{status: http.StatusOK, body: v}
}

// readPreferences reads the user's effective matrix (the service and the
// user's own route alike); on failure the view is nil and the response is
// the problem.
func (h *preferenceRules) readPreferences(ctx context.Context, userID string) (*preferencesView, response) {
	prefs, err := h.preferences.GetPreferences(ctx, userID)
	if err != nil {
		return nil, h.storeError(ctx, "get preferences", err, nil)
	}
	return h.effectivePreferences(userID, prefs), response{}
}

// putPreferences merges overrides. Overriding a mandatory type is accepted
// and stored, but has no effect while the type is mandatory (the matrix
// shows it as mandatory).
func (h *UsersHandler) putPreferences(ctx context.Context, req *request) response {
	var pr preferencesRequest
	userID, p := decodeUserBody(req, &pr)
	if p != nil {
		return problemResponse(p)
	}
	v, resp := h.mergePreferences(ctx, userID, &pr, false)
	if v == nil {
		return resp
	}
	return response{status: http.StatusOK, body: v}
}

// mergePreferences checks and merges a decoded PUT body for userID (the
// service and the user's own route alike). refuseMandatoryOff refuses
// turning a mandatory type's channel off (422 mandatory_type) instead of
// storing an override without effect.
func (h *preferenceRules) mergePreferences(ctx context.Context, userID string, pr *preferencesRequest, refuseMandatoryOff bool) (*preferencesView, response) {
	if pr.Preferences == nil {
		return nil, problemResponse(fieldProblem(http.StatusBadRequest, "missing_field", "/preferences", "preferences is required"))
	}
	changes, p := h.preferenceChanges(pr.Preferences)
	if p != nil {
		return nil, problemResponse(p)
	}
	if refuseMandatoryOff {
		if p := h.mandatoryOff(changes); p != nil {
			return nil, problemResponse(p)
		}
	}
	var prefs domain.Preferences
	var err error
	if len(changes) == 0 {
		prefs, err = h.preferences.GetPreferences(ctx, userID)
	} else {
		prefs, err = h.preferences.MergePreferences(ctx, userID, changes)
	}
	if err != nil {
		return nil, h.storeError(ctx, "merge preferences", err, nil)
	}
	h.log.InfoContext(ctx, "preferences merged", "userId", userID, "types", len(changes), "outcome", "merged")
	return h.effectivePreferences(userID, prefs), response{}
}

// mandatoryOff reports the first change, in a stable order, that turns a
// mandatory type's channel off.
func (h *preferenceRules) mandatoryOff(changes map[string]map[domain.Channel]*bool) *Problem {
	for _, name := range slices.Sorted(maps.Keys(changes)) {
		typ, _ := h.catalog.Lookup(name)
		if !typ.Mandatory {
			continue
		}
		for _, c := range slices.Sorted(maps.Keys(changes[name])) {
			if on := changes[name][c]; on != nil && !*on {
				return fieldProblem(http.StatusUnprocessableEntity, "mandatory_type",
					"/preferences/"+escapePointer(name)+"/"+escapePointer(string(c)), "this type is mandatory: it cannot be turned off")
			}
		}
	}
	return nil
}

// preferenceChanges validates the requested overrides in a stable order.
func (h *preferenceRules) preferenceChanges(in map[string]json.RawMessage) (map[string]map[domain.Channel]*bool, *Problem) {
	out := map[string]map[domain.Channel]*bool{}
	for _, name := range slices.Sorted(maps.Keys(in)) {
		base := "/preferences/" + escapePointer(name)
		typ, ok := h.catalog.Lookup(name)
		if !ok {
			return nil, fieldProblem(http.StatusUnprocessableEntity, "unknown_type", base, "type is not in the catalog")
		}
		var byChannel map[string]json.RawMessage
		if err := json.Unmarshal(in[name], &byChannel); err != nil || byChannel == nil {
			return nil, fieldProblem(http.StatusBadRequest, "invalid_type", base, "each type maps channels to true, false or null")
		}
		for _, cs := range slices.Sorted(maps.Keys(byChannel)) {
			ptr := base + "/" + escapePointer(cs)
			c, err := domain.ParseChannel(cs)
			if err != nil {
				return nil, fieldProblem(http.StatusBadRequest, "invalid_channel", ptr, "channel must be email, sms or push")
			}
			if !typ.HasChannel(c) {
				return nil, fieldProblem(http.StatusUnprocessableEntity, "unsupported_channel", ptr, "the type is not delivered on this channel")
			}
			var on *bool
			if err := json.Unmarshal(byChannel[cs], &on); err != nil {
				return nil, fieldProblem(http.StatusBadRequest, "invalid_type", ptr, "must be true, false or null")
			}
			if out[name] == nil {
				out[name] = map[domain.Channel]*bool{}
			}
			out[name][c] = on
		}
	}
	return out, nil
}
