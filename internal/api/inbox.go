package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"sync"
	"time"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/inbox"
	"github.com/heraldhq/herald/internal/live"
)

// InboxHandler serves the user's inbox routes (user token; the path's user
// must be the token's subject): list, unread count, read, archive, read-all,
// and presence, which an inbox read also records.
type InboxHandler struct {
	responder
	inboxStore          InboxStore
	activeAnnouncements *AnnouncementCache
	presence            PresenceStore
	presenceCache       presenceCache
	catalog             *catalog.Catalog
	now                 func() time.Time
	live                live.Notifier
}

// InboxDeps are the inbox routes' collaborators. Inbox, ActiveAnnouncements,
// Catalog, Now and Log are required.
type InboxDeps struct {
	Inbox InboxStore
	// ActiveAnnouncements is the instance's cache of the active
	// announcements (the one the announcement routes drop on a create).
	ActiveAnnouncements *AnnouncementCache
	// Presence records when users were last seen (presence calls and inbox
	// reads); nil records nothing.
	Presence PresenceStore
	Catalog  *catalog.Catalog
	Now      func() time.Time
	Log      *slog.Logger
	// Live hears of the user's inbox changes (read, archive, read-all) for
	// their open live-inbox connections; nil notifies nothing.
	Live live.Notifier
}

// NewInbox wires the inbox routes.
func NewInbox(d InboxDeps) *InboxHandler {
	h := &InboxHandler{responder: responder{log: d.Log}, inboxStore: d.Inbox, activeAnnouncements: d.ActiveAnnouncements,
		presence: d.Presence, catalog: d.Catalog, now: d.Now, live: d.Live}
	if h.live == nil {
		h.live = live.NopNotifier{}
	}
	return h
}

// InboxStore is what the inbox routes need from the table.
type InboxStore interface {
	// ListInbox reads one page of the user's notifications under the filter,
	// newest first, strictly older than position, with one query; more
	// reports whether older ones remain.
	ListInbox(ctx context.Context, userID string, f inbox.Filter, position string, limit int) (entries []inbox.Entry, more bool, err error)
	// CountUnread counts unread notifications, stopping at limit.
	CountUnread(ctx context.Context, userID string, limit int) (int, error)
	// MarkRead and Archive change the user's own notification (first time
	// kept); another user's or a missing id is domain.ErrNotFound.
	MarkRead(ctx context.Context, userID, id string, at time.Time) (*domain.Notification, error)
	Archive(ctx context.Context, userID, id string, at time.Time) (*domain.Notification, error)
	// MarkAllRead marks the unread notifications created up to upTo, at
	// most limit; more reports that some may remain.
	MarkAllRead(ctx context.Context, userID string, upTo time.Time, limit int) (updated int, more bool, err error)
	// InboxState reads the user's markers of the given announcements and,
	// withLocale, the profile's locale, in one batch read.
	InboxState(ctx context.Context, userID string, announcementIDs []string, withLocale bool) (inbox.UserState, error)
	// MarkAnnouncementRead writes the user's read marker (first readAt
	// kept); onlyUnread leaves read or archived ones alone and changed says
	// whether it wrote.
	MarkAnnouncementRead(ctx context.Context, userID string, a *inbox.Announcement, at time.Time, onlyUnread bool) (m inbox.Marker, changed bool, err error)
	ArchiveAnnouncement(ctx context.Context, userID string, a *inbox.Announcement, at time.Time) (inbox.Marker, error)
}

var errNoInbox = &Problem{Status: http.StatusNotFound, Code: "not_found", Title: "Not found"}

// owner returns the inbox's user: the token's subject, which must be the
// path's userId. Another user's inbox is a 404, exactly like a missing one,
// so that ids of other users cannot be probed. A userId that is not a user
// id (an email address: issue 13) is a 400, as on the service routes: no
// notification can name such a user, and it would reach the logs.
func (h *InboxHandler) owner(req *request) (string, *Problem) {
	if req.subject == "" {
		return "", &Problem{Status: http.StatusUnauthorized, Code: "unauthenticated", Title: "Authentication required",
			Detail: "inbox routes need a user token"}
	}
	param := req.PathParameters["userId"]
	if decoded, err := url.PathUnescape(param); err == nil && !validUserID(param) {
		param = decoded
	}
	if p := validateUserID(param, ""); p != nil {
		p.Parameter = "userId"
		return "", p
	}
	if !samePathUser(req.PathParameters["userId"], req.subject) {
		return "", errNoInbox
	}
	return req.subject, nil
}

