package campaign

import (
	"testing"

	"github.com/heraldhq/herald/internal/storetest"
)

// The campaign tests' fake creates notifications as the DynamoDB adapter
// does (internal/dynamo runs the same suite on DynamoDB Local).
func TestFakeStoreContract(t *testing.T) {
	storetest.NotificationContract(t, func(t *testing.T) storetest.NotificationHarness {
		return storetest.NotificationHarness{Create: newFakeStore().CreateNotification}
	})
}
