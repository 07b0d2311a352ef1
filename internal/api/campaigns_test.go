package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
)

// fakeCampaigns holds campaigns and chunks in memory with the store's
// conditional semantics.
type fakeCampaigns struct {
	mu        sync.Mutex
	campaigns map[string]*domain.Campaign
	chunks    map[string]string // id/chunk → hash
	writes    int
}

var _ CampaignStore = (*fakeCampaigns)(nil)

func (f *fakeCampaigns) CreateCampaign(_ context.Context, c *domain.Campaign, inline []string, inlineHash string) (*domain.Campaign, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if existing, ok := f.campaigns[c.ID]; ok {
		cp := *existing
		return &cp, domain.ErrConflict
	}
	if len(inline) > 0 {
		c.Chunks, c.Recipients = 1, len(inline)
		f.chunks[c.ID+"/"+domain.InlineChunk] = inlineHash
	}
	cp := *c
	f.campaigns[c.ID] = &cp
	f.writes++
	return c, nil
}

func (f *fakeCampaigns) GetCampaign(_ context.Context, id string) (*domain.Campaign, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.campaigns[id]
	if !ok {
		return nil, domain.ErrNotFound
	}
	cp := *c
	return &cp, nil
}

func (f *fakeCampaigns) AddChunk(_ context.Context, id, caller, chunk string, ids []string, hash string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.campaigns[id]
	if !ok || c.Caller != caller {
		return false, domain.ErrNotFound
	}
	if h, ok := f.chunks[id+"/"+chunk]; ok {
		if h == hash {
			return false, nil
		}
		return false, domain.ErrChunkConflict
	}
	if c.Status != domain.CampaignDraft {
		return false, domain.ErrCampaignNotDraft
	}
	if c.Segment != "" {
		return false, domain.ErrSegmentAudience
	}
	f.chunks[id+"/"+chunk] = hash
	c.Chunks++
	c.Recipients += len(ids)
	f.writes++
	return true, nil
}

func (f *fakeCampaigns) move(id, caller string, from, to domain.CampaignStatus, notFrom error) (*domain.Campaign, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.campaigns[id]
	if !ok || c.Caller != caller {
		return nil, domain.ErrNotFound
	}
	if c.Status != from {
		return nil, notFrom
	}
	c.Status = to
	f.writes++
	cp := *c
	return &cp, nil
}

func (f *fakeCampaigns) StartCampaign(_ context.Context, id, caller string) (*domain.Campaign, error) {
	c, err := f.move(id, caller, domain.CampaignDraft, domain.CampaignRunning, domain.ErrCampaignNotDraft)
	if err == nil {
		f.mu.Lock()
		f.campaigns[id].StartedAt = testNow
		f.mu.Unlock()
		c.StartedAt = testNow
	}
	return c, err
}

func (f *fakeCampaigns) RevertStart(_ context.Context, id string, startedAt time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.campaigns[id]; c.Status == domain.CampaignRunning && c.StartedAt.Equal(startedAt) {
		c.Status, c.StartedAt = domain.CampaignDraft, time.Time{}
	}
	return nil
}

func (f *fakeCampaigns) CancelCampaign(_ context.Context, id, caller string) (*domain.Campaign, error) {
	if c, err := f.move(id, caller, domain.CampaignDraft, domain.CampaignCancelled, domain.ErrCampaignNotDraft); !errors.Is(err, domain.ErrCampaignNotDraft) {
		return c, err
	}
	return f.move(id, caller, domain.CampaignRunning, domain.CampaignCancelled, domain.ErrCampaignFinished)
}

type fakeCampaignQueue struct {
	mu   sync.Mutex
	sent []domain.CampaignMessage
	fail error
}

func (q *fakeCampaignQueue) SendCampaign(_ context.Context, msgs []domain.CampaignMessage, _ time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.fail != nil {
		return q.fail
	}
	q.sent = append(q.sent, msgs...)
	return nil
}

type campaignAPI struct {
	h     *Handler
	store *fakeCampaigns
	queue *fakeCampaignQueue
}

