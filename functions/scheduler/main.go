// Command scheduler is the scheduler Lambda: every minute it releases deferred deliveries that are due.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/heraldhq/herald/internal/app"
)

func main() {
	d := app.LambdaDeps()
	h, err := app.NewScheduler(d)
	if err != nil {
		app.Fail(d.Log, err)
	}
	lambda.StartHandlerFunc(h.Handle)
}
