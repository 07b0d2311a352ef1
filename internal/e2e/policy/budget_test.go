package policy

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
)

// setBudget sets a user's own notification budget as the preference
// center does: PUT /v1/me/preferences with the user's token.
func setBudget(t testing.TB, userID string, b domain.Budget) {
	t.Helper()
	st := stacktest.Stack(t)
	body := map[string]any{"budget": map[string]int{"perHour": b.PerHour, "perDay": b.PerDay}}
	if r := stacktest.Do(t, http.MethodPut, "/v1/me/preferences", body, "Authorization: Bearer "+st.Token(userID, time.Hour)); r.StatusCode != http.StatusOK {
		t.Fatalf("PUT /v1/me/preferences budget: %d %s", r.StatusCode, r.Body)
	}
}

// Issue 42 §1: over the catalog's NORMAL budget (5 an hour), the 6th and
// 7th NORMAL notifications of the hour are in the inbox at once, their
// emails wait (deferred: budget) and arrive as one budget digest when the
// budget frees — the 7th recorded digested, nothing sent twice — while a
// HIGH one goes out at once.
func TestSixthNormalInAnHourWaitsForTheBudgetDigest(t *testing.T) {
	user := uniqueUser(t)
	addr := user + "@example.com"
	putUser(t, domain.User{ID: user, Email: addr})
	var ids []string
	for range 7 {
		ids = append(ids, stacktest.Notify(t, reservation(user, addr, nil)))
	}
	for _, id := range ids[:5] {
		waitStatus(t, id, domain.ChannelEmail, domain.StatusSent, 15*time.Second)
	}
	lead := waitStatus(t, ids[5], domain.ChannelEmail, domain.StatusDeferred, 10*time.Second)
	if lead.Reason != domain.ReasonBudget || lead.DigestID != ids[5] || !lead.BudgetDigest {
		t.Fatalf("6th: %+v, want deferred: budget leading the budget digest", lead)
	}
	member := waitStatus(t, ids[6], domain.ChannelEmail, domain.StatusDeferred, 10*time.Second)
	if member.Reason != domain.ReasonBudget || member.DigestID != ids[5] {
		t.Fatalf("7th: %+v, want deferred: budget in the 6th's digest", member)
	}
	s := stacktest.Store(t)
	for _, id := range ids[5:] { // in the inbox at once
		if _, err := s.GetNotification(context.Background(), id); err != nil {
			t.Errorf("in-app item %s: %v", id, err)
		}
	}
	high := stacktest.Notify(t, reservation(user, addr, map[string]any{"priority": "high"}))
	waitStatus(t, high, domain.ChannelEmail, domain.StatusSent, 15*time.Second)
	if got := stacktest.EmailsTo(t, addr); len(got) != 6 {
		t.Fatalf("%d emails before the budget freed, want 6 (5 normal + 1 high)", len(got))
	}

	advanceTo(t, lead.DueAt.Add(time.Second))
	waitStatus(t, ids[5], domain.ChannelEmail, domain.StatusSent, 15*time.Second)
	if d := waitStatus(t, ids[6], domain.ChannelEmail, domain.StatusSkipped, 10*time.Second); d.Reason != domain.ReasonDigested {
		t.Errorf("7th after the digest: %+v, want skipped: digested", d)
	}
	settle()
	got := stacktest.EmailsTo(t, addr)
	if len(got) != 7 {
		t.Fatalf("%d emails, want 7 (the budget digest once)", len(got))
	}
	digest := got[len(got)-1]
	if digest.Subject != "2 notifications you have not seen yet" || strings.Count(digest.Body.Text, "Reservation confirmed") != 2 {
		t.Errorf("budget digest %q: %q", digest.Subject, digest.Body.Text)
	}
}

// A user's own budget (set through the preference center's route) replaces
// the catalog's: with 2 an hour, the third NORMAL notification waits.
func TestOwnBudgetIsHonoured(t *testing.T) {
	user := uniqueUser(t)
	addr := user + "@example.com"
	putUser(t, domain.User{ID: user, Email: addr})
	setBudget(t, user, domain.Budget{PerHour: 2, PerDay: 10})
	var ids []string
	for range 3 {
		ids = append(ids, stacktest.Notify(t, reservation(user, addr, nil)))
	}
	for _, id := range ids[:2] {
		waitStatus(t, id, domain.ChannelEmail, domain.StatusSent, 15*time.Second)
	}
	if d := waitStatus(t, ids[2], domain.ChannelEmail, domain.StatusDeferred, 10*time.Second); d.Reason != domain.ReasonBudget {
		t.Errorf("3rd: %+v, want deferred: budget", d)
	}
}
