// Package relayfn wires the DynamoDB stream relay function.
package relayfn

import (
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/events"
	"github.com/heraldhq/herald/internal/events/awsbus"
	"github.com/heraldhq/herald/internal/live"
	"github.com/heraldhq/herald/internal/policy"
	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/relay"
)

var (
	_ relay.Store     = store{}
	_ relay.Publisher = (*queue.Publisher)(nil)
	_ relay.EventSink = (*events.Stream)(nil)
)

// store is the relay's table: the deliveries it plans and the profiles it
// reads, the rate counters, the budgets it counts against, digests it joins, the watches it arms and its
// failure notes.
type store struct {
	*dynamo.Notifications
	*dynamo.Users
	*dynamo.Quotas
	*dynamo.Digests
	*dynamo.Scheduling
	*dynamo.Budgets
}

// New wires the stream relay function: it publishes work messages to the
// nine queues named in the environment and, unless DELIVERY_EVENTS is none,
// the delivery and campaign events of the other records its mapping passes
// on the bus EVENT_BUS_NAME (parking what fails in EVENTS_DLQ_URL).
func New(d app.Deps) (*relay.Handler, error) {
	if err := d.RequireCatalog(); err != nil {
		return nil, err
	}
	st, err := d.Stores()
	if err != nil {
		return nil, err
	}
	urls, err := queue.URLsFromEnv(d.Getenv)
	if err != nil {
		return nil, err
	}
	sqsClient := sqs.NewFromConfig(d.AWS)
	pub := queue.NewPublisher(sqsClient, urls)
	limits, err := policy.LimitsFromEnv(d.Getenv)
	if err != nil {
		return nil, err
	}
	sink, err := eventSink(d, sqsClient)
	if err != nil {
		return nil, err
	}
	return relay.New(relay.Deps{Store: store{st.Notifications, st.Users, st.Quotas, st.Digests, st.Scheduling, st.Budgets}, Publisher: pub, Decode: dynamo.DecodeStreamNotification, Catalog: d.Catalog,
		Now: d.Now, Log: d.Log, Limits: limits, Metrics: d.Recorder(), Events: sink,
		Live: liveNotifier(d, sqsClient)}), nil
}

// eventSink wires the events publisher; nil when DELIVERY_EVENTS is none.
func eventSink(d app.Deps, sqsClient *sqs.Client) (relay.EventSink, error) {
	env, err := d.Require("DELIVERY_EVENTS")
	if err != nil {
		return nil, err
	}
	mode, err := events.ParseMode(env["DELIVERY_EVENTS"])
	if err != nil {
		return nil, err
	}
	if mode == events.ModeNone {
		return nil, nil
	}
	if env, err = d.Require("EVENT_BUS_NAME", "EVENTS_DLQ_URL"); err != nil {
		return nil, err
	}
	return &events.Stream{
		Mode:   mode,
		Decode: events.Decoder{Delivery: dynamo.DecodeStreamDelivery, Campaign: dynamo.DecodeStreamCampaign},
		Publisher: &events.Publisher{
			Bus: &awsbus.Bus{API: eventbridge.NewFromConfig(d.AWS), BusName: env["EVENT_BUS_NAME"]},
			DLQ: &awsbus.DLQ{API: sqsClient, QueueURL: env["EVENTS_DLQ_URL"]},
			Log: d.Log,
		},
		Log: d.Log,
	}, nil
}

// liveNotifier sends new inbox items to LIVE_QUEUE_URL; none without it (a
// relay DLQ redrive of a stack deployed before the live inbox).
func liveNotifier(d app.Deps, sqsClient *sqs.Client) live.Notifier {
	if url := d.Getenv(queue.LiveQueueEnv); url != "" {
		return queue.NewLiveQueue(sqsClient, url)
	}
	return live.NopNotifier{}
}
