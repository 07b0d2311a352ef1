// Package campaigns tests campaigns end to end on a private local stack
// (reconciles every second): an inline audience and two uploaded chunks fan
// out to one email and one inbox item per user, the counts add up at done,
// a segment-"all" campaign reaches every profile of the stack once, a
// cancelled campaign stops sending, and refused requests write nothing.
// It moves the stack's clock, so it has a stack of its own.
package campaigns

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
)

func TestMain(m *testing.M) {
	if slices.Contains(os.Args[1:], "-test.run=^$") { // make bench: no benchmarks here
		os.Exit(m.Run())
	}
	stacktest.Main(m, devstack.Config{
		ScheduleInterval: time.Second,
		Overrides: map[string]string{
			"CampaignReconcileDelay": "1s",
			"CampaignScanSegments":   "4",
			// Low-priority email is the campaign's queue: let it drain quickly.
			"LowBatchSize": "10", "LowMaximumConcurrency": "4",
		},
	})
}

// campaign is GET /v1/campaigns/{id}.
type campaign struct {
	ID, Type, Priority, Status                            string
	Recipients, Notified, Sent, Skipped, Failed, Dropped  int
	CreatedAt                                             string
	StartedAt, FinishedAt, CancelledAt, SendAt, ExpiresAt *string
}

type problem struct{ Code, Pointer string }

func users(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s-%02d", prefix, i))
	}
	return out
}

func putUsers(t *testing.T, ids []string) {
	t.Helper()
	for _, u := range ids {
		if r := stacktest.Do(t, http.MethodPut, "/v1/users/"+u, fmt.Sprintf(`{"email":"%s@example.com"}`, u)); r.StatusCode != http.StatusOK && r.StatusCode != http.StatusCreated {
			t.Fatalf("put user %s: %d %s", u, r.StatusCode, r.Body)
		}
	}
}

func quoted(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = fmt.Sprintf("%q", id)
	}
	return "[" + strings.Join(q, ",") + "]"
}

func getCampaign(t *testing.T, id string) campaign {
	t.Helper()
	r := stacktest.Do(t, http.MethodGet, "/v1/campaigns/"+id, nil)
	if r.StatusCode != http.StatusOK {
		t.Fatalf("get campaign: %d %s", r.StatusCode, r.Body)
	}
	var c campaign
	r.JSON(t, &c)
	return c
}

func wantProblem(t *testing.T, r *stacktest.Response, status int, code string) {
	t.Helper()
	var p problem
	_ = json.Unmarshal(r.Body, &p)
	if r.StatusCode != status || p.Code != code {
		t.Fatalf("%s %s: %d %s, want %d %s", r.Request.Method, r.Request.URL.Path, r.StatusCode, r.Body, status, code)
	}
}

const content = `"type":"reservation.approved","channels":["email"],"data":{"reservationUrl":"https://example.com/r/1"}`

