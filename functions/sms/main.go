// Command sms is the SMS channel Lambda (SQS → SNS).
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/app/smsfn"
	"github.com/heraldhq/herald/internal/catalog"
)

func main() {
	d := app.LambdaDeps(catalog.Load)
	h, err := smsfn.New(d)
	if err != nil {
		app.Fail(d.Log, err)
	}
	lambda.StartHandlerFunc(h.Handle)
}
