// Command livepost is the live inbox's poster Lambda (LiveQueue → PostToConnection).
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/app/livepostfn"
)

func main() {
	d := app.LambdaDeps(nil) // no catalog: nothing here renders notifications
	h, err := livepostfn.New(d)
	if err != nil {
		app.Fail(d.Log, err)
	}
	lambda.Start(h.Handle)
}
