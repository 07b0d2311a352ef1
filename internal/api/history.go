package api

import (
	"context"
	"net/http"
	"time"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/inbox"
)

// HistoryStore is what the recipient's history route needs from the table:
// one query a page (dynamo.History.ListHistory).
type HistoryStore interface {
	ListHistory(ctx context.Context, caller, userID string, f domain.HistoryFilter, position string, limit int) (domain.HistoryPage, error)
}

// historyCursorScope binds a history cursor to this list.
const historyCursorScope = "history"

// historyPage is GET /v1/users/{userId}/notifications.
type historyPage struct {
	Items      []historyEntry `json:"items"`
	NextCursor string         `json:"nextCursor,omitempty"`
}

// historyEntry is one notification of the caller's to the user and every
// channel's delivery that has an item (a channel sent at once gets its item
// when a worker claims it).
type historyEntry struct {
	ID         string                  `json:"id"`
	Type       string                  `json:"type"`
	Priority   string                  `json:"priority"`
	Caller     string                  `json:"caller"`
	CreatedAt  string                  `json:"createdAt"`
	CampaignID string                  `json:"campaignId,omitempty"`
	ResourceID string                  `json:"resourceId,omitempty"`
	Deliveries map[string]deliveryView `json:"deliveries"`
}

func badQuery(code, param, detail string) response {
	return problemResponse(&Problem{Status: http.StatusBadRequest, Code: code, Parameter: param, Detail: detail})
}

// historyFilterOf reads the query's filters; a bad one is a 400 naming it.
func historyFilterOf(q map[string]string) (domain.HistoryFilter, *response) {
	var f domain.HistoryFilter
	if t := q["type"]; t != "" {
		if len(t) > 100 {
			r := badQuery("invalid_type", "type", "type is at most 100 characters")
			return f, &r
		}
		f.Type = t
	}
	if c := q["channel"]; c != "" {
		ch, err := domain.ParseChannel(c)
		if err != nil {
			r := badQuery("invalid_channel", "channel", "channel must be email, sms or push")
			return f, &r
		}
		f.Channel = ch
	}
	if s := q["status"]; s != "" {
		if !domain.KnownStatus(domain.Status(s)) {
			r := badQuery("invalid_status", "status", "status must be a delivery state (queued, sent, skipped, deferred, failed, …)")
			return f, &r
		}
		f.Status = domain.Status(s)
	}
	for _, p := range []struct {
		name string
		to   *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if v := q[p.name]; v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				r := badQuery("invalid_time", p.name, p.name+" must be an RFC 3339 time")
				return f, &r
			}
			*p.to = t
		}
	}
	return f, nil
}

// listHistory answers a user's history of the caller's notifications,
// newest first: one query a page, whatever the filters (docs/decisions.md,
// "A recipient's history in the inbox index"). Another caller's
// notifications are in another partition: never read.
func (h *NotificationsHandler) listHistory(ctx context.Context, req *request) response {
	userID, p := pathUserID(req)
	if p != nil {
		return problemResponse(p)
	}
	q := req.QueryStringParameters
	f, bad := historyFilterOf(q)
	if bad != nil {
		return *bad
	}
	limit, err := inbox.ParseLimit(q["limit"])
	if err != nil {
		return badQuery("invalid_limit", "limit", "limit must be an integer from 1 to 100")
	}
	position := ""
	if c, ok := q["cursor"]; ok {
		cur, err := inbox.DecodeCursor(c, historyCursorScope)
		if err != nil {
			return badQuery("invalid_cursor", "cursor", "cursor is not one this list returned")
		}
		position = cur.Position
	}
	page, err := h.history.ListHistory(ctx, req.caller, userID, f, position, limit)
	if err != nil {
		return h.internalError(ctx, "list history", err)
	}
	body := historyPage{Items: make([]historyEntry, 0, len(page.Entries))}
	for _, e := range page.Entries {
		en := historyEntry{ID: e.NotificationID, Type: e.Type, Priority: string(e.Priority), Caller: e.Caller,
			CreatedAt: formatTime(e.CreatedAt), CampaignID: e.CampaignID, ResourceID: e.ResourceID,
			Deliveries: make(map[string]deliveryView, len(e.Deliveries))}
		for _, d := range e.Deliveries {
			en.Deliveries[string(d.Channel)] = deliveryViewOf(d, e.CreatedAt)
		}
		body.Items = append(body.Items, en)
	}
	if page.Next != "" {
		body.NextCursor = inbox.Cursor{Scope: historyCursorScope, Position: page.Next}.Encode()
	}
	return response{status: http.StatusOK, body: body, headers: map[string]string{"Cache-Control": "no-store"}}
}
