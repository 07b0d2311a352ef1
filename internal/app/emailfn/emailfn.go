// Package emailfn wires the email function (SQS → SES v2).
package emailfn

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/app/unsubscribekey"
	"github.com/heraldhq/herald/internal/app/workerfn"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/email"
	"github.com/heraldhq/herald/internal/failover"
	"github.com/heraldhq/herald/internal/worker"
)

var _ email.UnsubscribeLinks = unsubscribekey.Links{}

// New wires the email function. UNSUBSCRIBE_URL is the public URL of the
// API's /v1/unsubscribe route, put in List-Unsubscribe with a signed token.
func New(d app.Deps) (*worker.Handler, error) {
	env, err := d.Require("EMAIL_FROM", "UNSUBSCRIBE_URL")
	if err != nil {
		return nil, err
	}
	signer, err := unsubscribekey.New(d)
	if err != nil {
		return nil, err
	}
	st, err := d.Stores()
	if err != nil {
		return nil, err
	}
	links := unsubscribekey.Links{Signer: signer, Base: env["UNSUBSCRIBE_URL"]}
	client := sesv2.NewFromConfig(d.AWS, func(o *sesv2.Options) { o.Retryer = email.Retryer() })
	primary := email.New(client, email.Config{From: env["EMAIL_FROM"], ConfigurationSet: d.Getenv("SES_CONFIGURATION_SET"), Unsubscribe: links})
	// SES_SECONDARY_REGION: the same sender through SES in another region,
	// its own configuration set (issue 38); empty: no failover.
	var secondary channel.Provider
	region := d.Getenv("SES_SECONDARY_REGION")
	if region != "" {
		if region == d.AWS.Region {
			return nil, fmt.Errorf("SES_SECONDARY_REGION %q: the stack's own region cannot be its failover", region)
		}
		second := sesv2.NewFromConfig(d.AWS, func(o *sesv2.Options) { o.Region, o.Retryer = region, email.Retryer() })
		secondary = email.New(second, email.Config{From: env["EMAIL_FROM"], ConfigurationSet: d.Getenv("SES_SECONDARY_CONFIGURATION_SET"), Unsubscribe: links})
	}
	fo, err := workerfn.Failover(d, st, failover.SES(d.AWS.Region), secondary, failover.SES(region))
	if err != nil {
		return nil, err
	}
	return workerfn.New(d, st, primary, fo)
}
