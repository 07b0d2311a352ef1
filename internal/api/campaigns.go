package api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	wire "github.com/heraldhq/herald/client/events"
	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/events"
	"github.com/heraldhq/herald/internal/policy"
)

// CampaignsHandler serves the campaign routes (service): create, add
// recipients, start, status and cancel.
type CampaignsHandler struct {
	responder
	campaigns     CampaignStore
	campaignQueue CampaignQueue
	catalog       *catalog.Catalog
	pace          policy.PaceSettings
	now           func() time.Time
}

// CampaignsDeps are the campaign routes' collaborators, all required but
// Pace (zero: no quota known, no finish estimate).
type CampaignsDeps struct {
	Campaigns CampaignStore
	// CampaignQueue takes a started campaign's planning message.
	CampaignQueue CampaignQueue
	Catalog       *catalog.Catalog
	// Pace is the deployment's settings a campaign's finish estimate is
	// computed from.
	Pace policy.PaceSettings
	Now  func() time.Time
	Log  *slog.Logger
}

// NewCampaigns wires the campaign routes.
func NewCampaigns(d CampaignsDeps) *CampaignsHandler {
	return &CampaignsHandler{responder: responder{log: d.Log}, campaigns: d.Campaigns, campaignQueue: d.CampaignQueue,
		catalog: d.Catalog, pace: d.Pace, now: d.Now}
}

// CampaignStore is what the campaign routes need from the table.
type CampaignStore interface {
	// CreateCampaign stores a draft with its inline audience (may be empty);
	// an existing one is returned with domain.ErrConflict.
	CreateCampaign(ctx context.Context, c *domain.Campaign, inline []string, inlineHash string) (*domain.Campaign, error)
	GetCampaign(ctx context.Context, id string) (*domain.Campaign, error)
	// AddChunk stores a chunk of caller's draft; created false on an
	// identical replay; domain.ErrChunkConflict, domain.ErrCampaignNotDraft,
	// domain.ErrNotFound.
	AddChunk(ctx context.Context, id, caller, chunk string, ids []string, hash string) (bool, error)
	// StartCampaign moves caller's draft to running (domain.ErrCampaignNotDraft).
	StartCampaign(ctx context.Context, id, caller string) (*domain.Campaign, error)
	// RevertStart puts a campaign started at startedAt back to draft.
	RevertStart(ctx context.Context, id string, startedAt time.Time) error
	// CancelCampaign cancels caller's draft or running campaign
	// (domain.ErrCampaignFinished when done).
	CancelCampaign(ctx context.Context, id, caller string) (*domain.Campaign, error)
}

// CampaignQueue sends the first step of a started campaign's fan-out.
type CampaignQueue interface {
	SendCampaign(ctx context.Context, msgs []domain.CampaignMessage, delay time.Duration) error
}

// campaignRequest is the body of POST /v1/campaigns.
type campaignRequest struct {
	Type      string          `json:"type"`
	Data      json.RawMessage `json:"data,omitempty"`
	Priority  string          `json:"priority,omitempty"`
	Channels  []string        `json:"channels,omitempty"`
	SendAt    string          `json:"sendAt,omitempty"`
	ExpiresAt string          `json:"expiresAt,omitempty"`
	Audience  *audienceBody   `json:"audience,omitempty"`
}

// audienceBody is userIds (inline, 1–1,000), a segment, or neither (upload
// chunks).
type audienceBody struct {
	UserIDs []string `json:"userIds,omitempty"`
	Segment *string  `json:"segment,omitempty"`
}

// recipientsRequest is the body of POST /v1/campaigns/{id}/recipients.
type recipientsRequest struct {
	Chunk   *int64   `json:"chunk"`
	UserIDs []string `json:"userIds"`
}

