package queue

import (
	"context"
	"time"

	"github.com/heraldhq/herald/internal/live"
)

// LiveQueueEnv names the live inbox's queue URL.
const LiveQueueEnv = "LIVE_QUEUE_URL"

// liveEventsPerMessage bounds a live message: ~80 bytes an event, so ten
// messages of a SendMessageBatch stay far under its 256 KB.
const liveEventsPerMessage = 200

// liveSendTimeout bounds what notifying may add to the caller (the relay's
// batch, a user's read): the post is best effort.
const liveSendTimeout = 2 * time.Second

// LiveQueue sends inbox changes to the live inbox's poster: a relay batch
// of a campaign is one or a few messages, not one a user.
type LiveQueue struct {
	api API
	url string
}

// NewLiveQueue returns a sender for the live queue at url.
func NewLiveQueue(api API, url string) *LiveQueue { return &LiveQueue{api: api, url: url} }

var _ live.Notifier = (*LiveQueue)(nil)

// Notify sends events, liveEventsPerMessage a message, ten messages a call.
func (q *LiveQueue) Notify(ctx context.Context, events []live.Event) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), liveSendTimeout)
	defer cancel()
	var batches []live.Batch
	for start := 0; start < len(events); start += liveEventsPerMessage {
		batches = append(batches, live.Batch{Events: events[start:min(start+liveEventsPerMessage, len(events))]})
	}
	return sendJSON(ctx, q.api, q.url, "live", batches, 0)
}
