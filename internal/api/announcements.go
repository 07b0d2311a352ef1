package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/inbox"
)

// AnnouncementStore is what the announcement routes (and the inbox, for
// announcements) need from the table.
type AnnouncementStore interface {
	// CreateAnnouncement stores a once (conditional on its id); an existing
	// id returns the stored one with domain.ErrConflict.
	CreateAnnouncement(ctx context.Context, a *inbox.Announcement) (*inbox.Announcement, error)
	GetAnnouncement(ctx context.Context, id string) (*inbox.Announcement, error)
	// ListAnnouncements pages through every stored announcement, newest
	// published first.
	ListAnnouncements(ctx context.Context, position string, limit int) ([]inbox.Announcement, bool, error)
	// UnexpiredAnnouncements reads the active and scheduled ones (bounded).
	UnexpiredAnnouncements(ctx context.Context, now time.Time) ([]inbox.Announcement, error)
}

// AnnouncementsHandler serves the announcement routes (service): create and
// list.
type AnnouncementsHandler struct {
	responder
	announcements       AnnouncementStore
	activeAnnouncements *AnnouncementCache
	announcer           Announcer
	now                 func() time.Time
}

// AnnouncementsDeps are the announcement routes' collaborators. Announcer nil
// broadcasts nothing; the others are required.
type AnnouncementsDeps struct {
	Announcements AnnouncementStore
	// ActiveAnnouncements is the instance's cache the inbox reads (the same
	// one): a create drops it.
	ActiveAnnouncements *AnnouncementCache
	// Announcer broadcasts a new active announcement to every open
	// live-inbox connection (once).
	Announcer Announcer
	Now       func() time.Time
	Log       *slog.Logger
}

// NewAnnouncements wires the announcement routes.
func NewAnnouncements(d AnnouncementsDeps) *AnnouncementsHandler {
	return &AnnouncementsHandler{responder: responder{log: d.Log}, announcements: d.Announcements,
		activeAnnouncements: d.ActiveAnnouncements, announcer: d.Announcer, now: d.Now}
}

// Announcer starts an announcement's live broadcast unless it was started
// already (live.Announcer); it bounds its own time.
type Announcer interface {
	Announce(ctx context.Context, id string) (bool, error)
}

// AnnouncementCacheTTL is how long an API instance reuses its read of the
// unexpired announcements. Every inbox request needs them; caching keeps an
// inbox page at one query (plus one batch read of the user's markers) and
// keeps the announcement partition from becoming a hot key. Activity is
// decided per request against the clock, so publication and expiry take
// effect on time; only an announcement created through another instance
// may take up to this long to appear.
const AnnouncementCacheTTL = 10 * time.Second

// AnnouncementCache holds the unexpired announcements of one API instance:
// the inbox routes read them through it, and an announcement created through
// this instance drops it, so the instance lists its own announcements at
// once. One per instance, given to both (NewInbox, NewAnnouncements).
type AnnouncementCache struct {
	store AnnouncementStore
	ttl   time.Duration
	now   func() time.Time

	mu      sync.Mutex
	list    []inbox.Announcement
	fetched time.Time
	valid   bool
}

// NewAnnouncementCache is an instance's cache over store, reread every
// AnnouncementCacheTTL by now's clock.
func NewAnnouncementCache(store AnnouncementStore, now func() time.Time) *AnnouncementCache {
	return &AnnouncementCache{store: store, ttl: AnnouncementCacheTTL, now: now}
}

// get returns the announcements active now, refreshing the copy when stale.
// Holding the lock while reading makes concurrent misses share one read.
func (c *AnnouncementCache) get(ctx context.Context) ([]inbox.Announcement, error) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.valid || now.Sub(c.fetched) >= c.ttl || now.Before(c.fetched) {
		list, err := c.store.UnexpiredAnnouncements(ctx, now)
		if err != nil {
			return nil, err
		}
		c.list, c.fetched, c.valid = list, now, true
	}
	return inbox.ActiveAnnouncements(c.list, now), nil
}

// invalidate drops the copy (this instance created an announcement).
func (c *AnnouncementCache) invalidate() {
	c.mu.Lock()
	c.valid = false
	c.mu.Unlock()
}

// find returns an announcement users can act on now: from the copy, or from
// the table when this instance has not seen it yet.
func (c *AnnouncementCache) find(ctx context.Context, id string, now time.Time) (*inbox.Announcement, error) {
	active, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	for i := range active {
		if active[i].ID == id {
			return &active[i], nil
		}
	}
	a, err := c.store.GetAnnouncement(ctx, id)
	if err != nil {
		return nil, err
	}
	if !a.Active(now) {
		return nil, domain.ErrNotFound
	}
	return a, nil
}

