package events

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	wire "github.com/heraldhq/herald/client/events"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

// campaignEvents are the Campaign State Change events of one campaign, in
// the order the bus received them.
func campaignEvents(t testing.TB, id string) ([]wire.CampaignDetail, []busEvent) {
	t.Helper()
	var details []wire.CampaignDetail
	var raw []busEvent
	for _, e := range busEvents(t) {
		if e.DetailType != wire.CampaignDetailType {
			continue
		}
		var d wire.CampaignDetail
		if err := json.Unmarshal(e.Detail, &d); err != nil {
			t.Fatalf("detail %s: %v", e.Detail, err)
		}
		if d.CampaignID == id {
			details, raw = append(details, d), append(raw, e)
		}
	}
	return details, raw
}

// byStatus is the event of each status; a status published twice is an
// error (the stream's old image tells a transition from any other update of
// the campaign, so each state is published once).
func byStatus(t testing.TB, ds []wire.CampaignDetail) map[string]wire.CampaignDetail {
	t.Helper()
	out := map[string]wire.CampaignDetail{}
	for _, d := range ds {
		if d.Status == wire.CampaignProgress { // one per tenth crossed: checked on its own
			continue
		}
		if prev, ok := out[d.Status]; ok {
			t.Errorf("campaign %s %s published twice: %s %+v, then %s %+v", d.CampaignID, d.Status, prev.EventID, prev.Counts, d.EventID, d.Counts)
		}
		out[d.Status] = d
	}
	return out
}

// createCampaign creates and starts a campaign of reservation.approved
// emails to users (their profiles created), optionally scheduled.
func createCampaign(t *testing.T, users []string, sendAt string) string {
	t.Helper()
	for _, u := range users {
		if r := stacktest.Do(t, http.MethodPut, "/v1/users/"+u, fmt.Sprintf(`{"email":"%s@example.com"}`, u)); r.StatusCode != http.StatusOK && r.StatusCode != http.StatusCreated {
			t.Fatalf("put user %s: %d %s", u, r.StatusCode, r.Body)
		}
	}
	body := map[string]any{"type": "reservation.approved", "channels": []string{"email"}, "data": map[string]string{"reservationUrl": "https://example.com/r/1"},
		"audience": map[string]any{"userIds": users}}
	if sendAt != "" {
		body["sendAt"] = sendAt
	}
	r := stacktest.Do(t, http.MethodPost, "/v1/campaigns", body)
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", r.StatusCode, r.Body)
	}
	var c struct{ ID string }
	r.JSON(t, &c)
	if r := stacktest.Do(t, http.MethodPost, "/v1/campaigns/"+c.ID+"/start", nil); r.StatusCode != http.StatusAccepted {
		t.Fatalf("start: %d %s", r.StatusCode, r.Body)
	}
	return c.ID
}

// TestCampaignEvents: a campaign of four users publishes exactly started and
// then finished with its counts; a scheduled one cancelled after its fan-out
// publishes exactly started and cancelled, never finished, although the
// reconciler updates both campaigns' counts while they run (between them,
// a progress event for each tenth of the recipients crossed, once). Every event validates
// against events/schemas/campaign-state-change.json and names no recipient.
func TestCampaignEvents(t *testing.T) {
	st := stacktest.Stack(t)
	run := stacktest.UniqueID("cev")
	users := func(prefix string) []string {
		return []string{run + prefix + "-0", run + prefix + "-1", run + prefix + "-2", run + prefix + "-3"}
	}
	done := createCampaign(t, users("d"), "")
	sendAt := st.Clock.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)
	cancelled := createCampaign(t, users("c"), sendAt)

	stacktest.Eventually(t, 60*time.Second, "the finished event", func() bool {
		ds, _ := campaignEvents(t, done)
		return slices.ContainsFunc(ds, func(d wire.CampaignDetail) bool { return d.Status == wire.CampaignFinished })
	})
	stacktest.Eventually(t, settle, "the scheduled campaign fanned out", func() bool {
		var c struct{ Notified int }
		stacktest.Do(t, http.MethodGet, "/v1/campaigns/"+cancelled, nil).JSON(t, &c)
		return c.Notified == 4
	})
	if r := stacktest.Do(t, http.MethodDelete, "/v1/campaigns/"+cancelled, nil); r.StatusCode != http.StatusOK {
		t.Fatalf("cancel: %d %s", r.StatusCode, r.Body)
	}
	stacktest.Eventually(t, settle, "the cancelled event", func() bool {
		ds, _ := campaignEvents(t, cancelled)
		return slices.ContainsFunc(ds, func(d wire.CampaignDetail) bool { return d.Status == wire.CampaignCancelled })
	})

	sch := schemas(t)
	for _, c := range []struct {
		id   string
		want []string
	}{{done, []string{wire.CampaignStarted, wire.CampaignFinished}}, {cancelled, []string{wire.CampaignStarted, wire.CampaignCancelled}}} {
		ds, raw := campaignEvents(t, c.id)
		var order []string
		var progress []wire.CampaignDetail
		for i, d := range ds {
			validate(t, sch, raw[i])
			if raw[i].Source != wire.Source || d.Type != "reservation.approved" || d.Caller == "" || d.Version != wire.Version || d.Counts.Recipients != 4 {
				t.Errorf("%s: event %s %s", c.id, raw[i].Source, raw[i].Detail)
			}
			if strings.Contains(string(raw[i].Detail), run) || strings.Contains(string(raw[i].Detail), "@") {
				t.Errorf("%s: event names a recipient: %s", c.id, raw[i].Detail)
			}
			if d.Status == wire.CampaignProgress { // a tenth of the recipients crossed: between started and the end
				if len(order) != 1 {
					t.Errorf("%s: progress after %v", c.id, order)
				}
				progress = append(progress, d)
				continue
			}
			order = append(order, d.Status)
		}
		for i := 1; i < len(progress); i++ {
			if p, q := progress[i-1], progress[i]; q.EventID == p.EventID || q.Counts.Sent+q.Counts.Dropped <= p.Counts.Sent+p.Counts.Dropped {
				t.Errorf("%s: progress %+v then %+v: want each tenth once, ascending", c.id, p, q)
			}
		}
		if !slices.Equal(order, c.want) {
			t.Errorf("campaign %s: events %v, want exactly %v", c.id, order, c.want)
		}
		last := byStatus(t, ds)
		switch c.id {
		case done:
			if f := last[wire.CampaignFinished].Counts; f != (wire.CampaignCounts{Recipients: 4, Notified: 4, Sent: 4}) {
				t.Errorf("finished with counts %+v, want 4 recipients notified and sent", f)
			}
		case cancelled:
			if k := last[wire.CampaignCancelled].Counts; k.Recipients != 4 || k.Notified != 4 || k.Sent != 0 {
				t.Errorf("cancelled with counts %+v, want 4 recipients notified, none sent", k)
			}
		}
	}
}