func newCampaignAPI() *campaignAPI {
	ca := &campaignAPI{store: &fakeCampaigns{campaigns: map[string]*domain.Campaign{}, chunks: map[string]string{}}, queue: &fakeCampaignQueue{}}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ca.h = New(Deps{Log: log, Campaigns: NewCampaigns(CampaignsDeps{Campaigns: ca.store, CampaignQueue: ca.queue, Catalog: catalog.MustLoad(),
		Now: func() time.Time { return testNow }, Log: log})})
	return ca
}

func (ca *campaignAPI) call(t *testing.T, route, id, body string, headers ...string) events.APIGatewayV2HTTPResponse {
	t.Helper()
	ta := &testAPI{h: ca.h}
	c := apiCall{route: route, body: body, caller: "svc", headers: map[string]string{}}
	if id != "" {
		c.params = map[string]string{"id": id}
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		if k == "caller" {
			c.caller = strings.TrimSpace(v)
			continue
		}
		c.headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return ta.do(t, c)
}

const validCampaign = `{"type":"reservation.approved","data":{"reservationUrl":"https://example.com/r/1"},"channels":["email"],"audience":{"userIds":["u1","u2","u1"]}}`

func TestCreateCampaign(t *testing.T) {
	ca := newCampaignAPI()
	resp := ca.call(t, "POST /v1/campaigns", "", validCampaign, "Idempotency-Key: k1")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, resp.Body)
	}
	v := decodeBody[campaignView](t, resp.Body)
	if !validCampaignID(v.ID) || v.Status != "draft" || v.Priority != "low" || v.Recipients != 2 || v.StartedAt != nil || resp.Headers["Location"] != "/v1/campaigns/"+v.ID {
		t.Fatalf("created %+v, headers %v", v, resp.Headers)
	}
	c := ca.store.campaigns[v.ID]
	if c.Caller != "arn:aws:iam::123456789012:user/svc" || c.Data["reservationUrl"] != "https://example.com/r/1" || !slices.Equal(c.Channels, []domain.Channel{domain.ChannelEmail}) || !c.ExpiresAt.IsZero() {
		t.Fatalf("stored %+v", c)
	}
	// Same request, other spelling and id order: replayed. Other content: 422.
	same := `{"audience":{"userIds":["u2","u1"]},"channels":["email"],"type":"reservation.approved","data":{"reservationUrl":"https://example.com/r/1"},"priority":"low"}`
	if r := ca.call(t, "POST /v1/campaigns", "", same, "Idempotency-Key: k1"); r.StatusCode != http.StatusCreated || r.Headers[replayedHeader] != "true" || r.Body != resp.Body {
		t.Fatalf("replay: %d %s %v", r.StatusCode, r.Body, r.Headers)
	}
	r := ca.call(t, "POST /v1/campaigns", "", strings.Replace(validCampaign, "/r/1", "/r/2", 1), "Idempotency-Key: k1")
	if p := decodeProblem(t, r); p.Status != http.StatusUnprocessableEntity || p.Code != "idempotency_key_reused" {
		t.Fatalf("reused key: %s", r.Body)
	}
	if ca.store.writes != 1 {
		t.Errorf("%d writes, want 1", ca.store.writes)
	}
}

