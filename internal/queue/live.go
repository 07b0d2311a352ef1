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

var _ live.BroadcastQueue = (*LiveQueue)(nil)

// maxDelaySeconds is SQS's largest DelaySeconds (15 minutes).
const maxDelaySeconds = 900

// delaySeconds is delay as SQS's DelaySeconds: rounded up to whole
// seconds, at most 15 minutes.
func delaySeconds(delay time.Duration) int32 {
	return int32(min(maxDelaySeconds, (delay+time.Second-1)/time.Second))
}

// Broadcast sends broadcast messages (one a shard, or a shard's
// continuation), delivered after delay rounded up to whole seconds (SQS's
// unit), at most 15 minutes.
func (q *LiveQueue) Broadcast(ctx context.Context, bs []live.Broadcast, delay time.Duration) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), liveSendTimeout)
	defer cancel()
	msgs := make([]live.Batch, len(bs))
	for i := range bs {
		msgs[i] = live.Batch{Broadcast: &bs[i]}
	}
	return sendJSON(ctx, q.api, q.url, "live broadcast", msgs, delaySeconds(delay))
}

var _ live.LaterCloser = (*LiveQueue)(nil)

// CloseLater sends a connection to close (evicted while inside its
// $connect), delivered after delay rounded up to whole seconds.
func (q *LiveQueue) CloseLater(ctx context.Context, c live.Close, delay time.Duration) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), liveSendTimeout)
	defer cancel()
	return sendJSON(ctx, q.api, q.url, "live close", []live.Batch{{Close: &c}}, delaySeconds(delay))
}
