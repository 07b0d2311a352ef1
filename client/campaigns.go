package client

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/heraldhq/herald/client/events"
)

// Campaign is one notification type and content for many users
// (POST /v1/campaigns). It is created as a draft; recipients are its inline
// Audience (up to MaxChunk) and/or chunks uploaded with AddRecipients;
// StartCampaign fans it out.
type Campaign struct {
	Type string            `json:"type"`
	Data map[string]string `json:"data,omitempty"`
	// Priority is "high", "normal" or "low" (the default for campaigns).
	Priority  string     `json:"priority,omitempty"`
	Channels  []string   `json:"channels,omitempty"`
	SendAt    *time.Time `json:"sendAt,omitempty"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// Audience lists up to MaxChunk user ids inline, or is the segment
	// SegmentAll; nil: upload them with AddRecipients.
	Audience *Audience `json:"audience,omitempty"`
	// IdempotencyKey makes creation safe to repeat; CreateCampaign
	// generates one when empty and keeps it across its own retries (give
	// your own to retry safely after it returned an error).
	IdempotencyKey string `json:"-"`
}

// Audience is a campaign's inline recipients, or a segment (not both).
type Audience struct {
	UserIDs []string `json:"userIds,omitempty"`
	// Segment SegmentAll is every user with a profile when the campaign
	// runs; such a campaign takes no AddRecipients.
	Segment string `json:"segment,omitempty"`
}

// SegmentAll is the audience of every user with a profile.
const SegmentAll = "all"

// MaxChunk is the most user ids one inline audience or one chunk holds.
const MaxChunk = 1000

// CampaignStatus is a campaign with its counts. Every recipient ends in one
// of Sent, Skipped, Failed or Dropped; at "done" they add up to Recipients.
type CampaignStatus struct {
	ID       string   `json:"id"`
	Type     string   `json:"type"`
	Priority string   `json:"priority"`
	Channels []string `json:"channels"`
	// Segment is SegmentAll for a segment campaign, else empty.
	Segment string `json:"segment,omitempty"`
	// Status is draft, running, done or cancelled.
	Status      string     `json:"status"`
	Recipients  int        `json:"recipients"`
	Notified    int        `json:"notified"`
	Sent        int        `json:"sent"`
	Skipped     int        `json:"skipped"`
	Failed      int        `json:"failed"`
	Dropped     int        `json:"dropped"`
	SendAt      *time.Time `json:"sendAt"`
	ExpiresAt   *time.Time `json:"expiresAt"`
	CreatedAt   time.Time  `json:"createdAt"`
	StartedAt   *time.Time `json:"startedAt"`
	FinishedAt  *time.Time `json:"finishedAt"`
	CancelledAt *time.Time `json:"cancelledAt"`
	// EstimatedCompletionAt is when the campaign should be done (nil: no
	// rate bounds it); Estimate the rate it assumes.
	EstimatedCompletionAt *time.Time        `json:"estimatedCompletionAt"`
	Estimate              *CampaignEstimate `json:"estimate,omitempty"`
	// Replayed is true when CreateCampaign answered an earlier request with
	// the same idempotency key.
	Replayed bool `json:"-"`
}

// CampaignEstimate is the rate a campaign's finish estimate assumes: the
// slowest of each channel's provider rate for its priority and the
// fan-out's, plus one recount after the last send (the same as a Campaign
// State Change event's).
type CampaignEstimate = events.CampaignEstimate

// CreateCampaign creates a draft campaign.
func (c *Client) CreateCampaign(ctx context.Context, cp Campaign) (*CampaignStatus, error) {
	if cp.IdempotencyKey == "" {
		cp.IdempotencyKey = c.newKey()
	}
	var st CampaignStatus
	res, err := c.do(ctx, call{method: http.MethodPost, path: "/v1/campaigns", body: cp,
		idempotencyKey: cp.IdempotencyKey, ok: []int{http.StatusCreated}, out: &st})
	if err != nil {
		return nil, err
	}
	st.Replayed = res.header.Get("Idempotent-Replayed") == "true"
	return &st, nil
}

// AddRecipients uploads chunk n (0, 1, …) of a draft campaign's recipients,
// up to MaxChunk user ids. Repeating a chunk with the same ids is safe (it
// is how retries work); other ids are an *Error with Code "chunk_conflict".
// It returns how many distinct ids the chunk holds.
func (c *Client) AddRecipients(ctx context.Context, campaignID string, n int64, userIDs []string) (int, error) {
	var out struct {
		Recipients int `json:"recipients"`
	}
	_, err := c.do(ctx, call{method: http.MethodPost, path: "/v1/campaigns/" + url.PathEscape(campaignID) + "/recipients",
		body: map[string]any{"chunk": n, "userIds": userIDs}, ok: []int{http.StatusOK}, out: &out})
	return out.Recipients, err
}

// StartCampaign starts a draft campaign's fan-out. A campaign that is no
// longer a draft is an *Error with Code "campaign_not_draft", except when
// this call retried after an attempt whose answer was lost: then the
// campaign's state is read, and a running or done campaign is the answer
// (the lost attempt started it).
func (c *Client) StartCampaign(ctx context.Context, campaignID string) (*CampaignStatus, error) {
	st, err := c.campaignCall(ctx, http.MethodPost, campaignID, "/start", http.StatusAccepted)
	if e, ok := errorsAs(err); ok && e.Code == "campaign_not_draft" && e.Attempts > 1 {
		if now, gerr := c.GetCampaign(ctx, campaignID); gerr == nil && (now.Status == "running" || now.Status == "done") {
			return now, nil
		}
	}
	return st, err
}

// CancelCampaign cancels a draft or running campaign: what is not yet sent
// ends dropped. Repeating it is safe; a done campaign is an *Error with Code
// "campaign_finished".
func (c *Client) CancelCampaign(ctx context.Context, campaignID string) (*CampaignStatus, error) {
	return c.campaignCall(ctx, http.MethodDelete, campaignID, "", http.StatusOK)
}

// GetCampaign reads one of the caller's campaigns with its counts.
func (c *Client) GetCampaign(ctx context.Context, campaignID string) (*CampaignStatus, error) {
	return c.campaignCall(ctx, http.MethodGet, campaignID, "", http.StatusOK)
}

func (c *Client) campaignCall(ctx context.Context, method, id, suffix string, ok int) (*CampaignStatus, error) {
	var st CampaignStatus
	if _, err := c.do(ctx, call{method: method, path: "/v1/campaigns/" + url.PathEscape(id) + suffix, ok: []int{ok}, out: &st}); err != nil {
		return nil, err
	}
	return &st, nil
}
