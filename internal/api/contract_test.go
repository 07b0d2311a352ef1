package api

import (
	"testing"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/storetest"
)

// The handler tests' fake answers the store contract as the DynamoDB
// adapter does (internal/dynamo runs the same suite on DynamoDB Local).
func TestFakeStoreContract(t *testing.T) {
	storetest.DeliveryContract(t, func(t *testing.T) storetest.DeliveryHarness {
		f := newFakeStore()
		return storetest.DeliveryHarness{Store: f, Create: f.CreateDelivery,
			Seed: func(_ testing.TB, d domain.Delivery) { f.addDelivery(d) },
			Get: func(_ testing.TB, id string, ch domain.Channel) (domain.Delivery, bool) {
				return f.deliveries.Get(id, ch)
			}}
	})
	storetest.NotificationContract(t, func(t *testing.T) storetest.NotificationHarness {
		f := newFakeStore()
		return storetest.NotificationHarness{Create: f.CreateNotification, Get: f.GetNotificationWithDeliveries, Cancel: f.CancelNotification}
	})
}