// campaignView is a campaign as the routes answer it. Times that do not
// apply are null.
type campaignView struct {
	ID          string   `json:"id"`
	Type        string   `json:"type"`
	Priority    string   `json:"priority"`
	Channels    []string `json:"channels,omitempty"`
	Segment     string   `json:"segment,omitempty"`
	Topic       string   `json:"topic,omitempty"`
	Status      string   `json:"status"`
	Recipients  int      `json:"recipients"`
	Notified    int      `json:"notified"`
	Sent        int      `json:"sent"`
	Skipped     int      `json:"skipped"`
	Failed      int      `json:"failed"`
	Dropped     int      `json:"dropped"`
	SendAt      *string  `json:"sendAt"`
	ExpiresAt   *string  `json:"expiresAt"`
	CreatedAt   string   `json:"createdAt"`
	StartedAt   *string  `json:"startedAt"`
	FinishedAt  *string  `json:"finishedAt"`
	CancelledAt *string  `json:"cancelledAt"`
	// EstimatedCompletionAt is when the campaign should be done (null: no
	// pace known); Estimate the rate it assumes.
	EstimatedCompletionAt *string                `json:"estimatedCompletionAt"`
	Estimate              *wire.CampaignEstimate `json:"estimate,omitempty"`
}

type chunkAccepted struct {
	Chunk      int64 `json:"chunk"`
	Recipients int   `json:"recipients"`
}

const (
	// maxCampaignBodyBytes fits 1,000 user ids of 128 characters with
	// their JSON quoting, and a campaign's data.
	maxCampaignBodyBytes = 256 << 10
	maxChunkNumber       = 9_999_999_999 // ten digits: chunk keys sort by number
)

func viewOfCampaign(c *domain.Campaign, now time.Time) *campaignView {
	v := &campaignView{
		ID: c.ID, Type: c.Type, Priority: string(c.Priority), Segment: c.Segment, Topic: c.Topic, Status: string(c.Status),
		Recipients: c.Recipients, Notified: c.Counts.Notified, Sent: c.Counts.Sent, Skipped: c.Counts.Skipped,
		Failed: c.Counts.Failed, Dropped: c.Counts.Dropped, SendAt: timePtr(c.SendAt), ExpiresAt: timePtr(c.ExpiresAt),
		CreatedAt: formatTime(c.CreatedAt), StartedAt: timePtr(c.StartedAt), FinishedAt: timePtr(c.FinishedAt),
		CancelledAt: timePtr(c.CancelledAt),
	}
	for _, ch := range c.Channels {
		v.Channels = append(v.Channels, string(ch))
	}
	if at, ok := c.EstimatedCompletion(now); ok {
		v.EstimatedCompletionAt = timePtr(at)
		v.Estimate = events.Estimate(c.Pace, c.Remaining())
	}
	return v
}

// exceedsWindow is the 422 of a campaign whose estimate is after its
// expiresAt: its last notifications would expire unsent.
func exceedsWindow(c *domain.Campaign, at time.Time) *Problem {
	return fieldProblem(http.StatusUnprocessableEntity, "exceeds_window", "/expiresAt",
		"the campaign cannot finish before its expiresAt: "+strconv.Itoa(c.Recipients)+" recipients at "+
			strconv.FormatFloat(c.Pace.RecipientsPerSecond, 'f', 1, 64)+"/s would finish at "+formatTime(at)+"; send later, to fewer, or with a later expiresAt")
}

// overWindow reports the estimate of c at now when it is after c's expiresAt.
func overWindow(c *domain.Campaign, now time.Time) (time.Time, bool) {
	at, ok := c.EstimatedCompletion(now)
	return at, ok && !c.ExpiresAt.IsZero() && at.After(c.ExpiresAt)
}

func campaignNotFound() *Problem {
	return &Problem{Status: http.StatusNotFound, Code: "campaign_not_found", Parameter: "id",
		Detail: "no campaign with this id was created by this caller"}
}

func campaignNotDraft() *Problem {
	return &Problem{Status: http.StatusConflict, Code: "campaign_not_draft", Parameter: "id",
		Detail: "the campaign has been started or cancelled: its recipients are final"}
}

