package queue

import (
	"context"

	"github.com/heraldhq/herald/internal/recovery"
)

// ReleaseQueueEnv names the scheduler's release queue URL.
const ReleaseQueueEnv = "RELEASE_QUEUE_URL"

// Releases sends the scheduler's release messages, one per due-index
// partition, to the release queue.
type Releases struct {
	api API
	url string
}

// NewReleases returns a sender for the release queue at url.
func NewReleases(api API, url string) *Releases { return &Releases{api: api, url: url} }

// EnqueueReleases sends one message per partition, ten per call, calls in
// parallel; entries SQS fails through no fault of the sender are retried.
func (r *Releases) EnqueueReleases(ctx context.Context, parts []recovery.DuePartition) error {
	return sendJSON(ctx, r.api, r.url, "release", parts, 0)
}
