// Command scheduler is the scheduler Lambda: every minute it finds the due
// partitions of the due-time index and sends one release message each; the
// release queue's messages invoke it again to release one partition.
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
	lambda.StartHandlerFunc(h.Invoke)
}
