// Package campaignfn wires the campaign function.
package campaignfn

import (
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/campaign"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/queue"
)

var (
	_ campaign.Store      = store{}
	_ campaign.Queue      = (*queue.CampaignQueue)(nil)
	_ campaign.Visibility = (*queue.Visibility)(nil)
)

// store is the fan-out's table: the campaign, its chunks and lots, and the
// notifications it creates.
type store struct {
	*dynamo.Campaigns
	*dynamo.Notifications
	*dynamo.Topics
}

// ReconcileDelayEnv is how long a lot waits between reconciles (a Go
// duration; empty: campaign.DefaultReconcileDelay).
const ReconcileDelayEnv = "CAMPAIGN_RECONCILE_DELAY"

// ScanSegmentsEnv is how many parallel scan segments a segment-"all"
// campaign reads the profiles in (1–1000; empty: campaign.DefaultScanSegments).
const ScanSegmentsEnv = "CAMPAIGN_SCAN_SEGMENTS"

// FanOutRateEnv is the fan-out's write budget in notifications per second
// (all lots together; empty or 0: unpaced) and MaxConcurrencyEnv the campaign
// mapping's MaximumConcurrency, which divides it among the lots.
const (
	FanOutRateEnv     = "CAMPAIGN_FANOUT_RATE"
	MaxConcurrencyEnv = "CAMPAIGN_MAX_CONCURRENCY"
)

// New wires the campaign function: it sends its own next steps to the
// campaign queue (CAMPAIGN_QUEUE_URL).
func New(d app.Deps) (*campaign.Handler, error) {
	if err := d.RequireCatalog(); err != nil {
		return nil, err
	}
	st, err := d.Stores()
	if err != nil {
		return nil, err
	}
	env, err := d.Require(queue.CampaignQueueEnv)
	if err != nil {
		return nil, err
	}
	var delay time.Duration
	if v := d.Getenv(ReconcileDelayEnv); v != "" {
		if delay, err = time.ParseDuration(v); err != nil || delay < time.Second {
			return nil, fmt.Errorf("%s %q: want a Go duration of at least 1s", ReconcileDelayEnv, v)
		}
	}
	segments := 0
	if v := d.Getenv(ScanSegmentsEnv); v != "" {
		if segments, err = strconv.Atoi(v); err != nil || segments < 1 || segments > domain.MaxScanSegments {
			return nil, fmt.Errorf("%s %q: want 1 to %d", ScanSegmentsEnv, v, domain.MaxScanSegments)
		}
	}
	var rate float64
	conc := 0
	if v := d.Getenv(FanOutRateEnv); v != "" && v != "0" {
		if rate, err = strconv.ParseFloat(v, 64); err != nil || rate <= 0 {
			return nil, fmt.Errorf("%s %q: want a non-negative number of notifications per second (0: unpaced)", FanOutRateEnv, v)
		}
		if conc, err = strconv.Atoi(d.Getenv(MaxConcurrencyEnv)); err != nil || conc < 1 {
			return nil, fmt.Errorf("%s %q: want the campaign mapping's MaximumConcurrency with %s", MaxConcurrencyEnv, d.Getenv(MaxConcurrencyEnv), FanOutRateEnv)
		}
	}
	client := sqs.NewFromConfig(d.AWS)
	return campaign.New(campaign.Deps{Store: store{st.Campaigns, st.Notifications, st.Topics}, Queue: queue.NewCampaignQueue(client, env[queue.CampaignQueueEnv]),
		Visibility: queue.NewVisibility(client), Catalog: d.Catalog, Now: d.Now, Log: d.Log, Metrics: d.Recorder(), ReconcileDelay: delay, ScanSegments: segments,
		FanOutRate: rate, MaxConcurrency: conc}), nil
}