// samePathUser compares the path's userId with the subject, also in its
// percent-decoded form: subjects like "auth0|123" travel encoded in paths.
func samePathUser(param, subject string) bool {
	if param == subject {
		return true
	}
	decoded, err := url.PathUnescape(param)
	return err == nil && decoded == subject
}

// itemIDShape bounds the ids the routes look up (notification and
// announcement ids are 27 base32 characters; anything far off is a 404
// without a read).
var itemIDShape = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// inboxItem is one rendered inbox entry.
type inboxItem struct {
	ID         string  `json:"id"`
	Kind       string  `json:"kind"`
	Type       string  `json:"type"`
	Title      string  `json:"title"`
	Body       string  `json:"body"`
	URL        *string `json:"url"`
	CreatedAt  string  `json:"createdAt"`
	ReadAt     *string `json:"readAt"`
	ArchivedAt *string `json:"archivedAt"`
}

// Item kinds.
const (
	kindNotification = "notification"
	kindAnnouncement = "announcement"
)

type inboxPage struct {
	Items      []inboxItem `json:"items"`
	NextCursor string      `json:"nextCursor,omitempty"`
}

func (h *InboxHandler) listInbox(ctx context.Context, req *request) response {
	user, p := h.owner(req)
	if p != nil {
		return problemResponse(p)
	}
	q := req.QueryStringParameters
	f, err := inbox.ParseFilter(q["filter"])
	if err != nil {
		return problemResponse(&Problem{Status: http.StatusBadRequest, Code: "invalid_filter", Detail: "filter must be all, unread or archived"})
	}
	limit, err := inbox.ParseLimit(q["limit"])
	if err != nil {
		return problemResponse(&Problem{Status: http.StatusBadRequest, Code: "invalid_limit", Detail: "limit must be an integer from 1 to 100"})
	}
	position := ""
	if c, ok := q["cursor"]; ok {
		cur, err := inbox.DecodeCursor(c, string(f))
		if err != nil {
			return problemResponse(&Problem{Status: http.StatusBadRequest, Code: "invalid_cursor",
				Detail: "cursor is not one this list returned (a cursor is only valid with the filter it came from)"})
		}
		position = cur.Position
	}
	// The page's one query runs alongside the (cached) announcements and the
	// one batch read of the user's markers and locale.
	var (
		wg      sync.WaitGroup
		entries []inbox.Entry
		more    bool
		listErr error
	)
	wg.Go(func() { entries, more, listErr = h.inboxStore.ListInbox(ctx, user, f, position, limit) })
	wg.Go(func() { _ = h.seen(ctx, user) }) // a page read is presence
	active, state, stateErr := h.userAnnouncements(ctx, user, true)
	wg.Wait()
	if err := errors.Join(listErr, stateErr); err != nil {
		return h.internalError(ctx, "list inbox", err)
	}
	page, after := inbox.Page(entries, more, inbox.AnnouncementEntries(active, state.Markers, f, position), limit)
	body := inboxPage{Items: make([]inboxItem, 0, len(page))}
	for _, e := range page {
		body.Items = append(body.Items, h.render(ctx, e, state.Locale))
	}
	if after != "" {
		body.NextCursor = inbox.Cursor{Scope: string(f), Position: after}.Encode()
	}
	return response{status: http.StatusOK, body: body, headers: map[string]string{"Cache-Control": "no-store"}}
}

// userAnnouncements returns the active announcements and the user's state
// (markers, and the profile locale when withLocale).
func (h *InboxHandler) userAnnouncements(ctx context.Context, user string, withLocale bool) ([]inbox.Announcement, inbox.UserState, error) {
	active, err := h.activeAnnouncements.get(ctx)
	if err != nil {
		return nil, inbox.UserState{}, err
	}
	if len(active) == 0 && !withLocale {
		return nil, inbox.UserState{}, nil
	}
	state, err := h.inboxStore.InboxState(ctx, user, inbox.AnnouncementIDs(active), withLocale)
	return active, state, err
}