// createCampaign validates a campaign with the notification intake's rules
// and stores it as a draft with its inline audience, in one transaction.
func (h *CampaignsHandler) createCampaign(ctx context.Context, req *request) response {
	body, p := readBodyLimit(req, maxCampaignBodyBytes, "256 KiB")
	if p != nil {
		return problemResponse(p)
	}
	key, hasKey, p := idempotencyKey(req)
	if p != nil {
		return problemResponse(p)
	}
	var cr campaignRequest
	if p := decodeStrict(body, &cr); p != nil {
		return problemResponse(p)
	}
	now := h.now()
	typ, p := lookupType(h.catalog, cr.Type)
	if p != nil {
		return problemResponse(p)
	}
	if cr.Priority == "" {
		cr.Priority = string(domain.PriorityLow) // campaigns are bulk unless they say otherwise
	}
	nr := &notificationRequest{Type: cr.Type, Data: cr.Data, Priority: cr.Priority, Channels: cr.Channels, SendAt: cr.SendAt, ExpiresAt: cr.ExpiresAt}
	n := &domain.Notification{Type: cr.Type}
	data, p := validateContent(nr, typ, n, now)
	if p != nil {
		return problemResponse(p)
	}
	if err := domain.CampaignPriority(n.Priority); err != nil {
		return problemResponse(fieldProblem(http.StatusUnprocessableEntity, "campaign_priority_high", "/priority",
			"a campaign cannot take high priority: its notifications would share the one-time codes' queues and send-quota reserve; use normal or low"))
	}
	inline, segment, p := validateAudience(cr.Audience)
	if p != nil {
		return problemResponse(p)
	}
	c := &domain.Campaign{
		Caller: req.caller, Type: cr.Type, Data: data, Priority: n.Priority, Channels: n.Channels, SendAt: n.SendAt,
		Segment: segment, Status: domain.CampaignDraft, CreatedAt: now,
	}
	if cr.ExpiresAt != "" { // else each notification takes the type's default from its creation
		c.ExpiresAt = n.ExpiresAt
	}
	c.Pace = h.pace.Pace(c.Priority, policy.Channels(&domain.Notification{Channels: c.Channels}, typ))
	c.Recipients = len(inline)
	if at, over := overWindow(c, now); over {
		return problemResponse(exceedsWindow(c, at))
	}
	c.RequestHash = campaignRequestHash(&cr, c, inline)
	if hasKey {
		c.DedupeKey = "k\x00" + key
		c.ID = campaignIDFor(req.caller, key)
	} else {
		c.ID = newCampaignID()
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < deadlineReserve {
		return problemResponse(timeoutProblem())
	}
	stored, err := h.campaigns.CreateCampaign(ctx, c, inline, chunkHash(inline))
	switch {
	case errors.Is(err, domain.ErrConflict) && stored != nil && hasKey && stored.Caller == c.Caller && stored.DedupeKey == c.DedupeKey:
		if stored.RequestHash != c.RequestHash {
			return problemResponse(reusedProblem(true, ""))
		}
		resp := campaignCreated(stored, now)
		resp.headers[replayedHeader] = "true"
		return resp
	case err != nil:
		return h.internalError(ctx, "create campaign", err)
	}
	h.log.InfoContext(ctx, "campaign created", "campaignId", c.ID, "type", c.Type, "priority", c.Priority, "recipients", c.Recipients, "outcome", "created")
	return campaignCreated(c, now)
}

func campaignCreated(c *domain.Campaign, now time.Time) response {
	return response{status: http.StatusCreated, body: viewOfCampaign(c, now), headers: map[string]string{"Location": "/v1/campaigns/" + c.ID}}
}

// validateAudience returns the inline recipients (repeats removed) or the
// segment; neither means recipients are uploaded in chunks.
func validateAudience(a *audienceBody) ([]string, string, *Problem) {
	switch {
	case a == nil || (a.UserIDs == nil && a.Segment == nil):
		return nil, "", nil
	case a.UserIDs != nil && a.Segment != nil:
		return nil, "", fieldProblem(http.StatusBadRequest, "invalid_audience", "/audience", "give userIds or segment, not both")
	case a.Segment != nil && *a.Segment == domain.SegmentAll:
		return nil, domain.SegmentAll, nil
	case a.Segment != nil:
		return nil, "", fieldProblem(http.StatusUnprocessableEntity, "unknown_segment", "/audience/segment", `the only segment is "all"`)
	}
	ids, p := validateRecipientIDs(a.UserIDs, "/audience/userIds")
	return ids, "", p
}

// validateRecipientIDs checks 1–1,000 user ids and returns them with
// repeats removed (first occurrence kept).
func validateRecipientIDs(ids []string, pointer string) ([]string, *Problem) {
	switch {
	case len(ids) == 0:
		return nil, fieldProblem(http.StatusBadRequest, "invalid_audience", pointer, "list at least one user id")
	case len(ids) > domain.MaxChunkRecipients:
		return nil, fieldProblem(http.StatusUnprocessableEntity, "audience_too_large", pointer,
			"at most 1000 user ids per request; upload more with POST /v1/campaigns/{id}/recipients")
	}
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for i, id := range ids {
		if p := validateUserID(id, pointer+"/"+strconv.Itoa(i)); p != nil {
			return nil, p
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out, nil
}

// chunkHash identifies a chunk's recipients as a set: the same ids in
// another order replay the same chunk.
func chunkHash(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	sum := sha256.Sum256([]byte(strings.Join(sorted, "\x00")))
	return hex.EncodeToString(sum[:])
}

// campaignRequestHash is a canonical hash of an accepted campaign request
// (as requestHash is for notifications).
func campaignRequestHash(cr *campaignRequest, c *domain.Campaign, inline []string) string {
	buf := make([]byte, 0, 1024)
	put := func(s string) {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	put("campaign-v1")
	put(cr.Type)
	put(string(c.Priority))
	for _, ch := range c.Channels { // parsed: no repeats
		put(string(ch))
	}
	put("")
	for _, t := range []time.Time{c.SendAt, c.ExpiresAt} {
		put(formatTimeOrEmpty(t))
	}
	keys := make([]string, 0, len(c.Data))
	for k := range c.Data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		put(k)
		raw, _ := json.Marshal(c.Data[k])
		put(string(raw))
	}
	put("")
	put(c.Segment)
	put(chunkHash(inline))
	if c.Topic != "" { // a topic send (the hashes of the other campaigns stay as they were)
		put(c.Topic)
		put(chunkHash(c.Exclude))
	}
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:])
}

func formatTimeOrEmpty(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return formatTime(t)
}

// campaignIDFor derives a campaign's id from the caller-scoped idempotency
// key, so that the conditional write on the id deduplicates.
func campaignIDFor(caller, key string) string {
	sum := sha256.Sum256([]byte("campaign\x00" + caller + "\x00" + key))
	return makeID("c", sum[:])
}

func newCampaignID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	return makeID("c", b[:])
}

