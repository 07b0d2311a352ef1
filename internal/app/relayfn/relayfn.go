// Package relayfn wires the DynamoDB stream relay function.
package relayfn

import (
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/policy"
	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/relay"
)

var (
	_ relay.Store     = (*dynamo.Store)(nil)
	_ relay.Publisher = (*queue.Publisher)(nil)
)

// New wires the stream relay function: it publishes work messages to the
// nine queues named in the environment.
func New(d app.Deps) (*relay.Handler, error) {
	if err := d.RequireCatalog(); err != nil {
		return nil, err
	}
	st, err := d.Store()
	if err != nil {
		return nil, err
	}
	urls, err := queue.URLsFromEnv(d.Getenv)
	if err != nil {
		return nil, err
	}
	pub := queue.NewPublisher(sqs.NewFromConfig(d.AWS), urls)
	limits, err := policy.LimitsFromEnv(d.Getenv)
	if err != nil {
		return nil, err
	}
	return relay.New(relay.Deps{Store: st, Publisher: pub, Decode: dynamo.DecodeStreamNotification, Catalog: d.Catalog,
		Now: d.Now, Log: d.Log, Limits: limits, Metrics: d.Recorder()}), nil
}
