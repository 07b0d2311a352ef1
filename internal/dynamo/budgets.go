package dynamo

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
)

// A user's notification budget: one item per user in the user's partition,
// pk U#<user>, sk BUDGET, holding the last `slots` notifications counted as
// attributes b0 (the latest) … b<slots-1>, each "<acceptance, Unix seconds,
// 10 digits><FNV-1a of the notification id, 8 hex digits>" (18 bytes: the
// item stays under one write unit at 40 slots). Fixed-width strings compare
// as their times do, so the write's condition can test a slot's age
// directly. Removed by TTL a day (and an hour) after the latest count.
const (
	budgetSK   = "BUDGET"
	budgetKeep = domain.BudgetDay + time.Hour
	// budgetNone fills a slot that had nothing to shift into it: older than
	// any time, so it never holds the budget.
	budgetNone = "0"
)

// CountBudget counts a notification against a user's budget and reports
// whether it is within. It is ONE conditional UpdateItem, with no read first:
//
//	SET b0 = :me, b1 = b0, …, b<slots-1> = b<slots-2>, ttl = :ttl
//	IF (attribute_not_exists(b<perHour-1>) OR b<perHour-1> < :hourAgo)
//	   AND (attribute_not_exists(b<perDay-1>) OR b<perDay-1> < :dayAgo)
//	   AND NOT (b0 = :me OR … OR b<slots-1> = :me)
//
// An update expression reads every operand from the item as it was, so the
// SET shifts the history by one. The last clause makes it idempotent per
// notification (a stream retry): when the condition fails, the old item
// returned by the failed write tells whether this notification is already
// counted (within) or the budget is full (over, with the history). The
// budget must be within `slots`; a window with no bound (0) adds no clause.
func (s *Budgets) CountBudget(ctx context.Context, userID, notificationID string, accepted time.Time, b domain.Budget, slots int) (domain.BudgetCount, error) {
	if b.PerHour > slots || b.PerDay > slots || slots < 1 {
		return domain.BudgetCount{}, fmt.Errorf("budget %+v beyond the %d slots remembered", b, slots)
	}
	k := key(UserPK(userID), budgetSK)
	me := budgetSlot(accepted, notificationID)
	sets := []string{"b0 = :me"}
	var counted []string
	for i := range slots {
		if i > 0 {
			sets = append(sets, fmt.Sprintf("b%d = if_not_exists(b%d, :none)", i, i-1))
		}
		counted = append(counted, fmt.Sprintf("b%d = :me", i))
	}
	sets = append(sets, "#ttl = :ttl")
	vals := map[string]types.AttributeValue{
		":me": str(me), ":none": str(budgetNone), ":ttl": num(accepted.Add(budgetKeep).Unix()),
	}
	var conds []string
	for _, w := range []struct {
		limit  int
		window time.Duration
		name   string
	}{{b.PerHour, domain.BudgetHour, ":hourAgo"}, {b.PerDay, domain.BudgetDay, ":dayAgo"}} {
		if w.limit <= 0 {
			continue
		}
		// Older than the window: at most accepted − window, to the second.
		vals[w.name] = str(fmt.Sprintf("%010d", accepted.Add(-w.window).Unix()+1))
		conds = append(conds, fmt.Sprintf("(attribute_not_exists(b%d) OR b%d < %s)", w.limit-1, w.limit-1, w.name))
	}
	conds = append(conds, "NOT ("+strings.Join(counted, " OR ")+")")
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 k,
		UpdateExpression:                    aws.String("SET " + strings.Join(sets, ", ")),
		ConditionExpression:                 aws.String(strings.Join(conds, " AND ")),
		ExpressionAttributeNames:            map[string]string{"#ttl": "ttl"},
		ExpressionAttributeValues:           vals,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return domain.BudgetCount{Within: true}, nil
	}
	item, err := s.conditionItem(ctx, err, k)
	if err != nil {
		return domain.BudgetCount{}, fmt.Errorf("count %s against the budget of %s: %w", notificationID, userID, err)
	}
	var out domain.BudgetCount
	for i := range slots {
		v := stringAttr(item, fmt.Sprintf("b%d", i))
		if v == me {
			return domain.BudgetCount{Within: true}, nil
		}
		if at, ok := budgetSlotTime(v); ok {
			out.History = append(out.History, at)
		}
	}
	return out, nil
}

