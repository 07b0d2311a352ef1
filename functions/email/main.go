// Command email is the email channel Lambda (SQS → SES v2).
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/app/emailfn"
	"github.com/heraldhq/herald/internal/catalog"
)

func main() {
	d := app.LambdaDeps(catalog.Load)
	h, err := emailfn.New(d)
	if err != nil {
		app.Fail(d.Log, err)
	}
	lambda.StartHandlerFunc(h.Handle)
}
