// Command relay is the DynamoDB stream relay Lambda: new notifications become deliveries and work messages.
package main

import (
	// IANA time zones for user timezones and quiet hours: provided.al2023 has
	// no zoneinfo.
	_ "time/tzdata"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/app/relayfn"
	"github.com/heraldhq/herald/internal/catalog"
)

func main() {
	d := app.LambdaDeps(catalog.LoadWithoutSampleRenders) // the relay plans, never renders
	h, err := relayfn.New(d)
	if err != nil {
		app.Fail(d.Log, err)
	}
	lambda.StartHandlerFunc(h.Handle)
}
