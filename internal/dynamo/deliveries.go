package dynamo

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
)

type deliveryItem struct {
	PK                string `dynamodbav:"pk"`
	SK                string `dynamodbav:"sk"`
	Kind              string `dynamodbav:"kind"`
	NotificationID    string `dynamodbav:"notificationId"`
	Channel           string `dynamodbav:"channel"`
	UserID            string `dynamodbav:"userId,omitempty"`
	Priority          string `dynamodbav:"priority"`
	Status            string `dynamodbav:"status"`
	Reason            string `dynamodbav:"reason,omitempty"`
	Attempts          int    `dynamodbav:"attempts"`
	UpdatedAt         string `dynamodbav:"updatedAt"`
	DueAt             string `dynamodbav:"dueAt,omitempty"`
	LeaseUntil        string `dynamodbav:"leaseUntil,omitempty"`
	LeaseHolder       string `dynamodbav:"leaseHolder,omitempty"`
	LastError         string `dynamodbav:"lastError,omitempty"`
	ProviderMessageID string `dynamodbav:"providerMessageId,omitempty"`
	Provider          string `dynamodbav:"provider,omitempty"`
	PinnedProvider    string `dynamodbav:"pinnedProvider,omitempty"`
	DigestID          string `dynamodbav:"digestId,omitempty"`
	// SentTargets: the targets of a push delivery its providers accepted.
	SentTargets []string `dynamodbav:"sentTargets,stringset,omitempty"`
	// The notification's fields delivery events carry (copied at creation).
	Caller     string `dynamodbav:"caller,omitempty"`
	Type       string `dynamodbav:"type,omitempty"`
	CampaignID string `dynamodbav:"campaignId,omitempty"`
	ResourceID string `dynamodbav:"resourceId,omitempty"`
	TTL        int64  `dynamodbav:"ttl,omitempty"`
	GSI3PK     string `dynamodbav:"gsi3pk,omitempty"`
	GSI3SK     string `dynamodbav:"gsi3sk,omitempty"`
}

func (s *Table) toDeliveryItem(d *domain.Delivery) deliveryItem {
	it := deliveryItem{
		PK: NotificationPK(d.NotificationID), SK: deliveryPrefix + string(d.Channel), Kind: "delivery",
		NotificationID: d.NotificationID, Channel: string(d.Channel), UserID: d.UserID, Priority: string(d.Priority),
		Status: string(d.Status), Reason: string(d.Reason), Attempts: d.Attempts,
		UpdatedAt: formatTime(d.UpdatedAt), DueAt: formatTime(d.DueAt), LeaseUntil: formatTime(d.LeaseUntil), LeaseHolder: d.LeaseHolder,
		LastError: d.LastError, ProviderMessageID: d.ProviderMessageID, Provider: d.Provider, PinnedProvider: d.PinnedProvider, DigestID: d.DigestID,
		Caller: d.Caller, Type: d.Type, CampaignID: d.CampaignID, ResourceID: d.ResourceID,
		TTL: s.expiry(d.UpdatedAt, d.DueAt),
	}
	if d.Status == domain.StatusDeferred && !d.DueAt.IsZero() {
		it.GSI3PK = DuePartitionKey(DuePartitionOf(d.DueAt, d.NotificationID, d.Channel))
		it.GSI3SK = dueSortKey(d.DueAt, d.NotificationID, d.Channel)
	}
	return it
}

func dueSortKey(due time.Time, id string, c domain.Channel) string {
	return formatTime(due) + "#" + id + "#" + string(c)
}

func (it *deliveryItem) toDomain() *domain.Delivery {
	return &domain.Delivery{
		NotificationID: it.NotificationID, Channel: domain.Channel(it.Channel), UserID: it.UserID, Priority: domain.Priority(it.Priority),
		Status: domain.Status(it.Status), Reason: domain.Reason(it.Reason), Attempts: it.Attempts,
		UpdatedAt: parseTime(it.UpdatedAt), DueAt: parseTime(it.DueAt), LeaseUntil: parseTime(it.LeaseUntil), LeaseHolder: it.LeaseHolder,
		LastError: it.LastError, ProviderMessageID: it.ProviderMessageID, Provider: it.Provider, PinnedProvider: it.PinnedProvider, DigestID: it.DigestID,
		SentTargets: it.SentTargets,
		Caller:      it.Caller, Type: it.Type, CampaignID: it.CampaignID, ResourceID: it.ResourceID,
	}
}

func decodeDelivery(av map[string]types.AttributeValue) (*domain.Delivery, error) {
	var it deliveryItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return nil, fmt.Errorf("unmarshal delivery: %w", err)
	}
	if !strings.HasPrefix(it.SK, deliveryPrefix) {
		return nil, fmt.Errorf("item %s/%s is not a delivery", it.PK, it.SK)
	}
	return it.toDomain(), nil
}

