// Package schedulerfn wires the scheduler function.
package schedulerfn

import (
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/live"
	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/scheduler"
)

var (
	_ scheduler.Store         = store{}
	_ scheduler.Publisher     = (*queue.Publisher)(nil)
	_ scheduler.ReleaseQueue  = (*queue.Releases)(nil)
	_ scheduler.Visibility    = (*queue.Visibility)(nil)
	_ live.AnnouncementMarker = (*dynamo.Inbox)(nil)
)

// store is the scheduler's table: the due index and watches it releases
// and checks, and the deliveries and notifications they name.
type store struct {
	*dynamo.Scheduling
	*dynamo.Notifications
}

// ReleaseRateEnv is the release's write budget: deliveries per second all
// due partitions together (empty or 0: each partition at
// scheduler.MaxPartitionReleaseRate).
const ReleaseRateEnv = "SCHEDULER_RELEASE_RATE"

// New wires the scheduler function: its tick sends release messages to the
// release queue (RELEASE_QUEUE_URL); its releases publish released
// deliveries to the nine queues named in the environment; a malformed release
// message is made visible again at once (it reaches the DLQ sooner); each
// tick also starts the live broadcast of announcements that became active
// (LIVE_QUEUE_URL).
func New(d app.Deps) (*scheduler.Handler, error) {
	st, err := d.Stores()
	if err != nil {
		return nil, err
	}
	urls, err := queue.URLsFromEnv(d.Getenv)
	if err != nil {
		return nil, err
	}
	env, err := d.Require(queue.ReleaseQueueEnv, queue.LiveQueueEnv)
	if err != nil {
		return nil, err
	}
	var rate float64
	if v := d.Getenv(ReleaseRateEnv); v != "" {
		if rate, err = strconv.ParseFloat(v, 64); err != nil || rate < 0 {
			return nil, fmt.Errorf("%s %q: want a non-negative number of deliveries per second", ReleaseRateEnv, v)
		}
	}
	client := sqs.NewFromConfig(d.AWS)
	pub := queue.NewPublisher(client, urls)
	releases := queue.NewReleases(client, env[queue.ReleaseQueueEnv])
	// Announcements that became active: their live broadcast (LIVE_QUEUE_URL).
	announcer := &live.Announcer{Store: st.Inbox, Queue: queue.NewLiveQueue(client, env[queue.LiveQueueEnv]), Now: d.Now, Log: d.Log}
	return scheduler.New(scheduler.Deps{Store: store{st.Scheduling, st.Notifications}, Publisher: pub, Releases: releases, Visibility: queue.NewVisibility(client), Now: d.Now, Log: d.Log, Metrics: d.Recorder(),
		PartitionReleaseRate: rate / dynamo.DueShards, Announcements: announcer}), nil
}
