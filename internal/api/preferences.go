package api

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/policy"
)

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

func (h *Handler) effectivePreferences(userID string, prefs domain.Preferences) *preferencesView {
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

func (h *Handler) getPreferences(ctx context.Context, req *request) response {
	userID, p := pathUserID(req)
	if p != nil {
		return problemResponse(p)
	}
	prefs, err := h.preferences.GetPreferences(ctx, userID)
	if err != nil {
		return h.storeError(ctx, "get preferences", err, nil)
	}
	return response{status: http.StatusOK, body: h.effectivePreferences(userID, prefs)}
}

// putPreferences merges overrides. Overriding a mandatory type is accepted
// and stored, but has no effect while the type is mandatory (the matrix
// shows it as mandatory).
func (h *Handler) putPreferences(ctx context.Context, req *request) response {
	var pr preferencesRequest
	userID, p := decodeUserBody(req, &pr)
	if p != nil {
		return problemResponse(p)
	}
	if pr.Preferences == nil {
		return problemResponse(fieldProblem(http.StatusBadRequest, "missing_field", "/preferences", "preferences is required"))
	}
	changes, p := h.preferenceChanges(pr.Preferences)
	if p != nil {
		return problemResponse(p)
	}
	var prefs domain.Preferences
	var err error
	if len(changes) == 0 {
		prefs, err = h.preferences.GetPreferences(ctx, userID)
	} else {
		prefs, err = h.preferences.MergePreferences(ctx, userID, changes)
	}
	if err != nil {
		return h.storeError(ctx, "merge preferences", err, nil)
	}
	h.log.InfoContext(ctx, "preferences merged", "userId", userID, "types", len(changes), "outcome", "merged")
	return response{status: http.StatusOK, body: h.effectivePreferences(userID, prefs)}
}

// preferenceChanges validates the requested overrides in a stable order.
func (h *Handler) preferenceChanges(in map[string]json.RawMessage) (map[string]map[domain.Channel]*bool, *Problem) {
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
