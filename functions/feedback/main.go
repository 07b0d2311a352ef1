// Command feedback is the SES feedback Lambda (SNS → delivery status and
// address suppression).
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/app/feedbackfn"
)

func main() {
	d := app.LambdaDeps(nil) // no catalog: nothing here reads notification types
	h, err := feedbackfn.New(d)
	if err != nil {
		app.Fail(d.Log, err)
	}
	lambda.Start(h.Handle)
}
