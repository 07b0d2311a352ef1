// Command api is the HTTP API Lambda (API Gateway HTTP API, payload 2.0).
package main

import (
	// IANA time zones for user timezones and quiet hours: provided.al2023 has
	// no zoneinfo.
	_ "time/tzdata"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/app/apifn"
	"github.com/heraldhq/herald/internal/catalog"
)

func main() {
	d := app.LambdaDeps(catalog.Load)
	h, err := apifn.New(d)
	if err != nil {
		app.Fail(d.Log, err)
	}
	lambda.StartHandlerFunc(h.Handle)
}
