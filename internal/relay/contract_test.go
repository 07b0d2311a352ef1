package relay_test

import (
	"testing"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/storetest"
)

// The relay tests' store answers the store contract as the DynamoDB adapter
// does (internal/dynamo runs the same suite on DynamoDB Local).
func TestMemStoreContract(t *testing.T) {
	storetest.DeliveryContract(t, func(t *testing.T) storetest.DeliveryHarness {
		s := newMemStore()
		return storetest.DeliveryHarness{Store: s, Create: s.CreateDelivery,
			Seed: func(_ testing.TB, d domain.Delivery) { s.deliveries.Put(d) },
			Get:  func(_ testing.TB, id string, ch domain.Channel) (domain.Delivery, bool) { return s.delivery(id, ch) }}
	})
}

func TestMemStoreBudgetContract(t *testing.T) {
	storetest.BudgetContract(t, newMemStore().CountBudget)
}