func (h *InboxHandler) render(ctx context.Context, e inbox.Entry, profileLocale string) inboxItem {
	if a := e.Announcement; a != nil {
		return inboxItem{
			ID: a.ID, Kind: kindAnnouncement, Type: kindAnnouncement, Title: a.Title, Body: a.Body, URL: optional(a.URL),
			CreatedAt: a.PublishedAt.UTC().Format(time.RFC3339Nano), ReadAt: timePtr(e.Marker.ReadAt), ArchivedAt: timePtr(e.Marker.ArchivedAt),
		}
	}
	n := e.Notification
	item := inboxItem{
		ID: n.ID, Kind: kindNotification, Type: n.Type, Title: n.Type,
		CreatedAt: n.CreatedAt.UTC().Format(time.RFC3339Nano), ReadAt: timePtr(n.ReadAt), ArchivedAt: timePtr(n.ArchivedAt),
	}
	locale := n.Recipient.Locale
	if locale == "" {
		locale = profileLocale
	}
	c, err := h.renderInApp(n, locale)
	if err != nil {
		// The item stays listed (it can still be read or archived) with its
		// type as the title; the logs say why.
		h.log.WarnContext(ctx, "render inbox item", "notificationId", n.ID, "type", n.Type, "error", err)
		return item
	}
	item.Title, item.Body, item.URL = c.Title, c.Body, optional(c.URL)
	return item
}

var errUnknownType = errors.New("type is not in the catalog")

