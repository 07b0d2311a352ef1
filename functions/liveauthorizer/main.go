// Command liveauthorizer is the live inbox's $connect authorizer Lambda (the user's JWT from the query string).
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/app/liveauthorizerfn"
)

func main() {
	d := app.LambdaDeps(nil) // no catalog: nothing here renders notifications
	h, err := liveauthorizerfn.New(d)
	if err != nil {
		app.Fail(d.Log, err)
	}
	lambda.Start(h.Handle)
}