// TestCampaignFansOutOnce: 30 users with profiles across an inline list and
// two chunks, plus two ids without a profile and one user listed twice.
func TestCampaignFansOutOnce(t *testing.T) {
	run := stacktest.UniqueID("cmp")
	people := users(run, 0, 30)
	putUsers(t, people)
	ghost1, ghost2 := run+"-ghost1", run+"-ghost2" // no profile: skipped
	inline := append(slices.Clone(people[0:10]), ghost1)
	chunk0 := append(slices.Clone(people[10:20]), ghost2)
	chunk1 := append(slices.Clone(people[20:30]), people[0]) // listed inline too: skipped here

	body := `{` + content + `,"audience":{"userIds":` + quoted(inline) + `}}`
	key := "Idempotency-Key: " + run
	r := stacktest.Do(t, http.MethodPost, "/v1/campaigns", body, key)
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", r.StatusCode, r.Body)
	}
	var c campaign
	r.JSON(t, &c)
	if c.Status != "draft" || c.Priority != "low" || c.Recipients != len(inline) || r.Header.Get("Location") != "/v1/campaigns/"+c.ID {
		t.Fatalf("created %+v (Location %q), want a low-priority draft of %d recipients", c, r.Header.Get("Location"), len(inline))
	}
	// The same key and body replay; another body is refused.
	if again := stacktest.Do(t, http.MethodPost, "/v1/campaigns", body, key); again.StatusCode != http.StatusCreated || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %s (replayed %q)", again.StatusCode, again.Body, again.Header.Get("Idempotent-Replayed"))
	}
	wantProblem(t, stacktest.Do(t, http.MethodPost, "/v1/campaigns", strings.Replace(body, "/r/1", "/r/2", 1), key), http.StatusUnprocessableEntity, "idempotency_key_reused")

	for n, ids := range [][]string{chunk0, chunk1} {
		r := stacktest.Do(t, http.MethodPost, "/v1/campaigns/"+c.ID+"/recipients", fmt.Sprintf(`{"chunk":%d,"userIds":%s}`, n, quoted(ids)))
		if r.StatusCode != http.StatusOK {
			t.Fatalf("chunk %d: %d %s", n, r.StatusCode, r.Body)
		}
	}
	// A chunk replayed with its ids (any order) answers the same; with other ids 409.
	reversed := slices.Clone(chunk0)
	slices.Reverse(reversed)
	if r := stacktest.Do(t, http.MethodPost, "/v1/campaigns/"+c.ID+"/recipients", `{"chunk":0,"userIds":`+quoted(reversed)+`}`); r.StatusCode != http.StatusOK || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("chunk replay: %d %s", r.StatusCode, r.Body)
	}
	wantProblem(t, stacktest.Do(t, http.MethodPost, "/v1/campaigns/"+c.ID+"/recipients", `{"chunk":0,"userIds":["someone-else"]}`), http.StatusConflict, "chunk_conflict")

	r = stacktest.Do(t, http.MethodPost, "/v1/campaigns/"+c.ID+"/start", nil)
	if r.StatusCode != http.StatusAccepted {
		t.Fatalf("start: %d %s", r.StatusCode, r.Body)
	}
	wantProblem(t, stacktest.Do(t, http.MethodPost, "/v1/campaigns/"+c.ID+"/start", nil), http.StatusConflict, "campaign_not_draft")
	wantProblem(t, stacktest.Do(t, http.MethodPost, "/v1/campaigns/"+c.ID+"/recipients", `{"chunk":2,"userIds":["late"]}`), http.StatusConflict, "campaign_not_draft")
	// Another caller sees nothing.
	wantProblem(t, stacktest.Do(t, http.MethodGet, "/v1/campaigns/"+c.ID, nil, "X-Herald-Dev-Caller: other"), http.StatusNotFound, "campaign_not_found")

	stacktest.Eventually(t, 60*time.Second, "campaign done", func() bool {
		c = getCampaign(t, c.ID)
		return c.Status == "done"
	})
	total := len(inline) + len(chunk0) + len(chunk1)
	if c.Recipients != total || c.Notified != 30 || c.Sent != 30 || c.Skipped != 3 || c.Failed != 0 || c.Dropped != 0 || c.FinishedAt == nil {
		t.Errorf("done with %+v, want recipients %d = sent 30 + skipped 3, notified 30", c, total)
	}
	if c.Sent+c.Skipped+c.Failed+c.Dropped != c.Recipients {
		t.Errorf("counts do not add up: %+v", c)
	}
	st := stacktest.Stack(t)
	for _, u := range people {
		if got := len(stacktest.EmailsTo(t, u+"@example.com")); got != 1 {
			t.Errorf("%s received %d emails, want 1", u, got)
		}
		var page struct{ Items []struct{ ID string } }
		r := stacktest.Do(t, http.MethodGet, "/v1/users/"+u+"/inbox", nil, "Authorization: Bearer "+st.Token(u, time.Hour))
		r.JSON(t, &page)
		if len(page.Items) != 1 {
			t.Errorf("%s has %d inbox items, want 1", u, len(page.Items))
		}
	}
	wantProblem(t, stacktest.Do(t, http.MethodDelete, "/v1/campaigns/"+c.ID, nil), http.StatusConflict, "campaign_finished")
}

