// Package smsfn wires the SMS function (SQS → SNS).
package smsfn

import (
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/app/workerfn"
	"github.com/heraldhq/herald/internal/failover"
	"github.com/heraldhq/herald/internal/sms"
	"github.com/heraldhq/herald/internal/worker"
)

// New wires the SMS function.
func New(d app.Deps) (*worker.Handler, error) {
	st, err := d.Stores()
	if err != nil {
		return nil, err
	}
	client := sns.NewFromConfig(d.AWS, func(o *sns.Options) { o.Retryer = sms.Retryer() })
	// SNS is named on deliveries and keeps a breaker; End User Messaging SMS
	// as its failover is not wired yet (docs/decisions.md, "Provider failover").
	fo, err := workerfn.Failover(d, st, failover.SNS, nil, "")
	if err != nil {
		return nil, err
	}
	return workerfn.New(d, st, sms.New(client, sms.Config{SenderID: d.Getenv("SMS_SENDER_ID")}), fo)
}
