package storetest_test

import (
	"time"

	"testing"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/storetest"
)

func TestMemDeliveriesContract(t *testing.T) {
	storetest.DeliveryContract(t, func(t *testing.T) storetest.DeliveryHarness {
		m := storetest.NewMemDeliveries(nil)
		return storetest.DeliveryHarness{Store: m, Create: m.CreateDelivery,
			Seed: func(_ testing.TB, d domain.Delivery) { m.Put(d) },
			Get:  func(_ testing.TB, id string, ch domain.Channel) (domain.Delivery, bool) { return m.Get(id, ch) }}
	})
}

func TestMemBudgetsContract(t *testing.T) {
	storetest.BudgetContract(t, (&storetest.MemBudgets{}).CountBudget)
}

func TestMemBreakersContract(t *testing.T) {
	storetest.BreakerContract(t, func(*testing.T) storetest.BreakerStore { return storetest.NewMemBreakers() })
}

func TestMemTopicsContract(t *testing.T) {
	storetest.TopicContract(t, func(*testing.T) storetest.TopicStore { return storetest.NewMemTopics(time.Now) })
}
