// Package emailfn wires the email function (SQS → SES v2).
package emailfn

import (
	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/app/unsubscribekey"
	"github.com/heraldhq/herald/internal/app/workerfn"
	"github.com/heraldhq/herald/internal/email"
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
	client := sesv2.NewFromConfig(d.AWS, func(o *sesv2.Options) { o.Retryer = email.Retryer() })
	return workerfn.New(d, st, email.New(client, email.Config{
		From: env["EMAIL_FROM"], ConfigurationSet: d.Getenv("SES_CONFIGURATION_SET"),
		Unsubscribe: unsubscribekey.Links{Signer: signer, Base: env["UNSUBSCRIBE_URL"]},
	}))
}
