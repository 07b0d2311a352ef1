package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Announcement is a message to every user, shown in their inboxes between
// PublishedAt (default now) and ExpiresAt.
type Announcement struct {
	Title       string     `json:"title"`
	Body        string     `json:"body"`
	URL         string     `json:"url,omitempty"`
	PublishedAt *time.Time `json:"publishedAt,omitempty"`
	ExpiresAt   time.Time  `json:"expiresAt"`
	// IdempotencyKey works as for notifications; CreateAnnouncement
	// generates one when it is empty and keeps it across its own retries.
	IdempotencyKey string `json:"-"`
}

// StoredAnnouncement is an announcement as Herald stores it.
type StoredAnnouncement struct {
	ID          string    `json:"id"`
	Title       string    `json:"title"`
	Body        string    `json:"body"`
	URL         *string   `json:"url"`
	PublishedAt time.Time `json:"publishedAt"`
	ExpiresAt   time.Time `json:"expiresAt"`
	CreatedAt   time.Time `json:"createdAt"`
	// Status says whether it is shown now (scheduled, active, expired).
	Status string `json:"status"`
	// Replayed is true when an earlier request with the same key created it.
	Replayed bool `json:"-"`
}

// CreateAnnouncement publishes an announcement.
func (c *Client) CreateAnnouncement(ctx context.Context, a Announcement) (*StoredAnnouncement, error) {
	if a.IdempotencyKey == "" {
		a.IdempotencyKey = c.newKey()
	}
	var out StoredAnnouncement
	res, err := c.do(ctx, call{method: http.MethodPost, path: "/v1/announcements", body: a, idempotencyKey: a.IdempotencyKey,
		ok: []int{http.StatusCreated}, out: &out})
	if err != nil {
		return nil, err
	}
	out.Replayed = res.header.Get("Idempotent-Replayed") == "true"
	return &out, nil
}

// Page selects a page of a list: Limit 0 is the server's default, Cursor
// the previous page's NextCursor.
type Page struct {
	Limit  int
	Cursor string
}

func (p Page) query() url.Values {
	q := url.Values{}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Cursor != "" {
		q.Set("cursor", p.Cursor)
	}
	return q
}

// AnnouncementPage is one page of announcements, newest first; NextCursor
// is empty on the last page.
type AnnouncementPage struct {
	Items      []StoredAnnouncement `json:"items"`
	NextCursor string               `json:"nextCursor"`
}

// ListAnnouncements reads one page of announcements.
func (c *Client) ListAnnouncements(ctx context.Context, p Page) (*AnnouncementPage, error) {
	var out AnnouncementPage
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/v1/announcements", query: p.query(), ok: []int{http.StatusOK}, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}