// CreateDelivery writes a new delivery if none exists for (notification,
// channel). When one exists already (a stream retry), nothing is written and
// the existing delivery is returned with domain.ErrConflict: its state decides
// what the caller may still do.
func (s *Notifications) CreateDelivery(ctx context.Context, d *domain.Delivery) (*domain.Delivery, error) {
	existing, err := createIfAbsent(ctx, s.Table, "delivery "+d.NotificationID+"/"+string(d.Channel), s.toDeliveryItem(d), decodeDelivery,
		func(ctx context.Context) (*domain.Delivery, error) {
			return s.GetDelivery(ctx, d.NotificationID, d.Channel)
		})
	if err != nil {
		return existing, err
	}
	return d, nil
}

// GetDelivery reads one delivery (strongly consistent).
func (s *Notifications) GetDelivery(ctx context.Context, id string, c domain.Channel) (*domain.Delivery, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: key(NotificationPK(id), deliveryPrefix+string(c)), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("get delivery %s/%s: %w", id, c, err)
	}
	if len(out.Item) == 0 {
		return nil, fmt.Errorf("delivery %s/%s: %w", id, c, domain.ErrNotFound)
	}
	return decodeDelivery(out.Item)
}

// Transition applies c atomically: the update happens only if the delivery is
// in an allowed state, otherwise it returns domain.ErrConflict (and the current
// delivery when the store returned it). On success it returns the new state.
func (s *Notifications) Transition(ctx context.Context, id string, ch domain.Channel, c domain.Change) (*domain.Delivery, error) {
	from := c.From
	if len(from) == 0 {
		from = domain.SourcesOf(c.To)
	}
	for _, f := range from {
		if !domain.CanTransition(f, c.To) {
			return nil, domain.ErrInvalidTransition{From: f, To: c.To}
		}
	}
	if c.Create != nil && !c.Creates() {
		return nil, domain.ErrInvalidTransition{From: domain.Absent, To: c.To}
	}
	now := s.now()
	vals := map[string]types.AttributeValue{
		":to": str(string(c.To)), ":now": str(formatTime(now)),
	}
	names := map[string]string{"#status": "status"}
	cond := transitionCondition(from, c.ReclaimExpiredLease, vals)
	expr, err := transitionUpdate(id, ch, c, vals)
	if err != nil {
		return nil, err
	}
	if c.To == domain.StatusDeferred {
		// Deferred again: kept until its new due time plus the retention.
		names["#ttl"], vals[":dttl"] = "ttl", num(s.expiry(now, c.DueAt))
		expr = strings.Replace(expr, "SET ", "SET #ttl = :dttl, ", 1)
	}
	if c.Create != nil {
		// The claim creates the delivery of a channel sent at once: absent
		// counts as queued, and the item gets its notification's fields.
		cond = "attribute_not_exists(pk) OR (" + cond + ")"
		expr = s.creating(expr, id, ch, c, now, names, vals)
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 key(NotificationPK(id), deliveryPrefix+string(ch)),
		UpdateExpression:                    aws.String(expr),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           vals,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err != nil {
		if ccf, ok := asConditionFailed(err); ok {
			var current *domain.Delivery
			if len(ccf.Item) > 0 {
				current, _ = decodeDelivery(ccf.Item)
			}
			return current, fmt.Errorf("delivery %s/%s to %s: %w", id, ch, c.To, domain.ErrConflict)
		}
		return nil, fmt.Errorf("delivery %s/%s to %s: %w", id, ch, c.To, err)
	}
	return decodeDelivery(out.Attributes)
}

// creating adds to a transition's update expression what creates a missing
// delivery: its identity and the notification's fields delivery events
// carry (Change.Create), its expiry and attempts, each if_not_exists so an
// existing item keeps its own. One UpdateItem either way: a new delivery is
// still one write unit (≈ 300 bytes).
func (s *Notifications) creating(expr, id string, ch domain.Channel, c domain.Change, now time.Time, names map[string]string, vals map[string]types.AttributeValue) string {
	d := c.Create
	fields := []struct{ name, value string }{
		{"kind", "delivery"}, {"notificationId", id}, {"channel", string(ch)}, {"userId", d.UserID},
		{"priority", string(d.Priority)}, {"caller", d.Caller}, {"type", d.Type}, {"campaignId", d.CampaignID}, {"resourceId", d.ResourceID},
	}
	var sets []string
	for i, f := range fields {
		if f.value == "" {
			continue
		}
		n, v := fmt.Sprintf("#c%d", i), fmt.Sprintf(":c%d", i)
		names[n], vals[v] = f.name, str(f.value)
		sets = append(sets, n+" = if_not_exists("+n+", "+v+")")
	}
	names["#cttl"], vals[":cttl"] = "ttl", num(s.expiry(now))
	sets = append(sets, "#cttl = if_not_exists(#cttl, :cttl)")
	if !c.IncrementAttempts && !c.RefundAttempt {
		vals[":czero"] = num(0)
		sets = append(sets, "attempts = if_not_exists(attempts, :czero)")
	}
	return strings.Replace(expr, "SET ", "SET "+strings.Join(sets, ", ")+", ", 1)
}

// transitionCondition is a transition's condition: the delivery exists and
// its status is one of from, or — with reclaimExpiredLease — it is sending
// under a lease that ended before then. Its values go into vals.
func transitionCondition(from []domain.Status, reclaimExpiredLease time.Time, vals map[string]types.AttributeValue) string {
	var inList []string
	for i, f := range from {
		k := fmt.Sprintf(":from%d", i)
		vals[k] = str(string(f))
		inList = append(inList, k)
	}
	cond := "#status IN (" + strings.Join(inList, ", ") + ")"
	if !reclaimExpiredLease.IsZero() {
		vals[":sending"] = str(string(domain.StatusSending))
		vals[":leaseEnd"] = str(formatTime(reclaimExpiredLease))
		cond = "(" + cond + ") OR (#status = :sending AND leaseUntil < :leaseEnd)"
	}
	return "attribute_exists(pk) AND (" + cond + ")"
}

// transitionUpdate is a transition's update expression: the status and
// updatedAt (":to", ":now", set by the caller), the reason, the due index
// (kept only while deferred, or with KeepDue), the sending lease, and the
// optional fields of c. Its values go into vals.
func transitionUpdate(id string, ch domain.Channel, c domain.Change, vals map[string]types.AttributeValue) (string, error) {
	sets := []string{"#status = :to", "updatedAt = :now"}
	removes := []string{}
	if c.Reason != "" {
		sets = append(sets, "reason = :reason")
		vals[":reason"] = str(string(c.Reason))
	} else {
		removes = append(removes, "reason")
	}
	if c.To == domain.StatusDeferred {
		if c.DueAt.IsZero() {
			return "", fmt.Errorf("transition %s/%s to deferred: due time required", id, ch)
		}
		sets = append(sets, "dueAt = :due", "gsi3pk = :duepk", "gsi3sk = :duesk")
		vals[":due"] = str(formatTime(c.DueAt))
		vals[":duepk"] = str(DuePartitionKey(DuePartitionOf(c.DueAt, id, ch)))
		vals[":duesk"] = str(dueSortKey(c.DueAt, id, ch))
	} else if !c.KeepDue {
		removes = append(removes, "gsi3pk", "gsi3sk")
		if c.To != domain.StatusDropped && c.To != domain.StatusSkipped {
			removes = append(removes, "dueAt")
		}
	}
	if c.To == domain.StatusSending {
		sets = append(sets, "leaseUntil = :lease")
		vals[":lease"] = str(formatTime(c.LeaseUntil))
	} else {
		removes = append(removes, "leaseUntil")
	}
	if c.To == domain.StatusSending && c.LeaseHolder != "" {
		sets = append(sets, "leaseHolder = :holder")
		vals[":holder"] = str(c.LeaseHolder)
	} else {
		removes = append(removes, "leaseHolder")
	}
	if c.IncrementAttempts {
		sets = append(sets, "attempts = if_not_exists(attempts, :zero) + :one")
		vals[":zero"], vals[":one"] = num(0), num(1)
	}
	if c.RefundAttempt {
		sets = append(sets, "attempts = attempts - :one")
		vals[":one"] = num(1)
	}
	if c.LastError != "" {
		sets = append(sets, "lastError = :err")
		vals[":err"] = str(c.LastError)
	}
	if c.ProviderMessageID != "" {
		sets = append(sets, "providerMessageId = :pmid")
		vals[":pmid"] = str(c.ProviderMessageID)
	}
	if c.Provider != "" {
		sets = append(sets, "provider = :provider")
		vals[":provider"] = str(c.Provider)
		if c.PinProvider {
			sets = append(sets, "pinnedProvider = :provider")
		}
	}
	if c.DigestID != "" {
		sets = append(sets, "digestId = :digest")
		vals[":digest"] = str(c.DigestID)
	}
	expr := "SET " + strings.Join(sets, ", ")
	if len(removes) > 0 {
		expr += " REMOVE " + strings.Join(removes, ", ")
	}
	if len(c.AddSentTargets) > 0 {
		expr += " ADD sentTargets :targets"
		vals[":targets"] = &types.AttributeValueMemberSS{Value: c.AddSentTargets}
	}
	return expr, nil
}