func (h *InboxHandler) renderInApp(n *domain.Notification, locale string) (catalog.Content, error) {
	t, ok := h.catalog.Lookup(n.Type)
	if !ok {
		return catalog.Content{}, errUnknownType
	}
	return t.Render(catalog.KindInApp, locale, n.Data)
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (h *InboxHandler) unreadCount(ctx context.Context, req *request) response {
	user, p := h.owner(req)
	if p != nil {
		return problemResponse(p)
	}
	var (
		wg       sync.WaitGroup
		count    int
		countErr error
	)
	wg.Go(func() { count, countErr = h.inboxStore.CountUnread(ctx, user, inbox.CountCap) })
	wg.Go(func() { _ = h.seen(ctx, user) }) // polling the badge is presence
	active, state, stateErr := h.userAnnouncements(ctx, user, false)
	wg.Wait()
	if err := errors.Join(countErr, stateErr); err != nil {
		return h.internalError(ctx, "count unread", err)
	}
	badge := inbox.NewBadge(count + inbox.UnreadAnnouncements(active, state.Markers))
	return response{status: http.StatusOK, body: badge, headers: map[string]string{"Cache-Control": "no-store"}}
}

// itemState is the answer to read and archive.
type itemState struct {
	ID         string  `json:"id"`
	Kind       string  `json:"kind"`
	ReadAt     *string `json:"readAt"`
	ArchivedAt *string `json:"archivedAt"`
}

func (h *InboxHandler) markRead(ctx context.Context, req *request) response {
	return h.changeItem(ctx, req, "mark read",
		func(user, id string, at time.Time) (*domain.Notification, error) {
			return h.inboxStore.MarkRead(ctx, user, id, at)
		},
		func(user string, a *inbox.Announcement, at time.Time) (inbox.Marker, error) {
			m, _, err := h.inboxStore.MarkAnnouncementRead(ctx, user, a, at, false)
			return m, err
		})
}

func (h *InboxHandler) archive(ctx context.Context, req *request) response {
	return h.changeItem(ctx, req, "archive",
		func(user, id string, at time.Time) (*domain.Notification, error) {
			return h.inboxStore.Archive(ctx, user, id, at)
		},
		func(user string, a *inbox.Announcement, at time.Time) (inbox.Marker, error) {
			return h.inboxStore.ArchiveAnnouncement(ctx, user, a, at)
		})
}

// changeItem applies a read or archive to one inbox item: a notification
// through a write conditional on its owner, an active announcement through
// the user's marker.
func (h *InboxHandler) changeItem(ctx context.Context, req *request, what string,
	notification func(user, id string, at time.Time) (*domain.Notification, error),
	announcement func(user string, a *inbox.Announcement, at time.Time) (inbox.Marker, error),
) response {
	user, p := h.owner(req)
	if p != nil {
		return problemResponse(p)
	}
	id := req.PathParameters["id"]
	if !itemIDShape.MatchString(id) {
		return problemResponse(errNoInbox)
	}
	now := h.now()
	if inbox.IsAnnouncementID(id) {
		a, err := h.activeAnnouncements.find(ctx, id, now)
		if err != nil {
			return h.inboxStoreError(ctx, what, err)
		}
		m, err := announcement(user, a, now)
		if err != nil {
			return h.inboxStoreError(ctx, what, err)
		}
		h.notifyLive(ctx, user, id)
		return response{status: http.StatusOK, body: itemState{ID: id, Kind: kindAnnouncement, ReadAt: timePtr(m.ReadAt), ArchivedAt: timePtr(m.ArchivedAt)}}
	}
	n, err := notification(user, id, now)
	if err != nil {
		return h.inboxStoreError(ctx, what, err)
	}
	h.log.InfoContext(ctx, "inbox item changed", "notificationId", id, "action", what, "outcome", "ok")
	h.notifyLive(ctx, user, id)
	return response{status: http.StatusOK, body: itemState{ID: id, Kind: kindNotification, ReadAt: timePtr(n.ReadAt), ArchivedAt: timePtr(n.ArchivedAt)}}
}

// inboxStoreError answers 404 for missing or foreign items and 500 otherwise.
func (h *InboxHandler) inboxStoreError(ctx context.Context, what string, err error) response {
	if statusFor(err) == http.StatusNotFound {
		return problemResponse(errNoInbox)
	}
	return h.internalError(ctx, what, err)
}

// ReadAllPerCall bounds the notifications one read-all marks, so that a call
// ends well inside the API's timeout whatever the backlog (8 updates in
// flight); the answer says "more" and the client calls again.
const ReadAllPerCall = 1000

type readAllResult struct {
	Updated int `json:"updated"`
	// More: unread notifications remain (one call marks a bounded number);
	// call again.
	More bool `json:"more,omitempty"`
}

func (h *InboxHandler) markAllRead(ctx context.Context, req *request) response {
	user, p := h.owner(req)
	if p != nil {
		return problemResponse(p)
	}
	now := h.now()
	var (
		wg       sync.WaitGroup
		updated  int
		more     bool
		notifErr error
	)
	wg.Go(func() { updated, more, notifErr = h.inboxStore.MarkAllRead(ctx, user, now, ReadAllPerCall) })
	annUpdated, annErr := h.readAllAnnouncements(ctx, user, now)
	wg.Wait()
	if err := errors.Join(notifErr, annErr); err != nil {
		return h.internalError(ctx, "read all", err)
	}
	h.log.InfoContext(ctx, "inbox read all", "updated", updated+annUpdated, "more", more, "outcome", "ok")
	if updated+annUpdated > 0 {
		h.notifyLive(ctx, user, "")
	}
	return response{status: http.StatusOK, body: readAllResult{Updated: updated + annUpdated, More: more}}
}

// readAllAnnouncements writes read markers for the active announcements the
// user has not read or archived; announcements that are not active get none.
func (h *InboxHandler) readAllAnnouncements(ctx context.Context, user string, now time.Time) (int, error) {
	active, state, err := h.userAnnouncements(ctx, user, false)
	if err != nil {
		return 0, err
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		n    int
		errs []error
	)
	for i := range active {
		a := &active[i]
		if m := state.Markers[a.ID]; !inbox.Shows(inbox.FilterUnread, m.Read(), m.Archived()) {
			continue
		}
		wg.Go(func() {
			_, changed, err := h.inboxStore.MarkAnnouncementRead(ctx, user, a, now, true)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			} else if changed {
				n++
			}
		})
	}
	wg.Wait()
	return n, errors.Join(errs...)
}

// notifyLive tells the user's open live-inbox connections that an item (id,
// or every item for read-all) changed. Best effort: the change is stored and
// the answer stands whatever becomes of the notice.
func (h *InboxHandler) notifyLive(ctx context.Context, user, id string) {
	if err := h.live.Notify(ctx, []live.Event{{UserID: user, Kind: live.KindUpdated, ID: id}}); err != nil {
		h.log.WarnContext(ctx, "live notify failed; dropped", "error", err)
	}
}