func TestCreateCampaignRefusals(t *testing.T) {
	ids := make([]string, 1001)
	for i := range ids {
		ids[i] = fmt.Sprintf("%q", fmt.Sprint("u", i))
	}
	tests := []struct {
		name, body    string
		status        int
		code, pointer string
	}{
		{"unknown type", `{"type":"nope"}`, 422, "unknown_type", "/type"},
		{"no type", `{"audience":{}}`, 400, "missing_field", "/type"},
		{"missing variable", `{"type":"reservation.approved"}`, 422, "missing_variable", "/data/reservationUrl"},
		{"bad priority", `{"type":"reservation.approved","priority":"urgent","data":{"reservationUrl":"https://e.com"}}`, 400, "invalid_priority", "/priority"},
		{"high priority", `{"type":"reservation.approved","priority":"high","data":{"reservationUrl":"https://e.com"}}`, 422, "campaign_priority_high", "/priority"},
		{"channel without template", `{"type":"otp.code","channels":["email"],"data":{"code":"123456"}}`, 422, "unsupported_channel", "/channels/0"},
		{"expired", `{"type":"reservation.approved","expiresAt":"2020-01-01T00:00:00Z","data":{"reservationUrl":"https://e.com"}}`, 400, "expires_in_past", "/expiresAt"},
		{"too many inline", `{"type":"reservation.approved","data":{"reservationUrl":"https://e.com"},"audience":{"userIds":[` + strings.Join(ids, ",") + `]}}`, 422, "audience_too_large", "/audience/userIds"},
		{"empty inline", `{"type":"reservation.approved","data":{"reservationUrl":"https://e.com"},"audience":{"userIds":[]}}`, 400, "invalid_audience", "/audience/userIds"},
		{"email as user id", `{"type":"reservation.approved","data":{"reservationUrl":"https://e.com"},"audience":{"userIds":["a@b.c"]}}`, 400, "invalid_user_id", "/audience/userIds/0"},
		{"both audiences", `{"type":"reservation.approved","data":{"reservationUrl":"https://e.com"},"audience":{"userIds":["u1"],"segment":"all"}}`, 400, "invalid_audience", "/audience"},
		{"unknown segment", `{"type":"reservation.approved","data":{"reservationUrl":"https://e.com"},"audience":{"segment":"vip"}}`, 422, "unknown_segment", "/audience/segment"},
		{"unknown member", `{"type":"reservation.approved","recipient":{"userId":"u1"}}`, 400, "unknown_field", "/recipient"},
		{"unknown audience member", `{"type":"reservation.approved","audience":{"users":["u1"]}}`, 400, "unknown_field", "/audience/users"},
		// The edge rules of issue 13, as for notifications.
		{"channels null", `{"type":"reservation.approved","channels":null,"data":{"reservationUrl":"https://e.com"}}`, 400, "invalid_type", "/channels"},
		{"channels a string", `{"type":"reservation.approved","channels":"email","data":{"reservationUrl":"https://e.com"}}`, 400, "invalid_type", "/channels"},
		{"inline user ids null", `{"type":"reservation.approved","data":{"reservationUrl":"https://e.com"},"audience":{"userIds":null}}`, 400, "invalid_type", "/audience/userIds"},
		{"data URL with user info", `{"type":"reservation.approved","data":{"reservationUrl":"https://evil.com@example.com/"}}`, 422, "invalid_variable", "/data/reservationUrl"},
		{"inline user id with a space", `{"type":"reservation.approved","data":{"reservationUrl":"https://e.com"},"audience":{"userIds":["u1","a b"]}}`, 400, "invalid_user_id", "/audience/userIds/1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ca := newCampaignAPI()
			resp := ca.call(t, "POST /v1/campaigns", "", tt.body)
			p := decodeProblem(t, resp)
			if p.Status != tt.status || p.Code != tt.code || p.Pointer != tt.pointer {
				t.Fatalf("%d %s %s, want %d %s %s", p.Status, p.Code, p.Pointer, tt.status, tt.code, tt.pointer)
			}
			if ca.store.writes != 0 {
				t.Errorf("a refused campaign wrote %d items", ca.store.writes)
			}
		})
	}
}

// TestSegmentAllCampaign: {"segment":"all"} creates a draft with the segment
// and no recipients; it takes no uploads (409 segment_audience).
func TestSegmentAllCampaign(t *testing.T) {
	ca := newCampaignAPI()
	resp := ca.call(t, "POST /v1/campaigns", "", `{"type":"reservation.approved","data":{"reservationUrl":"https://e.com"},"audience":{"segment":"all"}}`)
	v := decodeBody[campaignView](t, resp.Body)
	if resp.StatusCode != http.StatusCreated || v.Segment != domain.SegmentAll || v.Recipients != 0 || v.Status != "draft" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Body)
	}
	p := decodeProblem(t, ca.call(t, "POST /v1/campaigns/{id}/recipients", v.ID, `{"chunk":0,"userIds":["a"]}`))
	if p.Status != http.StatusConflict || p.Code != "segment_audience" {
		t.Fatalf("upload to a segment campaign: %d %s", p.Status, p.Code)
	}
}

