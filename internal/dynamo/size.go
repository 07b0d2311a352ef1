package dynamo

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/recovery"
)

// ItemKeys are the keys an item is stored under: the table's partition key
// and each index's partition key it lands in ("" when not in that index).
type ItemKeys struct {
	PK     string
	Index  map[string]string // index name → partition key
	Size   int               // bytes, as DynamoDB bills them
	Sparse map[string]int    // index name → bytes projected into it
}

// NotificationItemKeys builds the stored notification item with the same
// code CreateNotification uses and returns its keys and billed sizes (the
// capacity model reads them; docs/capacity.md).
func (s *Table) NotificationItemKeys(n *domain.Notification) (ItemKeys, error) {
	av, err := attributevalue.MarshalMap(s.toNotificationItem(n))
	if err != nil {
		return ItemKeys{}, fmt.Errorf("marshal notification: %w", err)
	}
	return keysOf(av, nil), nil
}

// DeliveryItemKeys does the same for a delivery item (CreateDelivery).
func (s *Table) DeliveryItemKeys(d *domain.Delivery) (ItemKeys, error) {
	av, err := attributevalue.MarshalMap(s.toDeliveryItem(d))
	if err != nil {
		return ItemKeys{}, fmt.Errorf("marshal delivery: %w", err)
	}
	return keysOf(av, projections), nil
}

// NotificationKeys is what NotificationItemKeys returns without the sizes
// (no Size, no Sparse): the item's own keys, without marshalling it. The
// capacity model sizes one full item per shape and keys every other one
// with this.
func (s *Table) NotificationKeys(n *domain.Notification) ItemKeys {
	it := s.toNotificationItem(n)
	return keysOnly(it.PK, map[string]string{IndexInbox: it.GSI2PK})
}

// DeliveryKeys is NotificationKeys for a delivery item.
func (s *Table) DeliveryKeys(d *domain.Delivery) ItemKeys {
	it := s.toDeliveryItem(d)
	return keysOnly(it.PK, map[string]string{IndexInbox: it.GSI2PK, IndexDue: it.GSI3PK})
}

// keysOnly is an item's keys as keysOf names them: an index only where its
// partition key is set (the indexes are sparse).
func keysOnly(pk string, index map[string]string) ItemKeys {
	k := ItemKeys{PK: pk, Index: map[string]string{}}
	for name, v := range index {
		if v != "" {
			k.Index[name] = v
		}
	}
	return k
}

// projections are the non-key attributes of the indexes that do not project
// every attribute: gsi3 projects only what a release reads (template.yaml).
var projections = map[string][]string{IndexDue: {"notificationId", "channel", "userId", "priority"}}

// StoredItemKeys returns the keys and billed sizes of an item as read back
// from the table (the cost benchmark sums what a notification stores).
func StoredItemKeys(av map[string]types.AttributeValue) ItemKeys { return keysOf(av, projections) }

// indexKeys names each index's partition and sort key attributes.
var indexKeys = map[string][2]string{IndexInbox: {"gsi2pk", "gsi2sk"}, IndexDue: {"gsi3pk", "gsi3sk"}, IndexProfiles: {"gsi4pk", ""}}

// UserItemKeys builds a stored profile item with the code PutUser uses and
// returns its keys and billed sizes (the profiles index is KEYS_ONLY).
func (s *Table) UserItemKeys(u *domain.User) (ItemKeys, error) {
	av, err := attributevalue.MarshalMap(userItem{PK: UserPK(u.ID), SK: profileSK, Kind: "user", UserID: u.ID, Email: u.Email, Phone: u.Phone,
		Locale: u.Locale, Timezone: u.Timezone, QuietHours: u.QuietHours, UpdatedAt: formatTime(u.UpdatedAt), GSI4PK: u.ID})
	if err != nil {
		return ItemKeys{}, fmt.Errorf("marshal user: %w", err)
	}
	return keysOf(av, map[string][]string{IndexProfiles: nil}), nil
}

func keysOf(av map[string]types.AttributeValue, include map[string][]string) ItemKeys {
	k := ItemKeys{Index: map[string]string{}, Sparse: map[string]int{}, Size: ItemSize(av)}
	if v, ok := av["pk"].(*types.AttributeValueMemberS); ok {
		k.PK = v.Value
	}
	for name, attrs := range indexKeys {
		v, ok := av[attrs[0]].(*types.AttributeValueMemberS)
		if !ok || v.Value == "" {
			continue
		}
		k.Index[name] = v.Value
		if proj, ok := include[name]; ok {
			sub := map[string]types.AttributeValue{}
			for _, a := range append([]string{"pk", "sk", attrs[0], attrs[1]}, proj...) {
				if x, ok := av[a]; ok {
					sub[a] = x
				}
			}
			k.Sparse[name] = ItemSize(sub)
		} else {
			k.Sparse[name] = k.Size // ALL
		}
	}
	return k
}

// ItemSize is an item's size as DynamoDB bills it: attribute names plus
// values (strings by UTF-8 length, numbers about one byte per two digits plus
// one, sets and maps summed with 3 bytes of overhead per element).
func ItemSize(av map[string]types.AttributeValue) int {
	n := 0
	for name, v := range av {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return len(x.Value)
	case *types.AttributeValueMemberN:
		return (len(x.Value)+1)/2 + 1
	case *types.AttributeValueMemberB:
		return len(x.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range x.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range x.Value {
			n += valueSize(e) + 1
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range x.Value {
			n += len(k) + valueSize(e) + 1
		}
		return n
	}
	return 0
}

// WriteUnits is the write request units of writing size bytes.
func WriteUnits(size int) float64 { return float64((size + 1023) / 1024) }

// ReadUnits is the read request units of reading size bytes, strongly
// consistent or not.
func ReadUnits(size int, consistent bool) float64 {
	u := float64((size + 4095) / 4096)
	if u == 0 {
		u = 1
	}
	if !consistent {
		return u / 2
	}
	return u
}

// WatchItemKeys builds a watch item as ArmWatch stores it and returns its
// keys and billed sizes (gsi3 projects its priority; the entries stay in the
// table).
func (s *Table) WatchItemKeys(w recovery.Watch) (ItemKeys, error) {
	av, err := attributevalue.MarshalMap(s.toWatchItem(w))
	if err != nil {
		return ItemKeys{}, fmt.Errorf("marshal watch: %w", err)
	}
	return keysOf(av, projections), nil
}