// TestRefusedCampaignsWriteNothing: a refused request under an
// Idempotency-Key leaves the key unused (a valid request with it creates).
func TestRefusedCampaignsWriteNothing(t *testing.T) {
	run := stacktest.UniqueID("cmp-refused")
	tooMany := users(run, 0, 1001)
	cases := []struct {
		name, body, code string
		status           int
	}{
		{"unknown type", `{"type":"no.such.type","audience":{"userIds":["u1"]}}`, "unknown_type", http.StatusUnprocessableEntity},
		{"missing variable", `{"type":"reservation.approved","audience":{"userIds":["u1"]}}`, "missing_variable", http.StatusUnprocessableEntity},
		{"audience over 1,000", `{` + content + `,"audience":{"userIds":` + quoted(tooMany) + `}}`, "audience_too_large", http.StatusUnprocessableEntity},
		{"bad user id", `{` + content + `,"audience":{"userIds":["a@b.c"]}}`, "invalid_user_id", http.StatusBadRequest},
		{"unknown field", `{` + content + `,"recipient":{"userId":"u1"}}`, "unknown_field", http.StatusBadRequest},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := fmt.Sprintf("Idempotency-Key: %s-%d", run, i)
			wantProblem(t, stacktest.Do(t, http.MethodPost, "/v1/campaigns", tc.body, key), tc.status, tc.code)
			r := stacktest.Do(t, http.MethodPost, "/v1/campaigns", `{`+content+`}`, key)
			if r.StatusCode != http.StatusCreated || r.Header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("the key was used by the refused request: %d %s", r.StatusCode, r.Body)
			}
		})
	}
	wantProblem(t, stacktest.Do(t, http.MethodGet, "/v1/campaigns/c0000000000000000000000000", nil), http.StatusNotFound, "campaign_not_found")
	wantProblem(t, stacktest.Do(t, http.MethodPost, "/v1/campaigns/c0000000000000000000000000/start", nil), http.StatusNotFound, "campaign_not_found")
}

// TestCancelledCampaignStopsSending: a campaign scheduled two hours ahead is
// fanned out (notifications created, deliveries deferred), then cancelled;
// when its time comes nothing is sent and every recipient ends dropped.
func TestCancelledCampaignStopsSending(t *testing.T) {
	st := stacktest.Stack(t)
	run := stacktest.UniqueID("cmp-cancel")
	people := users(run, 0, 12)
	putUsers(t, people)
	c := startScheduled(t, people, st.Clock.Now().Add(2*time.Hour))
	stacktest.Eventually(t, 30*time.Second, "notifications created", func() bool { return getCampaign(t, c.ID).Notified == len(people) })

	r := stacktest.Do(t, http.MethodDelete, "/v1/campaigns/"+c.ID, nil)
	if r.StatusCode != http.StatusOK {
		t.Fatalf("cancel: %d %s", r.StatusCode, r.Body)
	}
	if again := stacktest.Do(t, http.MethodDelete, "/v1/campaigns/"+c.ID, nil); again.StatusCode != http.StatusOK {
		t.Fatalf("cancel again: %d %s", again.StatusCode, again.Body)
	}
	// Their time comes: the scheduler releases them, the workers drop them.
	stacktest.Do(t, http.MethodPost, "/_dev/clock", `{"advance":"3h"}`)
	stacktest.Eventually(t, 60*time.Second, "cancelled campaign settled", func() bool {
		c = getCampaign(t, c.ID)
		return c.FinishedAt != nil
	})
	if c.Status != "cancelled" || c.Dropped != len(people) || c.Sent != 0 || c.Recipients != len(people) {
		t.Errorf("cancelled campaign ended %+v, want every recipient dropped", c)
	}
	for _, u := range people {
		if got := len(stacktest.EmailsTo(t, u+"@example.com")); got != 0 {
			t.Errorf("%s received %d emails from a cancelled campaign", u, got)
		}
		// The campaign's caller reads the notification: its email was
		// dropped for the cancel, not for anything else.
		var n struct {
			Deliveries map[string]struct{ Status, Reason string }
		}
		stacktest.Do(t, http.MethodGet, "/v1/notifications/"+domain.CampaignNotificationID(c.ID, u), nil).JSON(t, &n)
		if d := n.Deliveries["email"]; d.Status != "dropped" || d.Reason != "cancelled" {
			t.Errorf("%s: email delivery %+v, want dropped: cancelled", u, d)
		}
	}

	// A cancelled draft drops its recipients at once.
	r = stacktest.Do(t, http.MethodPost, "/v1/campaigns", `{`+content+`,"audience":{"userIds":`+quoted(people[:3])+`}}`)
	r.JSON(t, &c)
	r = stacktest.Do(t, http.MethodDelete, "/v1/campaigns/"+c.ID, nil)
	r.JSON(t, &c)
	if c.Status != "cancelled" || c.Dropped != 3 || c.FinishedAt == nil {
		t.Errorf("cancelled draft %+v, want 3 dropped and finished", c)
	}
	wantProblem(t, stacktest.Do(t, http.MethodPost, "/v1/campaigns/"+c.ID+"/start", nil), http.StatusConflict, "campaign_not_draft")
}