func TestCampaignRecipientsStartAndCancel(t *testing.T) {
	ca := newCampaignAPI()
	id := decodeBody[campaignView](t, ca.call(t, "POST /v1/campaigns", "", `{"type":"reservation.approved","data":{"reservationUrl":"https://e.com"}}`).Body).ID
	chunk := func(body string) events.APIGatewayV2HTTPResponse {
		return ca.call(t, "POST /v1/campaigns/{id}/recipients", id, body)
	}
	if r := chunk(`{"chunk":0,"userIds":["a","b","a"]}`); r.StatusCode != http.StatusOK || r.Body != `{"chunk":0,"recipients":2}` || r.Headers[replayedHeader] != "" {
		t.Fatalf("chunk 0: %d %s", r.StatusCode, r.Body)
	}
	if r := chunk(`{"chunk":0,"userIds":["b","a"]}`); r.StatusCode != http.StatusOK || r.Headers[replayedHeader] != "true" {
		t.Fatalf("chunk 0 replay: %d %s %v", r.StatusCode, r.Body, r.Headers)
	}
	refusals := []struct {
		body   string
		status int
		code   string
	}{
		{`{"chunk":0,"userIds":["c"]}`, 409, "chunk_conflict"},
		{`{"userIds":["c"]}`, 400, "missing_field"},
		{`{"chunk":-1,"userIds":["c"]}`, 400, "invalid_chunk"},
		{`{"chunk":10000000000,"userIds":["c"]}`, 400, "invalid_chunk"},
		{`{"chunk":1.5,"userIds":["c"]}`, 400, "invalid_type"},
		{`{"chunk":1,"userIds":[]}`, 400, "invalid_audience"},
		{`{"chunk":1,"userIds":null}`, 400, "invalid_type"},
		{`{"chunk":1,"userIds":["c","carol@corp.example"]}`, 400, "invalid_user_id"},
	}
	for _, tt := range refusals {
		if p := decodeProblem(t, chunk(tt.body)); p.Status != tt.status || p.Code != tt.code {
			t.Errorf("%s: %d %s, want %d %s", tt.body, p.Status, p.Code, tt.status, tt.code)
		}
	}
	if p := decodeProblem(t, ca.call(t, "POST /v1/campaigns/{id}/recipients", id, `{"chunk":1,"userIds":["c"]}`, "caller: other")); p.Code != "campaign_not_found" {
		t.Errorf("another caller's campaign: %s", p.Code)
	}

	// A start whose planning message cannot be sent goes back to draft.
	ca.queue.fail = errors.New("sqs down")
	if r := ca.call(t, "POST /v1/campaigns/{id}/start", id, ""); r.StatusCode != http.StatusInternalServerError || ca.store.campaigns[id].Status != domain.CampaignDraft {
		t.Fatalf("start with the queue down: %d, status %s", r.StatusCode, ca.store.campaigns[id].Status)
	}
	ca.queue.fail = nil
	r := ca.call(t, "POST /v1/campaigns/{id}/start", id, "")
	if v := decodeBody[campaignView](t, r.Body); r.StatusCode != http.StatusAccepted || v.Status != "running" || v.Recipients != 2 || v.StartedAt == nil {
		t.Fatalf("start: %d %s", r.StatusCode, r.Body)
	}
	if want := []domain.CampaignMessage{{Kind: domain.CampaignPlan, CampaignID: id}}; !slices.Equal(ca.queue.sent, want) {
		t.Fatalf("sent %+v, want %+v", ca.queue.sent, want)
	}
	for _, route := range []string{"POST /v1/campaigns/{id}/start"} {
		if p := decodeProblem(t, ca.call(t, route, id, "")); p.Status != 409 || p.Code != "campaign_not_draft" {
			t.Errorf("%s on a running campaign: %d %s", route, p.Status, p.Code)
		}
	}
	if p := decodeProblem(t, chunk(`{"chunk":1,"userIds":["c"]}`)); p.Code != "campaign_not_draft" {
		t.Errorf("chunk after start: %s", p.Code)
	}
	if r := ca.call(t, "GET /v1/campaigns/{id}", id, ""); r.StatusCode != http.StatusOK || decodeBody[campaignView](t, r.Body).Status != "running" {
		t.Fatalf("get: %d %s", r.StatusCode, r.Body)
	}
	for _, probe := range []struct{ id, caller string }{{id, "other"}, {"c123", "svc"}, {"n" + id[1:], "svc"}} {
		if p := decodeProblem(t, ca.call(t, "GET /v1/campaigns/{id}", probe.id, "", "caller: "+probe.caller)); p.Status != 404 || p.Code != "campaign_not_found" {
			t.Errorf("GET %s as %s: %d %s", probe.id, probe.caller, p.Status, p.Code)
		}
	}
	if r := ca.call(t, "DELETE /v1/campaigns/{id}", id, ""); r.StatusCode != http.StatusOK || decodeBody[campaignView](t, r.Body).Status != "cancelled" {
		t.Fatalf("cancel: %d %s", r.StatusCode, r.Body)
	}
	ca.store.campaigns[id].Status = domain.CampaignDone
	if p := decodeProblem(t, ca.call(t, "DELETE /v1/campaigns/{id}", id, "")); p.Status != 409 || p.Code != "campaign_finished" {
		t.Errorf("cancel a done campaign: %d %s", p.Status, p.Code)
	}
}

