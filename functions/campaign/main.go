// Command campaign is the campaign Lambda: it fans a started campaign out to
// its recipients (plan, lots, reconciles) from the campaign queue.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/app/campaignfn"
	"github.com/heraldhq/herald/internal/catalog"
)

func main() {
	d := app.LambdaDeps(catalog.LoadWithoutSampleRenders) // creates notifications, never renders
	h, err := campaignfn.New(d)
	if err != nil {
		app.Fail(d.Log, err)
	}
	lambda.StartHandlerFunc(h.Handle)
}