// startScheduled creates and starts a campaign to people, sent at sendAt.
func startScheduled(t *testing.T, people []string, sendAt time.Time) campaign {
	t.Helper()
	r := stacktest.Do(t, http.MethodPost, "/v1/campaigns", `{`+content+`,"sendAt":"`+sendAt.UTC().Format(time.RFC3339)+`","audience":{"userIds":`+quoted(people)+`}}`)
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", r.StatusCode, r.Body)
	}
	var c campaign
	r.JSON(t, &c)
	if r := stacktest.Do(t, http.MethodPost, "/v1/campaigns/"+c.ID+"/start", nil); r.StatusCode != http.StatusAccepted {
		t.Fatalf("start: %d %s", r.StatusCode, r.Body)
	}
	return c
}

// TestMalformedCampaignMessageGoesToDLQ: a body that is no campaign step is
// made visible again at once on each receive and parked in CampaignDLQ.
func TestMalformedCampaignMessageGoesToDLQ(t *testing.T) {
	st := stacktest.Stack(t)
	stacktest.SendWork(t, "CampaignQueue", `{"kind":"lot","campaignId":"c-nochunk"}`)
	stacktest.Eventually(t, 60*time.Second, "the malformed message in CampaignDLQ", func() bool {
		depths, err := st.QueueDepths(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range depths {
			if q.LogicalID == "CampaignDLQ" {
				return q.Visible == 1
			}
		}
		t.Fatal("no CampaignDLQ")
		return false
	})
}

// TestSegmentAllReachesEveryProfile: {"segment":"all"} reaches every user
// with a profile in this stack's table exactly once (this test's users, and
// whatever users the package's other tests made, whatever their order), in
// CampaignScanSegments parallel scan segments of the profiles index; the
// counts add up at done; uploads are refused.
func TestSegmentAllReachesEveryProfile(t *testing.T) {
	st := stacktest.Stack(t)
	run := stacktest.UniqueID("cmp-all")
	people := users(run, 0, 15)
	putUsers(t, people)
	r := stacktest.Do(t, http.MethodPost, "/v1/campaigns", `{`+content+`,"audience":{"segment":"all"}}`)
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", r.StatusCode, r.Body)
	}
	var c campaign
	r.JSON(t, &c)
	if c.Status != "draft" || c.Recipients != 0 {
		t.Fatalf("created %+v, want a draft without recipients yet", c)
	}
	wantProblem(t, stacktest.Do(t, http.MethodPost, "/v1/campaigns/"+c.ID+"/recipients", `{"chunk":0,"userIds":["u1"]}`), http.StatusConflict, "segment_audience")
	if r := stacktest.Do(t, http.MethodPost, "/v1/campaigns/"+c.ID+"/start", nil); r.StatusCode != http.StatusAccepted {
		t.Fatalf("start: %d %s", r.StatusCode, r.Body)
	}
	stacktest.Eventually(t, 90*time.Second, "segment campaign done", func() bool {
		c = getCampaign(t, c.ID)
		return c.Status == "done"
	})
	if c.Recipients < len(people) || c.Notified != c.Recipients || c.Sent+c.Skipped+c.Failed+c.Dropped != c.Recipients {
		t.Errorf("done with %+v: want every profile (≥ %d) notified, counts adding up", c, len(people))
	}
	for _, u := range people {
		if got := len(stacktest.EmailsTo(t, u+"@example.com")); got != 1 {
			t.Errorf("%s received %d emails, want 1", u, got)
		}
		if r := stacktest.Do(t, http.MethodGet, "/v1/notifications/"+domain.CampaignNotificationID(c.ID, u), nil); r.StatusCode != http.StatusOK {
			t.Errorf("%s: no notification of the campaign: %d", u, r.StatusCode)
		}
		var page struct{ Items []struct{ ID string } }
		stacktest.Do(t, http.MethodGet, "/v1/users/"+u+"/inbox", nil, "Authorization: Bearer "+st.Token(u, time.Hour)).JSON(t, &page)
		if len(page.Items) != 1 || page.Items[0].ID != domain.CampaignNotificationID(c.ID, u) {
			t.Errorf("%s inbox %+v, want the campaign's one item", u, page.Items)
		}
	}
}