// Every campaign route takes only application/json bodies, never encoded
// (415 unsupported_media_type), and writes nothing when it refuses one.
func TestCampaignRoutesRefuseOtherMediaTypes(t *testing.T) {
	ca := newCampaignAPI()
	id := decodeBody[campaignView](t, ca.call(t, "POST /v1/campaigns", "", `{"type":"reservation.approved","data":{"reservationUrl":"https://e.com"}}`).Body).ID
	writes := ca.store.writes
	chunk := `{"chunk":0,"userIds":["a"]}`
	tests := []struct {
		route, id, body, header, want string
	}{
		{"POST /v1/campaigns", "", validCampaign, "Content-Type: text/plain", "Content-Type"},
		{"POST /v1/campaigns", "", validCampaign, "Content-Type: application/json; charset=latin1", "Content-Type"},
		{"POST /v1/campaigns", "", validCampaign, "Content-Encoding: gzip", "Content-Encoding"},
		{"POST /v1/campaigns/{id}/recipients", id, chunk, "Content-Type: application/x-www-form-urlencoded", "Content-Type"},
		{"POST /v1/campaigns/{id}/recipients", id, chunk, "Content-Encoding: br", "Content-Encoding"},
		{"POST /v1/campaigns/{id}/start", id, "{}", "Content-Type: text/plain", "Content-Type"},
		{"POST /v1/campaigns/{id}/start", id, "", "Content-Encoding: gzip", "Content-Encoding"},
		{"DELETE /v1/campaigns/{id}", id, "", "Content-Encoding: gzip", "Content-Encoding"},
	}
	for _, tt := range tests {
		r := ca.call(t, tt.route, tt.id, tt.body, tt.header)
		if p := decodeProblem(t, r); p.Status != http.StatusUnsupportedMediaType || p.Code != "unsupported_media_type" || p.Header != tt.want {
			t.Errorf("%s with %s: %s", tt.route, tt.header, r.Body)
		}
	}
	if ca.store.writes != writes || len(ca.queue.sent) != 0 {
		t.Errorf("refused requests wrote %d items and sent %d messages", ca.store.writes-writes, len(ca.queue.sent))
	}
	// application/json with charset=utf-8 is accepted.
	if r := ca.call(t, "POST /v1/campaigns/{id}/recipients", id, chunk, "Content-Type: application/json; charset=UTF-8"); r.StatusCode != http.StatusOK {
		t.Errorf("JSON with charset: %d %s", r.StatusCode, r.Body)
	}
}
