package dynamo

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
)

// ReadPlanning reads, with BatchGetItem (strongly consistent, 100 keys a
// call), which of the deliveries exist and the profile and preferences of
// users. Push subscriptions are a range of items a batch read cannot name:
// the profiles come without them (GetRecipientProfile has them). A user with
// no items gets an empty profile, as GetRecipientProfile would.
func (s *Notifications) ReadPlanning(ctx context.Context, deliveries []domain.DeliveryKey, users []string) (map[domain.DeliveryKey]domain.Delivery, map[string]*domain.RecipientProfile, error) {
	keys := make([]map[string]types.AttributeValue, 0, len(deliveries)+2*len(users))
	for _, k := range deliveries {
		keys = append(keys, key(NotificationPK(k.NotificationID), deliveryPrefix+string(k.Channel)))
	}
	profiles := make(map[string]*domain.RecipientProfile, len(users))
	for _, u := range users {
		profiles[u] = &domain.RecipientProfile{Preferences: domain.Preferences{}}
		keys = append(keys, key(UserPK(u), profileSK), key(UserPK(u), prefsSK))
	}
	items, err := s.batchGet(ctx, "read planning state", keys, consistentRead)
	if err != nil {
		return nil, nil, err
	}
	existing := map[domain.DeliveryKey]domain.Delivery{}
	for _, av := range items {
		pk := stringAttr(av, "pk")
		if user, ok := strings.CutPrefix(pk, userPrefix); ok {
			if p := profiles[user]; p != nil {
				if err := absorbUserItem(p, av); err != nil {
					return nil, nil, fmt.Errorf("read planning state: user %s: %w", user, err)
				}
			}
			continue
		}
		d, err := decodeDelivery(av)
		if err != nil {
			return nil, nil, fmt.Errorf("read planning state: %w", err)
		}
		existing[domain.DeliveryKey{NotificationID: d.NotificationID, Channel: d.Channel}] = *d
	}
	return existing, profiles, nil
}
