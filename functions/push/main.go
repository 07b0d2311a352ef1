// Command push is the Web Push channel Lambda (SQS → push services, VAPID).
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/app/pushfn"
	"github.com/heraldhq/herald/internal/catalog"
)

func main() {
	d := app.LambdaDeps(catalog.Load)
	h, err := pushfn.New(context.Background(), d)
	if err != nil {
		app.Fail(d.Log, err)
	}
	lambda.StartHandlerFunc(h.Handle)
}
