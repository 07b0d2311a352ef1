package dynamo

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
)

// watchSK is a notification's in-flight watch (domain.Watch): one small item
// in the notification's partition, in the due index (gsi3) while it waits.
// It does not start with the delivery prefix, so readers of deliveries never
// see it; it does start with "D", so one Query (begins_with "D") reads the
// deliveries and the watch without the notification.
const watchSK = "DWATCH"

// watchChannel is the channel the watch's due partition is hashed with.
const watchChannel domain.Channel = "watch"

// ArmWatch records that the work messages of channels went out for a
// notification: the watch comes due at due. A watch that exists keeps its
// channels and gains these (ADD to a set), and moves to the new due time.
func (s *Store) ArmWatch(ctx context.Context, w domain.Watch) error {
	if len(w.Channels) == 0 {
		return nil
	}
	chs := make([]string, len(w.Channels))
	for i, c := range w.Channels {
		chs[i] = string(c)
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table),
		Key:       key(NotificationPK(w.NotificationID), watchSK),
		UpdateExpression: aws.String("SET kind = :kind, notificationId = :id, userId = :user, priority = :prio, dueAt = :due, " +
			"gsi3pk = :pk, gsi3sk = :sk, #ttl = :ttl ADD channels :chs"),
		ExpressionAttributeNames: map[string]string{"#ttl": "ttl"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":kind": str("watch"), ":id": str(w.NotificationID), ":user": str(w.UserID), ":prio": str(string(w.Priority)),
			":due": str(formatTime(w.DueAt)), ":pk": str(DuePartitionKey(DuePartitionOf(w.DueAt, w.NotificationID, watchChannel))),
			":sk": str(dueSortKey(w.DueAt, w.NotificationID, watchChannel)), ":ttl": num(w.DueAt.Add(s.retention).Unix()),
			":chs": &types.AttributeValueMemberSS{Value: chs},
		},
	})
	if err != nil {
		return fmt.Errorf("arm watch %s: %w", w.NotificationID, err)
	}
	return nil
}

// LoadWatch reads a notification's watch and its deliveries in one strongly
// consistent Query (not the notification: the deliveries and the watch share
// the "D" prefix). No watch: nil.
func (s *Store) LoadWatch(ctx context.Context, id string) (*domain.Watch, map[domain.Channel]*domain.Delivery, error) {
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName:              aws.String(s.table),
		KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :d)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(NotificationPK(id)), ":d": str("D"),
		},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("load watch %s: %w", id, err)
	}
	var w *domain.Watch
	ds := map[domain.Channel]*domain.Delivery{}
	for _, av := range out.Items {
		switch sk := stringAttr(av, "sk"); {
		case sk == watchSK:
			w = decodeWatch(av)
		case strings.HasPrefix(sk, deliveryPrefix):
			d, err := decodeDelivery(av)
			if err != nil {
				return nil, nil, err
			}
			ds[d.Channel] = d
		}
	}
	return w, ds, nil
}

func decodeWatch(av map[string]types.AttributeValue) *domain.Watch {
	w := &domain.Watch{
		NotificationID: stringAttr(av, "notificationId"), UserID: stringAttr(av, "userId"),
		Priority: domain.Priority(stringAttr(av, "priority")), DueAt: parseTime(stringAttr(av, "dueAt")),
	}
	if ss, ok := av["channels"].(*types.AttributeValueMemberSS); ok {
		for _, c := range ss.Value {
			w.Channels = append(w.Channels, domain.Channel(c))
		}
		slices.Sort(w.Channels)
	}
	if n, ok := av["checks"].(*types.AttributeValueMemberN); ok {
		w.Checks, _ = strconv.Atoi(n.Value)
	}
	return w
}

// RearmWatch moves a watch read at w.DueAt to next with checks, unless it was
// armed again meanwhile (then its new due time stands): one index update.
func (s *Store) RearmWatch(ctx context.Context, w domain.Watch, next time.Time, checks int) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.table),
		Key:                 key(NotificationPK(w.NotificationID), watchSK),
		UpdateExpression:    aws.String("SET dueAt = :next, gsi3pk = :pk, gsi3sk = :sk, checks = :checks"),
		ConditionExpression: aws.String("dueAt = :seen"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":next": str(formatTime(next)), ":seen": str(formatTime(w.DueAt)), ":checks": num(int64(checks)),
			":pk": str(DuePartitionKey(DuePartitionOf(next, w.NotificationID, watchChannel))),
			":sk": str(dueSortKey(next, w.NotificationID, watchChannel)),
		},
	})
	if isConditionFailed(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("rearm watch %s: %w", w.NotificationID, err)
	}
	return nil
}

// EndWatch deletes a watch read at w.DueAt whose channels have all ended,
// unless it was armed again meanwhile (a channel released since).
func (s *Store) EndWatch(ctx context.Context, w domain.Watch) error {
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(NotificationPK(w.NotificationID), watchSK),
		ConditionExpression:       aws.String("dueAt = :seen"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":seen": str(formatTime(w.DueAt))},
	})
	if isConditionFailed(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("end watch %s: %w", w.NotificationID, err)
	}
	return nil
}
