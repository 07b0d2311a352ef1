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
	BudgetDigest      bool   `dynamodbav:"budgetDigest,omitempty"`
	// SentTargets: the targets of a push delivery its providers accepted.
	SentTargets []string `dynamodbav:"sentTargets,stringset,omitempty"`
	// The notification's fields delivery events carry (copied at creation).
	Caller     string `dynamodbav:"caller,omitempty"`
	Type       string `dynamodbav:"type,omitempty"`
	CampaignID string `dynamodbav:"campaignId,omitempty"`
	ResourceID string `dynamodbav:"resourceId,omitempty"`
	// NotificationCreatedAt orders the recipient's history (history.go).
	NotificationCreatedAt string `dynamodbav:"notificationCreatedAt,omitempty"`
	// Trail: the decision trail, one step per state reached (domain.Step).
	Trail  []stepItem `dynamodbav:"trail,omitempty"`
	TTL    int64      `dynamodbav:"ttl,omitempty"`
	GSI3PK string     `dynamodbav:"gsi3pk,omitempty"`
	GSI3SK string     `dynamodbav:"gsi3sk,omitempty"`
	// The recipient's history in the inbox index (history.go): every
	// delivery of a caller's notifications to one user in H#<caller>#<user>.
	GSI2PK string `dynamodbav:"gsi2pk,omitempty"`
	GSI2SK string `dynamodbav:"gsi2sk,omitempty"`
}

// stepItem is a stored trail step: short names, since every step is
// written (and, the item being in the inbox index, projected) per change.
type stepItem struct {
	At     string `dynamodbav:"t"`
	Status string `dynamodbav:"s"`
	Reason string `dynamodbav:"r,omitempty"`
	DueAt  string `dynamodbav:"d,omitempty"`
	Error  string `dynamodbav:"e,omitempty"`
	Note   string `dynamodbav:"n,omitempty"`
}

func toStepItem(s domain.Step) stepItem {
	return stepItem{At: formatTime(s.At), Status: string(s.Status), Reason: string(s.Reason), DueAt: formatTime(s.DueAt), Error: s.Error, Note: s.Note}
}

func (s stepItem) toDomain() domain.Step {
	return domain.Step{At: parseTime(s.At), Status: domain.Status(s.Status), Reason: domain.Reason(s.Reason), DueAt: parseTime(s.DueAt),
		Error: s.Error, Note: s.Note}
}

func (s *Table) toDeliveryItem(d *domain.Delivery) deliveryItem {
	it := deliveryItem{
		PK: NotificationPK(d.NotificationID), SK: deliveryPrefix + string(d.Channel), Kind: "delivery",
		NotificationID: d.NotificationID, Channel: string(d.Channel), UserID: d.UserID, Priority: string(d.Priority),
		Status: string(d.Status), Reason: string(d.Reason), Attempts: d.Attempts,
		UpdatedAt: formatTime(d.UpdatedAt), DueAt: formatTime(d.DueAt), LeaseUntil: formatTime(d.LeaseUntil), LeaseHolder: d.LeaseHolder,
		LastError: d.LastError, ProviderMessageID: d.ProviderMessageID, Provider: d.Provider, PinnedProvider: d.PinnedProvider, DigestID: d.DigestID, BudgetDigest: d.BudgetDigest,
		Caller: d.Caller, Type: d.Type, CampaignID: d.CampaignID, ResourceID: d.ResourceID,
		NotificationCreatedAt: formatTime(d.NotificationCreatedAt),
		TTL:                   s.expiry(d.UpdatedAt, d.DueAt),
	}
	it.GSI2PK, it.GSI2SK = historyKeys(d.Caller, d.UserID, d.NotificationCreatedAt, d.NotificationID, d.Channel)
	for _, st := range domain.TrailAtCreation(d) {
		it.Trail = append(it.Trail, toStepItem(st))
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
		LastError: it.LastError, ProviderMessageID: it.ProviderMessageID, Provider: it.Provider, PinnedProvider: it.PinnedProvider, DigestID: it.DigestID, BudgetDigest: it.BudgetDigest,
		SentTargets: it.SentTargets,
		Caller:      it.Caller, Type: it.Type, CampaignID: it.CampaignID, ResourceID: it.ResourceID,
		NotificationCreatedAt: parseTime(it.NotificationCreatedAt), Trail: trailOf(it.Trail),
	}
}

func trailOf(items []stepItem) []domain.Step {
	if len(items) == 0 {
		return nil
	}
	out := make([]domain.Step, len(items))
	for i, st := range items {
		out[i] = st.toDomain()
	}
	return out
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
// channel), its trail the state it is created in. When one exists already
// (a stream retry), nothing is written and
// the existing delivery is returned with domain.ErrConflict: its state decides
// what the caller may still do.
func (s *Notifications) CreateDelivery(ctx context.Context, d *domain.Delivery) (*domain.Delivery, error) {
	d.Trail = domain.TrailAtCreation(d) // as stored: its state is its first step
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
	if expr, err = withStep(expr, c, now, vals); err != nil {
		return nil, err
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
	d, err := decodeDelivery(out.Attributes)
	if err == nil && len(d.Trail) > domain.MaxTrail {
		s.trimTrail(ctx, d)
	}
	return d, err
}

// withStep adds the change's trail step to a transition's update: appended
// in the same write (no write of its own), or — a redrive — a new trail.
func withStep(expr string, c domain.Change, now time.Time, vals map[string]types.AttributeValue) (string, error) {
	step, err := attributevalue.Marshal([]stepItem{toStepItem(domain.StepOf(c, now))})
	if err != nil {
		return "", fmt.Errorf("marshal trail step: %w", err)
	}
	vals[":step"] = step
	if c.Redrive() {
		return strings.Replace(expr, "SET ", "SET trail = :step, ", 1), nil
	}
	vals[":notrail"] = &types.AttributeValueMemberL{Value: []types.AttributeValue{}}
	return strings.Replace(expr, "SET ", "SET trail = list_append(if_not_exists(trail, :notrail), :step), ", 1), nil
}

// trimTrail drops the oldest steps after the first from a trail past
// domain.MaxTrail: a second write, only for a delivery that went round
// more than a life's worth of steps (quota give-backs, say), conditional on
// the trail's length so a concurrent append is not cut. Best effort: a
// failure leaves the trail longer, never the delivery wrong.
func (s *Notifications) trimTrail(ctx context.Context, d *domain.Delivery) {
	extra := len(d.Trail) - domain.MaxTrail
	removes := make([]string, extra)
	for i := range removes {
		removes[i] = fmt.Sprintf("trail[%d]", i+1)
	}
	if _, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(NotificationPK(d.NotificationID), deliveryPrefix+string(d.Channel)),
		UpdateExpression:          aws.String("REMOVE " + strings.Join(removes, ", ")),
		ConditionExpression:       aws.String("size(trail) = :n"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": num(int64(len(d.Trail)))},
	}); err == nil {
		d.Trail = append(d.Trail[:1], d.Trail[1+extra:]...)
	}
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
	if pk, sk := historyKeys(d.Caller, d.UserID, d.NotificationCreatedAt, id, ch); pk != "" {
		names["#hpk"], names["#hsk"], names["#hat"] = "gsi2pk", "gsi2sk", "notificationCreatedAt"
		vals[":hpk"], vals[":hsk"], vals[":hat"] = str(pk), str(sk), str(formatTime(d.NotificationCreatedAt))
		sets = append(sets, "#hpk = if_not_exists(#hpk, :hpk)", "#hsk = if_not_exists(#hsk, :hsk)", "#hat = if_not_exists(#hat, :hat)")
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