// announcementRequest is the body of POST /v1/announcements.
type announcementRequest struct {
	Title       string     `json:"title"`
	Body        string     `json:"body"`
	URL         string     `json:"url,omitempty"`
	PublishedAt *time.Time `json:"publishedAt,omitempty"`
	ExpiresAt   *time.Time `json:"expiresAt"`
}

// announcementBody is an announcement as services see it.
type announcementBody struct {
	ID          string  `json:"id"`
	Title       string  `json:"title"`
	Body        string  `json:"body"`
	URL         *string `json:"url"`
	PublishedAt string  `json:"publishedAt"`
	ExpiresAt   string  `json:"expiresAt"`
	CreatedAt   string  `json:"createdAt"`
	Status      string  `json:"status"`
}

// Announcement limits.
const (
	maxAnnouncementTitle = 200
	maxAnnouncementBody  = 2000
	maxAnnouncementURL   = 2048
	// maxAnnouncementLife bounds how long one stays stored (and its markers).
	maxAnnouncementLife = 366 * 24 * time.Hour
)

func (h *AnnouncementsHandler) announcementService(req *request) *Problem {
	if req.caller == "" {
		return &Problem{Status: http.StatusForbidden, Code: "forbidden", Detail: "announcements are managed by services (IAM), not users"}
	}
	return nil
}

func (h *AnnouncementsHandler) createAnnouncement(ctx context.Context, req *request) response {
	if p := h.announcementService(req); p != nil {
		return problemResponse(p)
	}
	raw, p := readBody(req)
	if p != nil {
		return problemResponse(p)
	}
	key, hasKey, p := idempotencyKey(req)
	if p != nil {
		return problemResponse(p)
	}
	var ar announcementRequest
	if p := decodeStrict(raw, &ar); p != nil {
		return problemResponse(p)
	}
	now := h.now()
	a, p := validateAnnouncement(&ar, now)
	if p != nil {
		return problemResponse(p)
	}
	a.Caller, a.CreatedAt, a.RequestHash = req.caller, now, announcementHash(&ar)
	if hasKey {
		a.ID = announcementIDFor(req.caller, key)
	} else {
		a.ID = newAnnouncementID()
	}
	stored, err := h.announcements.CreateAnnouncement(ctx, a)
	switch {
	case errors.Is(err, domain.ErrConflict) && stored != nil && hasKey:
		if stored.Caller != a.Caller || stored.RequestHash != a.RequestHash {
			return problemResponse(&Problem{Status: http.StatusUnprocessableEntity, Code: "idempotency_key_reused",
				Detail: "this idempotency key was already used with a different request"})
		}
		// A replay retries a broadcast the first request could not start
		// (the mark makes it once).
		h.announceLive(ctx, stored, now)
		return response{status: http.StatusCreated, body: announcementJSON(stored, now), headers: map[string]string{"Idempotent-Replayed": "true"}}
	case err != nil:
		return h.internalError(ctx, "create announcement", err)
	}
	h.activeAnnouncements.invalidate()
	h.log.InfoContext(ctx, "announcement created", "announcementId", a.ID, "outcome", "created")
	h.announceLive(ctx, a, now)
	return response{status: http.StatusCreated, body: announcementJSON(a, now)}
}

// announceLive starts the live broadcast of an announcement active now (a
// scheduled one is the scheduler's when it becomes active). Best effort
// and bounded (live.AnnounceTimeout): the announcement is stored and the
// answer stands; one not started here is started by the scheduler's next
// run.
func (h *AnnouncementsHandler) announceLive(ctx context.Context, a *inbox.Announcement, now time.Time) {
	if h.announcer == nil || !a.Active(now) {
		return
	}
	if _, err := h.announcer.Announce(ctx, a.ID); err != nil {
		h.log.WarnContext(ctx, "announcement broadcast not started; the scheduler retries", "announcementId", a.ID, "error", err)
	}
}

