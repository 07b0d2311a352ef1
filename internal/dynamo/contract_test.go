package dynamo_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/inbox"
	"github.com/heraldhq/herald/internal/live"
	"github.com/heraldhq/herald/internal/storetest"
)

// The adapter is the reference of the store contract every fake also runs.
func TestStoreContractDeliveries(t *testing.T) {
	storetest.DeliveryContract(t, func(t *testing.T) storetest.DeliveryHarness {
		s, _, _ := newStore(t)
		return storetest.DeliveryHarness{
			Store: s, Create: s.CreateDelivery,
			Seed: func(t testing.TB, d domain.Delivery) {
				t.Helper()
				if _, err := s.CreateDelivery(context.Background(), &d); err != nil {
					t.Fatalf("seed %+v: %v", d, err)
				}
			},
			Get: func(t testing.TB, id string, ch domain.Channel) (domain.Delivery, bool) {
				t.Helper()
				d, err := s.GetDelivery(context.Background(), id, ch)
				if errors.Is(err, domain.ErrNotFound) {
					return domain.Delivery{}, false
				}
				if err != nil {
					t.Fatalf("get %s/%s: %v", id, ch, err)
				}
				return *d, true
			},
		}
	})
}

func TestStoreContractNotifications(t *testing.T) {
	storetest.NotificationContract(t, func(t *testing.T) storetest.NotificationHarness {
		s, _, _ := newStore(t)
		return storetest.NotificationHarness{Create: s.CreateNotification, Get: s.GetNotificationWithDeliveries, Cancel: s.CancelNotification}
	})
}

func TestStoreContractInbox(t *testing.T) {
	storetest.InboxContract(t, func(t *testing.T) storetest.InboxHarness {
		s, _, _ := newStore(t)
		return storetest.InboxHarness{Store: s, Seed: func(t testing.TB, n *domain.Notification) {
			t.Helper()
			if _, err := s.CreateNotification(context.Background(), n); err != nil {
				t.Fatalf("seed %s: %v", n.ID, err)
			}
		}}
	})
}

func TestStoreContractOnline(t *testing.T) {
	storetest.OnlineContract(t, func(t *testing.T) storetest.OnlineHarness {
		s, _, clock := newStore(t)
		return storetest.OnlineHarness{
			AddOnline: s.AddOnline, OnlineUsers: s.OnlineUsers, Mark: s.MarkAnnouncementLive, Unmark: s.UnmarkAnnouncementLive,
			Advance: s.AdvanceBroadcast,
			SeedAnnouncement: func(t testing.TB, id string) {
				t.Helper()
				now := clock.Now()
				a := &inbox.Announcement{ID: id, Title: "t", Body: "b", PublishedAt: now, ExpiresAt: now.Add(time.Hour), CreatedAt: now, Caller: "svc"}
				if _, err := s.CreateAnnouncement(context.Background(), a); err != nil {
					t.Fatal(err)
				}
			},
			MarkedAt: func(t testing.TB, id string) time.Time {
				t.Helper()
				a, err := s.GetAnnouncement(context.Background(), id)
				if errors.Is(err, domain.ErrNotFound) {
					return time.Time{}
				}
				if err != nil {
					t.Fatal(err)
				}
				return a.LiveAt
			},
		}
	})
}

func TestStoreContractConnections(t *testing.T) {
	storetest.ConnectionContract(t, func(t *testing.T) storetest.ConnectionHarness {
		s, db, _ := newStore(t)
		return storetest.ConnectionHarness{
			Add: func(ctx context.Context, user, id string, at time.Time) ([]string, error) {
				return connectionIDs(s.AddConnection(ctx, user, live.Connection{ID: id, ConnectedAt: at}))
			},
			Remove: func(ctx context.Context, user, id string) ([]string, error) {
				return connectionIDs(s.RemoveConnection(ctx, user, id))
			},
			Evict: s.EvictConnection, Forget: s.ForgetConnections,
			IDs: func(t testing.TB, user string) []string {
				item := rawItem(t, db, stacktest.Emulators(t).Resources.Table, "U#"+user, "LIVE")
				if item == nil {
					return nil
				}
				conns, _ := item["conns"].(*types.AttributeValueMemberM)
				ids := []string{}
				if conns != nil {
					ids = slices.Sorted(maps.Keys(conns.Value))
				}
				return ids
			},
		}
	})
}

// connectionIDs are the connections' ids, sorted (the contract's harness).
func connectionIDs(cs []live.Connection, err error) ([]string, error) {
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	slices.Sort(ids)
	return ids, err
}

func TestStoreContractBudgets(t *testing.T) {
	s, _, _ := newStore(t)
	storetest.BudgetContract(t, s.CountBudget)
}

func TestStoreContractBudgetPreference(t *testing.T) {
	s, _, _ := newStore(t)
	storetest.BudgetPreferenceContract(t, storetest.BudgetPreferenceHarness{GetBudget: s.GetBudget, SetBudget: s.SetBudget, MergePreferences: s.MergePreferences})
}

func TestStoreContractBreakers(t *testing.T) {
	storetest.BreakerContract(t, func(t *testing.T) storetest.BreakerStore {
		s, _, _ := newStore(t)
		return dynamo.StoresOf(s.Table).Breakers
	})
}

func TestStoreContractTopics(t *testing.T) {
	storetest.TopicContract(t, func(t *testing.T) storetest.TopicStore {
		s, _, _ := newStore(t)
		return s.Topics
	})
}
