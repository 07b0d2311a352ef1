// Package schedulerfn wires the scheduler function.
package schedulerfn

import (
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/scheduler"
)

var (
	_ scheduler.Store     = (*dynamo.Store)(nil)
	_ scheduler.Publisher = (*queue.Publisher)(nil)
)

// New wires the scheduler function: it publishes released deliveries to the
// nine queues named in the environment.
func New(d app.Deps) (*scheduler.Handler, error) {
	st, err := d.Store()
	if err != nil {
		return nil, err
	}
	urls, err := queue.URLsFromEnv(d.Getenv)
	if err != nil {
		return nil, err
	}
	pub := queue.NewPublisher(queue.NarrowClient(sqs.NewFromConfig(d.AWS)), urls)
	return scheduler.New(scheduler.Deps{Store: st, Publisher: pub, Now: d.Now, Log: d.Log, Metrics: d.Recorder()}), nil
}
