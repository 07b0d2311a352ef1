package attack

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

// /v1/me/preferences has no user in the path: whatever an attacker puts in
// the query, headers or body, their token reaches only their own matrix, and
// their changes never touch the victim's.
func TestMyPreferencesReachOnlyTheTokensUser(t *testing.T) {
	st := stacktest.Stack(t)
	victim, attacker := stacktest.UniqueID("victim"), stacktest.UniqueID("attacker")
	type cell struct {
		Enabled bool
		Source  string
	}
	type matrix struct {
		UserID      string
		Preferences map[string]map[string]cell
	}
	read := func(status int, raw []byte, _ http.Header) matrix {
		t.Helper()
		var m matrix
		if err := json.Unmarshal(raw, &m); status != http.StatusOK || err != nil {
			t.Fatalf("%d %s", status, trim(raw))
		}
		return m
	}
	// The victim's own change, through the service route.
	read(request(t, http.MethodPut, "/v1/users/"+victim+"/preferences", []byte(`{"preferences":{"comment.created":{"push":false}}}`), jsonHeader()))

	as := func(sub string) http.Header {
		h := jsonHeader()
		h.Set("Authorization", "Bearer "+st.Token(sub, time.Hour))
		return h
	}
	for _, path := range []string{"/v1/me/preferences?userId=" + victim, "/v1/me/preferences?sub=" + victim} {
		h := as(attacker)
		h.Set("X-User-Id", victim)
		m := read(request(t, http.MethodGet, path, nil, h))
		if m.UserID != attacker || m.Preferences["comment.created"]["push"] != (cell{Enabled: true, Source: "default"}) {
			t.Errorf("GET %s as the attacker answered %+v", path, m)
		}
	}
	m := read(request(t, http.MethodPut, "/v1/me/preferences?userId="+victim, []byte(`{"preferences":{"comment.created":{"push":true},"invoice.payment_failed":{"email":false}}}`), as(attacker)))
	if m.UserID != attacker || m.Preferences["invoice.payment_failed"]["email"].Enabled {
		t.Errorf("the attacker's PUT answered %+v", m)
	}
	v := read(request(t, http.MethodGet, "/v1/me/preferences", nil, as(victim)))
	if v.UserID != victim || v.Preferences["comment.created"]["push"] != (cell{Enabled: false, Source: "user"}) ||
		v.Preferences["invoice.payment_failed"]["email"] != (cell{Enabled: true, Source: "default"}) {
		t.Errorf("the victim's matrix after the attacker's PUT: %+v", v)
	}
}
