package browser

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

// emailOutcome waits for a notification's email to leave the states on the
// way (queued, sending) and answers "<status>: <reason>".
func emailOutcome(t *testing.T, c *client.Client, id string) string {
	t.Helper()
	var out string
	stacktest.Eventually(t, 30*time.Second, "the email outcome of "+id, func() bool {
		n, err := c.GetNotification(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		d := n.Deliveries["email"]
		out = d.Status + ": " + d.Reason
		return d.Status != "" && d.Status != "queued" && d.Status != "sending" && d.Status != "retrying"
	})
	return out
}
