// Command feedback is the SES feedback Lambda (SNS → delivery status and
// address suppression).
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/heraldhq/herald/internal/app"
)

func main() {
	d := app.LambdaDeps()
	h, err := app.NewFeedback(d)
	if err != nil {
		app.Fail(d.Log, err)
	}
	lambda.Start(h.Handle)
}
