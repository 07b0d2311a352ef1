// Command live is the live inbox's WebSocket routes Lambda ($connect, $disconnect, $default).
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/app/livefn"
)

func main() {
	d := app.LambdaDeps(nil) // no catalog: nothing here renders notifications
	h, err := livefn.New(d)
	if err != nil {
		app.Fail(d.Log, err)
	}
	lambda.Start(h.Handle)
}
