package ops

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/ops"
)

// TestCampaignDLQRedrive: a running campaign whose plan step the campaign
// function gave up on (parked in CampaignDLQ, as SQS's redrive does after
// three failures), next to a cancelled campaign's plan step and a malformed
// body, is listed and shown (campaign, step, status; no recipient), and
// redriven: the running campaign's plan goes back to CampaignQueue unchanged
// and its recipients get their email once; the cancelled campaign's step is
// redriven too and sends nothing; the malformed body stays until purged.
func TestCampaignDLQRedrive(t *testing.T) {
	ctx := context.Background()
	run := stacktest.UniqueID("cdlq")
	var people, addrs []string
	for i := range 3 {
		u := fmt.Sprintf("%s-%d", run, i)
		addr := u + "@example.com"
		if r := stacktest.Do(t, http.MethodPut, "/v1/users/"+u, fmt.Sprintf(`{"email":%q}`, addr)); r.StatusCode != http.StatusOK && r.StatusCode != http.StatusCreated {
			t.Fatalf("put user: %d %s", r.StatusCode, r.Body)
		}
		people, addrs = append(people, u), append(addrs, addr)
	}
	create := func(ids []string) string {
		t.Helper()
		body := fmt.Sprintf(`{"type":"reservation.approved","channels":["email"],"data":{"reservationUrl":"https://example.com/r/1"},"audience":{"userIds":["%s"]}}`,
			strings.Join(ids, `","`))
		r := stacktest.Do(t, http.MethodPost, "/v1/campaigns", body)
		if r.StatusCode != http.StatusCreated {
			t.Fatalf("create campaign: %d %s", r.StatusCode, r.Body)
		}
		var c struct{ ID string }
		r.JSON(t, &c)
		return c.ID
	}
	running, cancelled := create(people), create(people[:1])
	// Started as the API starts it, but its plan step never ran: it failed and
	// was parked.
	c, err := stacktest.Store(t).GetCampaign(ctx, running)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stacktest.Store(t).StartCampaign(ctx, running, c.Caller); err != nil {
		t.Fatal(err)
	}
	if r := stacktest.Do(t, http.MethodDelete, "/v1/campaigns/"+cancelled, nil); r.StatusCode != http.StatusOK {
		t.Fatalf("cancel: %d %s", r.StatusCode, r.Body)
	}
	planOf := func(id string) string { return `{"kind":"plan","campaignId":"` + id + `"}` }
	const malformed = `{"kind":"lot","campaignId":"c-nochunk"}`
	for _, b := range []string{planOf(running), planOf(cancelled), malformed} {
		stacktest.SendWork(t, "CampaignDLQ", b)
	}

	if q := depth(t, "campaign"); q.Depth != 3 || q.Queue != "herald-CampaignDLQ" {
		t.Fatalf("list: %+v", q)
	}
	var parked []ops.Parked
	heraldJSON(t, &parked, "show", "campaign")
	statuses := map[string]string{}
	malformedSeen := false
	for _, p := range parked {
		switch {
		case p.Campaign != nil && p.Campaign.Kind == "plan":
			statuses[p.Campaign.CampaignID] = p.Campaign.CampaignStatus
		case p.Campaign == nil && strings.Contains(p.Problem, "malformed"):
			malformedSeen = true
		}
	}
	if len(parked) != 3 || statuses[running] != "running" || statuses[cancelled] != "cancelled" || !malformedSeen {
		t.Fatalf("show: %+v", parked)
	}
	out, err := herald(t, "show", "campaign")
	if err != nil || !strings.Contains(out, running+" (running)") || !strings.Contains(out, "malformed body") {
		t.Errorf("show (text): %v\n%s", err, out)
	}
	for _, u := range people {
		if strings.Contains(out, u) {
			t.Errorf("show prints recipient %s:\n%s", u, out)
		}
	}

	var res ops.RedriveResult
	heraldJSON(t, &res, "redrive", "campaign", "--all", "--rate", "20/s")
	notes := map[string]string{}
	for _, it := range res.Items {
		switch {
		case it.Action == ops.ActionResend && it.Done && it.Campaign != nil:
			notes[it.Campaign.CampaignID] = it.Note
		case it.Action != ops.ActionLeave:
			t.Errorf("item %+v", it)
		}
	}
	if len(res.Items) != 3 || res.Count(ops.ActionResend) != 2 || res.Count(ops.ActionLeave) != 1 ||
		!strings.Contains(notes[running], "runs again") || !strings.Contains(notes[cancelled], "does nothing") {
		t.Fatalf("redrive: %+v", res)
	}
	stacktest.Eventually(t, 90*time.Second, "the campaign's emails", func() bool {
		for _, a := range addrs {
			if len(stacktest.EmailsTo(t, a)) == 0 {
				return false
			}
		}
		return true
	})
	time.Sleep(2 * time.Second)
	for i, a := range addrs {
		// The first user is in the cancelled campaign too: still one email.
		if n := len(stacktest.EmailsTo(t, a)); n != 1 {
			t.Errorf("user %d: %d emails, want exactly 1", i, n)
		}
	}
	if c, err := stacktest.Store(t).GetCampaign(ctx, cancelled); err != nil || c.Status != domain.CampaignCancelled {
		t.Errorf("cancelled campaign after its step ran: %+v %v", c, err)
	}
	if q := depth(t, "campaign"); q.Depth != 1 {
		t.Errorf("campaign DLQ after redrive: %+v, want the malformed message only", q)
	}
	if out, err := herald(t, "purge", "campaign", "--yes"); err != nil || !strings.Contains(out, "purged the campaign DLQ") {
		t.Errorf("purge: %v\n%s", err, out)
	}
	stacktest.Eventually(t, 30*time.Second, "an empty campaign DLQ", func() bool { return depth(t, "campaign").Depth == 0 })
}
