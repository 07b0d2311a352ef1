package ops

import (
	"testing"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/storetest"
)

// The operator tests' fake answers the store contract as the DynamoDB
// adapter does (internal/dynamo runs the same suite on DynamoDB Local).
func TestFakeStoreContract(t *testing.T) {
	storetest.DeliveryContract(t, func(t *testing.T) storetest.DeliveryHarness {
		s := newFakeStore()
		return storetest.DeliveryHarness{Store: s,
			Seed: func(_ testing.TB, d domain.Delivery) { s.deliveries.Put(d) },
			Get: func(_ testing.TB, id string, ch domain.Channel) (domain.Delivery, bool) {
				return s.deliveries.Get(id, ch)
			}}
	})
	storetest.NotificationContract(t, func(t *testing.T) storetest.NotificationHarness {
		return storetest.NotificationHarness{Get: newFakeStore().GetNotificationWithDeliveries}
	})
}
