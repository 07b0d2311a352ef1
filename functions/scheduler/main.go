// Command scheduler is the scheduler Lambda: every minute it releases deferred deliveries that are due.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/app/schedulerfn"
)

func main() {
	d := app.LambdaDeps(nil) // no catalog: nothing here reads notification types
	h, err := schedulerfn.New(d)
	if err != nil {
		app.Fail(d.Log, err)
	}
	lambda.StartHandlerFunc(h.Handle)
}