// budgetSlot is the history entry of a notification accepted at `at`.
func budgetSlot(at time.Time, notificationID string) string {
	h := fnv.New32a()
	h.Write([]byte(notificationID))
	return fmt.Sprintf("%010d%08x", at.Unix(), h.Sum32())
}

// budgetSlotTime reads the time of a history entry; false for a filler.
func budgetSlotTime(v string) (time.Time, bool) {
	if len(v) < 10 {
		return time.Time{}, false
	}
	sec, err := strconv.ParseInt(v[:10], 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(sec, 0).UTC(), true
}

// budgetAttr is the preferences item's attribute holding the user's own
// budget: a map {perHour, perDay} (absent: the catalog's).
const budgetAttr = "budget"

// decodeBudget reads a user's own budget from the preferences item; nil when
// there is none (or it is not a budget a writer of this code stores).
func decodeBudget(prefs map[string]types.AttributeValue) *domain.Budget {
	m, ok := prefs[budgetAttr].(*types.AttributeValueMemberM)
	if !ok {
		return nil
	}
	perHour, okH := numAttr(m.Value, "perHour")
	perDay, okD := numAttr(m.Value, "perDay")
	if !okH || !okD {
		return nil
	}
	return &domain.Budget{PerHour: perHour, PerDay: perDay}
}

func numAttr(m map[string]types.AttributeValue, name string) (int, bool) {
	v, ok := m[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v.Value)
	return n, err == nil
}

// BudgetItemKeys builds a user's budget item as CountBudget leaves it once
// every one of `slots` slots is filled (its largest) and returns its keys and
// billed size (the capacity model prices the budget's write with it).
func BudgetItemKeys(userID string, at time.Time, slots int) ItemKeys {
	av := map[string]types.AttributeValue{"pk": str(UserPK(userID)), "sk": str(budgetSK), "ttl": num(at.Add(budgetKeep).Unix())}
	for i := range slots {
		av[fmt.Sprintf("b%d", i)] = str(budgetSlot(at, fmt.Sprintf("n%d", i)))
	}
	return keysOf(av, nil)
}

// GetBudget reads a user's own notification budget from the preferences
// item (strongly consistent); nil when they chose none.
func (s *Users) GetBudget(ctx context.Context, userID string) (*domain.Budget, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: key(UserPK(userID), prefsSK), ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String("#b"), ExpressionAttributeNames: map[string]string{"#b": budgetAttr},
	})
	if err != nil {
		return nil, fmt.Errorf("get budget of %s: %w", userID, err)
	}
	return decodeBudget(out.Item), nil
}

// SetBudget stores a user's own notification budget on the preferences item
// (creating it when absent), or removes it (nil: the catalog's again). One
// UpdateItem of that attribute only, so the overrides' writers and this one
// never overwrite each other.
func (s *Users) SetBudget(ctx context.Context, userID string, b *domain.Budget) error {
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: key(UserPK(userID), prefsSK),
		ExpressionAttributeNames:  map[string]string{"#b": budgetAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": str(formatTime(s.now())), ":kind": str("preferences")},
	}
	if b == nil {
		in.UpdateExpression = aws.String("SET updatedAt = :now, kind = :kind REMOVE #b")
	} else {
		in.UpdateExpression = aws.String("SET updatedAt = :now, kind = :kind, #b = :b")
		in.ExpressionAttributeValues[":b"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"perHour": num(int64(b.PerHour)), "perDay": num(int64(b.PerDay)),
		}}
	}
	if _, err := s.db.UpdateItem(ctx, in); err != nil {
		return fmt.Errorf("set budget of %s: %w", userID, err)
	}
	return nil
}
