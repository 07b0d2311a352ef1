package api

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
)

// With the stack's LinkHosts set, a notification's or a campaign's link
// variable on another host is refused at intake with a problem naming the
// variable; one on an allowed host is accepted.
func TestLinkHostsRefuseOtherHostsAtIntake(t *testing.T) {
	ta := newTestAPI(t)
	policy, err := domain.ParseLinkPolicy("example.com,*.example.com")
	if err != nil {
		t.Fatal(err)
	}
	linked := catalog.MustLoad().WithLinkPolicy(policy)
	ta.notifications.catalog = linked
	send := func(link string) (int, problemBody) {
		body := `{"type":"invoice.payment_failed","recipient":{"userId":"u1","email":"u1@example.com"},"data":{"invoiceUrl":"` + link + `"}}`
		resp := ta.do(t, apiCall{route: "POST /v1/notifications", body: body, caller: "svc"})
		if resp.StatusCode == http.StatusAccepted {
			return resp.StatusCode, problemBody{}
		}
		return resp.StatusCode, decodeProblem(t, resp)
	}
	if status, _ := send("https://pay.example.com/i/9"); status != http.StatusAccepted {
		t.Errorf("an allowed host: %d", status)
	}
	for _, link := range []string{"https://evil.example.net/i/9", "https://example.com.evil.net/i/9", "http://pay.example.com/i/9"} {
		status, p := send(link)
		if status != http.StatusUnprocessableEntity || p.Code != "link_not_allowed" || p.Pointer != "/data/invoiceUrl" || !strings.Contains(p.Detail, "LinkHosts") {
			t.Errorf("%s: %d %+v, want 422 link_not_allowed at /data/invoiceUrl", link, status, p)
		}
	}
	ca := newCampaignAPI()
	ca.h = New(Deps{Log: ta.notifications.log, Campaigns: NewCampaigns(CampaignsDeps{Campaigns: ca.store, CampaignQueue: ca.queue, Catalog: linked,
		Now: func() time.Time { return testNow }, Log: ta.notifications.log})})
	resp := ca.call(t, "POST /v1/campaigns", "", `{"type":"reservation.approved","data":{"reservationUrl":"https://evil.example.net/r"}}`)
	if p := decodeProblem(t, resp); resp.StatusCode != http.StatusUnprocessableEntity || p.Code != "link_not_allowed" || p.Pointer != "/data/reservationUrl" {
		t.Errorf("campaign: %d %+v, want 422 link_not_allowed", resp.StatusCode, p)
	}
}
