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

// The inbox routes' fake answers the inbox contract as the adapter does.
func TestFakeInboxContract(t *testing.T) {
	storetest.InboxContract(t, func(t *testing.T) storetest.InboxHarness {
		f := newFakeInbox()
		return storetest.InboxHarness{Store: f, Seed: func(_ testing.TB, n *domain.Notification) {
			f.mu.Lock()
			defer f.mu.Unlock()
			c := *n
			f.notifications[n.ID] = &c
		}}
	})
}

// The fake keeps a user's own budget as the adapter does.
func TestFakeBudgetPreferenceContract(t *testing.T) {
	f := newFakeStore()
	storetest.BudgetPreferenceContract(t, storetest.BudgetPreferenceHarness{GetBudget: f.GetBudget, SetBudget: f.SetBudget, MergePreferences: f.MergePreferences})
}