func validateAnnouncement(ar *announcementRequest, now time.Time) (*inbox.Announcement, *Problem) {
	switch {
	case strings.TrimSpace(ar.Title) == "":
		return nil, fieldProblem(http.StatusBadRequest, "missing_field", "/title", "title is required")
	case utf8.RuneCountInString(ar.Title) > maxAnnouncementTitle || !plainText(ar.Title):
		return nil, fieldProblem(http.StatusBadRequest, "invalid_string", "/title", "title must be at most 200 characters without control or bidirectional formatting characters")
	case strings.TrimSpace(ar.Body) == "":
		return nil, fieldProblem(http.StatusBadRequest, "missing_field", "/body", "body is required")
	case utf8.RuneCountInString(ar.Body) > maxAnnouncementBody || strings.IndexFunc(ar.Body, controlNotNewline) >= 0 || domain.HasBidiControl(ar.Body):
		return nil, fieldProblem(http.StatusBadRequest, "invalid_string", "/body", "body must be at most 2000 characters without control characters other than line breaks, nor bidirectional formatting characters")
	case ar.URL != "" && !absoluteHTTPURL(ar.URL):
		return nil, fieldProblem(http.StatusBadRequest, "invalid_url", "/url", "url must be an absolute http(s) URL of at most 2048 characters, with only RFC 3986 characters (percent-encode the rest) and without user information")
	case ar.ExpiresAt == nil:
		return nil, fieldProblem(http.StatusBadRequest, "missing_field", "/expiresAt", "expiresAt is required: announcements and their read markers expire")
	}
	published := now
	if ar.PublishedAt != nil {
		published = ar.PublishedAt.UTC()
	}
	expires := ar.ExpiresAt.UTC()
	switch {
	case !expires.After(now) || !expires.After(published):
		return nil, fieldProblem(http.StatusBadRequest, "invalid_expires_at", "/expiresAt", "expiresAt must be in the future and after publishedAt")
	case expires.Sub(published) > maxAnnouncementLife:
		return nil, fieldProblem(http.StatusBadRequest, "invalid_expires_at", "/expiresAt", "expiresAt must be at most 366 days after publishedAt")
	}
	return &inbox.Announcement{Title: ar.Title, Body: ar.Body, URL: ar.URL, PublishedAt: published, ExpiresAt: expires}, nil
}

func controlNotNewline(r rune) bool {
	return unicode.IsControl(r) && r != '\n' && r != '\r' && r != '\t'
}

// absoluteHTTPURL is the link rule every stored URL follows
// (domain.CheckLinkURL), within the announcement's length limit.
func absoluteHTTPURL(s string) bool {
	return len(s) <= maxAnnouncementURL && domain.CheckLinkURL(s) == ""
}

// announcementHash is the canonical hash of a request (see requestHash):
// times in UTC, so the same instant written in another zone is the same
// request.
func announcementHash(ar *announcementRequest) string {
	canonical := *ar
	for _, t := range []**time.Time{&canonical.PublishedAt, &canonical.ExpiresAt} {
		if *t != nil {
			utc := (*t).UTC()
			*t = &utc
		}
	}
	b, _ := json.Marshal(&canonical)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func announcementJSON(a *inbox.Announcement, now time.Time) announcementBody {
	return announcementBody{
		ID: a.ID, Title: a.Title, Body: a.Body, URL: optional(a.URL),
		PublishedAt: a.PublishedAt.UTC().Format(time.RFC3339Nano), ExpiresAt: a.ExpiresAt.UTC().Format(time.RFC3339Nano),
		CreatedAt: a.CreatedAt.UTC().Format(time.RFC3339Nano), Status: a.Status(now),
	}
}

type announcementPage struct {
	Items      []announcementBody `json:"items"`
	NextCursor string             `json:"nextCursor,omitempty"`
}

func (h *AnnouncementsHandler) listAnnouncements(ctx context.Context, req *request) response {
	if p := h.announcementService(req); p != nil {
		return problemResponse(p)
	}
	q := req.QueryStringParameters
	limit, err := inbox.ParseLimit(q["limit"])
	if err != nil {
		return problemResponse(&Problem{Status: http.StatusBadRequest, Code: "invalid_limit", Detail: "limit must be an integer from 1 to 100"})
	}
	position := ""
	if c, ok := q["cursor"]; ok {
		cur, err := inbox.DecodeCursor(c, inbox.ScopeAnnouncements)
		if err != nil {
			return problemResponse(&Problem{Status: http.StatusBadRequest, Code: "invalid_cursor", Detail: "cursor is not one this list returned"})
		}
		position = cur.Position
	}
	list, more, err := h.announcements.ListAnnouncements(ctx, position, limit)
	if err != nil {
		return h.internalError(ctx, "list announcements", err)
	}
	now := h.now()
	body := announcementPage{Items: make([]announcementBody, 0, len(list))}
	for i := range list {
		body.Items = append(body.Items, announcementJSON(&list[i], now))
	}
	if more && len(list) > 0 {
		body.NextCursor = inbox.Cursor{Scope: inbox.ScopeAnnouncements, Position: list[len(list)-1].SortKey}.Encode()
	}
	return response{status: http.StatusOK, body: body}
}
