// Command send sends one notification with Herald's Go client and prints its
// id. As printed in the README: run it against `make dev` with
// `go run ./examples/send` (API names the API, default make dev's).
// Against AWS, pass the stack's ApiUrl and leave out WithDevCaller: the
// client then signs with SigV4, using the AWS SDK's default credentials chain.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/heraldhq/herald/client"
)

func main() {
	api := os.Getenv("API")
	if api == "" {
		api = "http://127.0.0.1:3000" // make dev
	}
	c, err := client.New(api, client.WithDevCaller("billing")) // locally: call as "billing"
	if err != nil {
		log.Fatal(err)
	}
	accepted, err := c.Send(context.Background(), client.Notification{
		Type:      "invoice.payment_failed",
		Recipient: client.Recipient{UserID: "u1", Email: "u1@example.com"},
		Data:      map[string]string{"invoiceUrl": "https://example.com/i/9"},
		// Retries reuse this key; without one the client generates it.
		IdempotencyKey: "invoice-9-failed",
	})
	var herr *client.Error
	if errors.As(err, &herr) {
		log.Fatalf("refused: %d %s at %s", herr.Status, herr.Code, herr.Pointer)
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(accepted.ID, accepted.Status)
}
