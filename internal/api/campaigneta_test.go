package api

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/policy"
)

// newPacedCampaignAPI is newCampaignAPI with an email quota of 10/s (bulk
// share 60 %: 5 recipients a second for a low campaign) and a 2 s
// reconcile delay.
func newPacedCampaignAPI() *campaignAPI {
	ca := newCampaignAPI()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	pace := policy.PaceSettings{Quotas: map[domain.Channel]policy.SendQuota{domain.ChannelEmail: {Rate: 10, BulkShare: 60}}, ReconcileDelay: 2 * time.Second}
	ca.h = New(Deps{Log: log, Campaigns: NewCampaigns(CampaignsDeps{Campaigns: ca.store, CampaignQueue: ca.queue, Catalog: catalog.MustLoad(),
		Pace: pace, Now: func() time.Time { return testNow }, Log: log})})
	return ca
}

func userIDs(prefix string, n int) string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%q", fmt.Sprintf("%s%d", prefix, i))
	}
	return "[" + strings.Join(ids, ",") + "]"
}

func pacedCampaign(ids, expiresAt string) string {
	exp := ""
	if expiresAt != "" {
		exp = `,"expiresAt":"` + expiresAt + `"`
	}
	return `{"type":"reservation.approved","data":{"reservationUrl":"https://example.com/r/1"},"channels":["email"],"audience":{"userIds":` + ids + `}` + exp + `}`
}

// TestCampaignEstimateRoutes: POST answers the estimate for the inline
// audience before start (100 recipients at 5/s: 20 s plus the 2 s recount and the 2 s quota
// deferral)
// with the rate it assumes; start answers it for the uploaded recipients
// too; GET answers it; a campaign that cannot finish before its expiresAt
// is refused 422 exceeds_window, at creation for its inline audience and at
// start (back to draft, nothing sent) for its uploaded one.
func TestCampaignEstimateRoutes(t *testing.T) {
	ca := newPacedCampaignAPI()
	resp := ca.call(t, "POST /v1/campaigns", "", pacedCampaign(userIDs("u", 100), testNow.Add(time.Hour).Format(time.RFC3339)))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, resp.Body)
	}
	v := decodeBody[campaignView](t, resp.Body)
	want := formatTime(testNow.Add(24 * time.Second))
	if v.EstimatedCompletionAt == nil || *v.EstimatedCompletionAt != want || v.Estimate == nil {
		t.Fatalf("estimate %v %+v, want %s", v.EstimatedCompletionAt, v.Estimate, want)
	}
	e := v.Estimate
	if e.RecipientsLeft != 100 || e.RecipientsPerSecond != 5 || e.FanOutPerSecond != nil || e.TailSeconds != 4 ||
		len(e.Channels) != 1 || e.Channels[0].Channel != "email" || e.Channels[0].SendsPerSecond == nil || *e.Channels[0].SendsPerSecond != 5 {
		t.Fatalf("estimate %+v %+v", e, e.Channels)
	}
	if r := ca.call(t, "GET /v1/campaigns/{id}", v.ID, ""); !strings.Contains(r.Body, `"estimatedCompletionAt":"`+want+`"`) {
		t.Fatalf("GET: %s", r.Body)
	}

	// 100 inline plus 1,000 uploaded: 224 s, past an expiry 2 minutes on.
	resp = ca.call(t, "POST /v1/campaigns", "", pacedCampaign(userIDs("u", 100), testNow.Add(2*time.Minute).Format(time.RFC3339)))
	v = decodeBody[campaignView](t, resp.Body)
	if r := ca.call(t, "POST /v1/campaigns/{id}/recipients", v.ID, `{"chunk":0,"userIds":`+userIDs("w", 1000)+`}`); r.StatusCode != http.StatusOK {
		t.Fatalf("chunk: %d %s", r.StatusCode, r.Body)
	}
	r := ca.call(t, "POST /v1/campaigns/{id}/start", v.ID, "")
	if p := decodeProblem(t, r); p.Status != http.StatusUnprocessableEntity || p.Code != "exceeds_window" || p.Pointer != "/expiresAt" {
		t.Fatalf("start over the window: %d %s", r.StatusCode, r.Body)
	}
	if c := ca.store.campaigns[v.ID]; c.Status != domain.CampaignDraft || len(ca.queue.sent) != 0 {
		t.Fatalf("after the refused start: %s, %d messages sent; want draft, none", c.Status, len(ca.queue.sent))
	}

	// 1,000 inline at 5/s is 202 s: past an expiry 3 minutes on, refused at
	// creation; without expiresAt nothing bounds it.
	r = ca.call(t, "POST /v1/campaigns", "", pacedCampaign(userIDs("u", 1000), testNow.Add(3*time.Minute).Format(time.RFC3339)))
	if p := decodeProblem(t, r); p.Status != http.StatusUnprocessableEntity || p.Code != "exceeds_window" {
		t.Fatalf("create over the window: %d %s", r.StatusCode, r.Body)
	}
	if r := ca.call(t, "POST /v1/campaigns", "", pacedCampaign(userIDs("u", 1000), "")); r.StatusCode != http.StatusCreated {
		t.Fatalf("create without expiresAt: %d %s", r.StatusCode, r.Body)
	}
	resp = ca.call(t, "POST /v1/campaigns", "", pacedCampaign(userIDs("u", 100), ""))
	v = decodeBody[campaignView](t, resp.Body)
	r = ca.call(t, "POST /v1/campaigns/{id}/start", v.ID, "")
	if sv := decodeBody[campaignView](t, r.Body); r.StatusCode != http.StatusAccepted || sv.EstimatedCompletionAt == nil || *sv.EstimatedCompletionAt != want {
		t.Fatalf("start: %d %s, want the estimate %s", r.StatusCode, r.Body, want)
	}
}

// TestCampaignWithoutPace: no quota known (herald dev's default): the
// estimate is null and nothing is refused.
func TestCampaignWithoutPace(t *testing.T) {
	ca := newCampaignAPI()
	resp := ca.call(t, "POST /v1/campaigns", "", pacedCampaign(userIDs("u", 1000), testNow.Add(time.Second).Format(time.RFC3339)))
	if resp.StatusCode != http.StatusCreated || !strings.Contains(resp.Body, `"estimatedCompletionAt":null`) || strings.Contains(resp.Body, `"estimate"`) {
		t.Fatalf("create: %d %s", resp.StatusCode, resp.Body)
	}
}