// validCampaignID reports whether id has the shape of a campaign id.
func validCampaignID(id string) bool {
	if len(id) != 27 || id[0] != 'c' {
		return false
	}
	for i := 1; i < len(id); i++ {
		if strings.IndexByte(idAlphabet, id[i]) < 0 {
			return false
		}
	}
	return true
}

// getCampaign answers the caller's own campaign; any other id is the same 404.
func (h *CampaignsHandler) getCampaign(ctx context.Context, req *request) response {
	id := req.PathParameters["id"]
	if !validCampaignID(id) {
		return problemResponse(campaignNotFound())
	}
	c, err := h.campaigns.GetCampaign(ctx, id)
	switch {
	case err != nil:
		return h.storeError(ctx, "get campaign", err, campaignNotFound)
	case c.Caller != req.caller:
		return problemResponse(campaignNotFound())
	}
	return response{status: http.StatusOK, body: viewOfCampaign(c, h.now())}
}

// addRecipients stores one chunk of a draft campaign's recipients.
func (h *CampaignsHandler) addRecipients(ctx context.Context, req *request) response {
	id := req.PathParameters["id"]
	if !validCampaignID(id) {
		return problemResponse(campaignNotFound())
	}
	body, p := readBodyLimit(req, maxCampaignBodyBytes, "256 KiB")
	if p != nil {
		return problemResponse(p)
	}
	var rr recipientsRequest
	if p := decodeStrict(body, &rr); p != nil {
		return problemResponse(p)
	}
	switch {
	case rr.Chunk == nil:
		return problemResponse(fieldProblem(http.StatusBadRequest, "missing_field", "/chunk", "chunk is required"))
	case *rr.Chunk < 0 || *rr.Chunk > maxChunkNumber:
		return problemResponse(fieldProblem(http.StatusBadRequest, "invalid_chunk", "/chunk", "chunk must be a number from 0 to 9999999999"))
	}
	ids, p := validateRecipientIDs(rr.UserIDs, "/userIds")
	if p != nil {
		return problemResponse(p)
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < deadlineReserve {
		return problemResponse(timeoutProblem())
	}
	created, err := h.campaigns.AddChunk(ctx, id, req.caller, domain.ChunkKey(*rr.Chunk), ids, chunkHash(ids))
	switch {
	case errors.Is(err, domain.ErrChunkConflict):
		return problemResponse(&Problem{Status: http.StatusConflict, Code: "chunk_conflict", Pointer: "/chunk",
			Detail: "this chunk number was uploaded with other user ids"})
	case errors.Is(err, domain.ErrCampaignNotDraft):
		return problemResponse(campaignNotDraft())
	case errors.Is(err, domain.ErrSegmentAudience):
		return problemResponse(&Problem{Status: http.StatusConflict, Code: "segment_audience", Parameter: "id",
			Detail: "the campaign's audience is a segment: it takes no uploaded recipients"})
	case err != nil:
		return h.storeError(ctx, "add campaign recipients", err, campaignNotFound)
	}
	resp := response{status: http.StatusOK, body: &chunkAccepted{Chunk: *rr.Chunk, Recipients: len(ids)}}
	if !created {
		resp.headers = map[string]string{replayedHeader: "true"}
	}
	return resp
}

// startCampaign moves a draft to running and sends its planning message;
// if the message cannot be sent, the campaign goes back to draft and the
// caller may start it again.
func (h *CampaignsHandler) startCampaign(ctx context.Context, req *request) response {
	id := req.PathParameters["id"]
	if !validCampaignID(id) {
		return problemResponse(campaignNotFound())
	}
	c, resp, ok := startFanOut(ctx, h.responder, h.campaigns, h.campaignQueue, id, req.caller)
	if !ok {
		return resp
	}
	est, _ := c.StartEstimate()
	h.log.InfoContext(ctx, "campaign started", "campaignId", id, "recipients", c.Recipients, "chunks", c.Chunks,
		"estimatedCompletionAt", formatTimeOrEmpty(est), "recipientsPerSecond", c.Pace.RecipientsPerSecond, "outcome", "started")
	return response{status: http.StatusAccepted, body: viewOfCampaign(c, c.StartedAt)}
}

// startFanOut moves caller's draft campaign id to running and sends its
// planning message; if it cannot finish before its expiresAt, or the message
// cannot be sent, the campaign goes back to draft and may be started again. ok false: resp is the error answer.
func startFanOut(ctx context.Context, r responder, campaigns CampaignStore, q CampaignQueue, id, caller string) (*domain.Campaign, response, bool) {
	c, err := campaigns.StartCampaign(ctx, id, caller)
	switch {
	case errors.Is(err, domain.ErrCampaignNotDraft):
		return nil, problemResponse(campaignNotDraft()), false
	case err != nil:
		return nil, r.storeError(ctx, "start campaign", err, campaignNotFound), false
	}
	// Its uploaded recipients are counted now: one that cannot finish
	// before its expiresAt goes back to draft, nothing sent.
	if at, over := overWindow(c, c.StartedAt); over {
		if err := campaigns.RevertStart(ctx, id, c.StartedAt); err != nil {
			return nil, r.internalError(ctx, "revert campaign start", err), false
		}
		return nil, problemResponse(exceedsWindow(c, at)), false
	}
	if err := q.SendCampaign(ctx, []domain.CampaignMessage{{Kind: domain.CampaignPlan, CampaignID: id}}, 0); err != nil {
		if rerr := campaigns.RevertStart(ctx, id, c.StartedAt); rerr != nil {
			r.log.ErrorContext(ctx, "revert campaign start", "campaignId", id, "error", rerr)
		}
		return nil, r.internalError(ctx, "send campaign plan", err), false
	}
	return c, response{}, true
}

// cancelCampaign cancels a draft or running campaign: what is not yet sent
// ends dropped: cancelled. Cancelling again answers the same; a done
// campaign is a 409.
func (h *CampaignsHandler) cancelCampaign(ctx context.Context, req *request) response {
	id := req.PathParameters["id"]
	if !validCampaignID(id) {
		return problemResponse(campaignNotFound())
	}
	c, err := h.campaigns.CancelCampaign(ctx, id, req.caller)
	switch {
	case errors.Is(err, domain.ErrCampaignFinished):
		return problemResponse(&Problem{Status: http.StatusConflict, Code: "campaign_finished", Parameter: "id",
			Detail: "the campaign is done: there is nothing left to cancel"})
	case err != nil:
		return h.storeError(ctx, "cancel campaign", err, campaignNotFound)
	}
	h.log.InfoContext(ctx, "campaign cancelled", "campaignId", id, "outcome", "cancelled")
	return response{status: http.StatusOK, body: viewOfCampaign(c, h.now())}
}
