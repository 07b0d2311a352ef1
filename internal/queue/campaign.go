package queue

import (
	"context"
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

// CampaignQueueEnv names the campaign work queue's URL.
const CampaignQueueEnv = "CAMPAIGN_QUEUE_URL"

// CampaignQueue sends the steps of campaigns' fan-out (plan, scan, lot, reconcile)
// to the campaign queue.
type CampaignQueue struct {
	api API
	url string
}

// NewCampaignQueue returns a sender for the campaign queue at url.
func NewCampaignQueue(api API, url string) *CampaignQueue { return &CampaignQueue{api: api, url: url} }

// SendCampaign sends msgs, each delayed by delay (at most 15 minutes), ten
// per call, calls in parallel; entries SQS fails through no fault of the
// sender are retried.
func (q *CampaignQueue) SendCampaign(ctx context.Context, msgs []domain.CampaignMessage, delay time.Duration) error {
	delay = min(max(delay, 0), maxDelay)
	return sendJSON(ctx, q.api, q.url, "campaign", msgs, int32(delay/time.Second))
}
