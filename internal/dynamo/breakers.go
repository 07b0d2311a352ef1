package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/failover"
)

// Provider circuit breakers (failover.Breaker): one item per provider,
// pk BREAKERS, sk BRK#<provider>, kept for the stack's life (a handful of
// items). Nothing is written while a provider answers: a failure is one
// conditional UpdateItem (two when it starts a new window, one more when it
// opens the breaker), a probe one, its outcome one. All breakers share the
// partition, so herald providers lists them with one Query; failures stop
// once a breaker is open, which bounds that partition's writes by the
// failures of Threshold sends per Window per instance.
const (
	breakerPK     = "BREAKERS"
	breakerPrefix = "BRK#"
)

type breakerItem struct {
	PK          string `dynamodbav:"pk"`
	SK          string `dynamodbav:"sk"`
	Kind        string `dynamodbav:"kind"`
	Provider    string `dynamodbav:"provider"`
	Failures    int    `dynamodbav:"failures"`
	WindowStart string `dynamodbav:"windowStart,omitempty"`
	OpenUntil   string `dynamodbav:"openUntil,omitempty"`
	OpenedAt    string `dynamodbav:"openedAt,omitempty"`
	ProbeUntil  string `dynamodbav:"probeUntil,omitempty"`
	Forced      string `dynamodbav:"forced,omitempty"`
}

func (it breakerItem) toDomain() failover.Breaker {
	return failover.Breaker{Provider: it.Provider, Failures: it.Failures, WindowStart: parseTime(it.WindowStart), OpenUntil: parseTime(it.OpenUntil),
		OpenedAt: parseTime(it.OpenedAt), ProbeUntil: parseTime(it.ProbeUntil), Forced: failover.Force(it.Forced)}
}

func breakerKey(provider string) map[string]types.AttributeValue {
	return key(breakerPK, breakerPrefix+provider)
}

// Breaker reads provider's breaker (the zero, closed breaker when it has no
// item), eventually consistent: a worker's cache re-reads it every
// failover.Rules.Refresh at most.
func (s *Breakers) Breaker(ctx context.Context, provider string) (failover.Breaker, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: breakerKey(provider)})
	if err != nil {
		return failover.Breaker{}, fmt.Errorf("read breaker %s: %w", provider, err)
	}
	if out.Item == nil {
		return failover.Breaker{Provider: provider}, nil
	}
	return decodeBreaker(out.Item)
}

func decodeBreaker(av map[string]types.AttributeValue) (failover.Breaker, error) {
	var it breakerItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return failover.Breaker{}, fmt.Errorf("unmarshal breaker: %w", err)
	}
	return it.toDomain(), nil
}

// Breakers lists every provider's breaker that has an item (one Query).
func (s *Breakers) Breakers(ctx context.Context) ([]failover.Breaker, error) {
	var out []failover.Breaker
	p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("pk = :pk AND begins_with(sk, :prefix)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(breakerPK), ":prefix": str(breakerPrefix)},
		ConsistentRead:            aws.Bool(true),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list breakers: %w", err)
		}
		for _, av := range page.Items {
			b, err := decodeBreaker(av)
			if err != nil {
				return nil, err
			}
			out = append(out, b)
		}
	}
	return out, nil
}

// breakerUpdate is one UpdateItem's clauses (each without its keyword).
type breakerUpdate struct{ set, remove, add, cond string }

// update applies one conditional UpdateItem to provider's breaker and
// returns it as it is after; ok is false when the condition refused it.
func (s *Breakers) update(ctx context.Context, provider string, u breakerUpdate, vals map[string]types.AttributeValue) (failover.Breaker, bool, error) {
	vals[":provider"], vals[":kind"] = str(provider), str("breaker")
	expr := "SET #provider = :provider, kind = :kind"
	if u.set != "" {
		expr += ", " + u.set
	}
	if u.remove != "" {
		expr += " REMOVE " + u.remove
	}
	if u.add != "" {
		expr += " ADD " + u.add
	}
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: breakerKey(provider),
		UpdateExpression:          aws.String(expr),
		ExpressionAttributeNames:  map[string]string{"#provider": "provider"},
		ExpressionAttributeValues: vals,
		ReturnValues:              types.ReturnValueAllNew,
	}
	if u.cond != "" {
		in.ConditionExpression = aws.String(u.cond)
	}
	out, err := s.db.UpdateItem(ctx, in)
	if isConditionFailed(err) {
		return failover.Breaker{}, false, nil
	}
	if err != nil {
		return failover.Breaker{}, false, fmt.Errorf("update breaker %s: %w", provider, err)
	}
	b, err := decodeBreaker(out.Attributes)
	return b, err == nil, err
}

// errBreakerRace: a window's reset and count both lost to other writers
// three times in a row.
var errBreakerRace = errors.New("breaker failure count kept changing")

// RecordFailure counts a failure of provider at now in r's window, opens
// the breaker when the count reaches r.Threshold (opened: this call did),
// and returns it as it is after. One conditional ADD in the current window;
// a failure that starts a new window resets the count instead.
func (s *Breakers) RecordFailure(ctx context.Context, provider string, now time.Time, r failover.Rules) (_ failover.Breaker, opened bool, err error) {
	windowFrom := str(formatTime(now.Add(-r.Window)))
	var b failover.Breaker
	var ok bool
	for range 3 {
		b, ok, err = s.update(ctx, provider, breakerUpdate{add: "failures :one", cond: "windowStart >= :from"},
			map[string]types.AttributeValue{":one": num(1), ":from": windowFrom})
		if err != nil || ok {
			break
		}
		b, ok, err = s.update(ctx, provider, breakerUpdate{set: "failures = :one, windowStart = :now", cond: "attribute_not_exists(windowStart) OR windowStart < :from"},
			map[string]types.AttributeValue{":one": num(1), ":now": str(formatTime(now)), ":from": windowFrom})
		if err != nil || ok {
			break
		}
	}
	if err != nil {
		return b, false, err
	}
	if !ok {
		return b, false, errBreakerRace
	}
	if !r.Opens(b, now) {
		return b, false, nil
	}
	after, ok, err := s.update(ctx, provider, breakerUpdate{set: "openUntil = :until, openedAt = :now", remove: "probeUntil",
		cond: "attribute_not_exists(openUntil) AND attribute_not_exists(forced) AND failures >= :threshold"},
		map[string]types.AttributeValue{":until": str(formatTime(now.Add(r.OpenFor))), ":now": str(formatTime(now)), ":threshold": num(int64(r.Threshold))})
	if err != nil || !ok {
		return b, false, err
	}
	return after, true, nil
}

// TakeProbe lets one worker probe provider's half-open breaker: it holds
// the probe until now+lease, and reports whether it got it.
func (s *Breakers) TakeProbe(ctx context.Context, provider string, now time.Time, lease time.Duration) (bool, error) {
	_, ok, err := s.update(ctx, provider, breakerUpdate{set: "probeUntil = :until",
		cond: "openUntil <= :now AND attribute_not_exists(forced) AND (attribute_not_exists(probeUntil) OR probeUntil <= :now)"},
		map[string]types.AttributeValue{":until": str(formatTime(now.Add(lease))), ":now": str(formatTime(now))})
	return ok, err
}

// ProbeSucceeded closes provider's breaker after a probe the primary
// answered; closed is false when it was not open (another probe closed it).
func (s *Breakers) ProbeSucceeded(ctx context.Context, provider string) (closed bool, err error) {
	_, ok, err := s.update(ctx, provider, breakerUpdate{set: "failures = :zero", remove: "openUntil, probeUntil, windowStart", cond: "attribute_exists(openUntil)"},
		map[string]types.AttributeValue{":zero": num(0)})
	return ok, err
}

// ProbeFailed opens provider's breaker again for r.OpenFor after a failed
// probe.
func (s *Breakers) ProbeFailed(ctx context.Context, provider string, now time.Time, r failover.Rules) error {
	_, _, err := s.update(ctx, provider, breakerUpdate{set: "openUntil = :until", remove: "probeUntil", cond: "attribute_exists(openUntil)"},
		map[string]types.AttributeValue{":until": str(formatTime(now.Add(r.OpenFor)))})
	return err
}

// Force sets an operator's override of provider's breaker (ForceAuto
// removes it); the counts start again either way.
func (s *Breakers) Force(ctx context.Context, provider string, f failover.Force) (failover.Breaker, error) {
	u := breakerUpdate{set: "failures = :zero", remove: "openUntil, probeUntil, windowStart, forced"}
	vals := map[string]types.AttributeValue{":zero": num(0)}
	if f != failover.ForceAuto {
		u = breakerUpdate{set: "failures = :zero, forced = :forced", remove: "openUntil, probeUntil, windowStart"}
		vals[":forced"] = str(string(f))
	}
	b, _, err := s.update(ctx, provider, u, vals)
	return b, err
}

// BreakerItemKeys builds provider breaker b's item as the store keeps it
// (every attribute set: its largest) and returns its keys and billed size
// (the capacity model prices the breaker's reads and writes with it).
func BreakerItemKeys(b failover.Breaker) (ItemKeys, error) {
	av, err := attributevalue.MarshalMap(breakerItem{PK: breakerPK, SK: breakerPrefix + b.Provider, Kind: "breaker", Provider: b.Provider, Failures: b.Failures,
		WindowStart: formatTime(b.WindowStart), OpenUntil: formatTime(b.OpenUntil), OpenedAt: formatTime(b.OpenedAt), ProbeUntil: formatTime(b.ProbeUntil), Forced: string(b.Forced)})
	if err != nil {
		return ItemKeys{}, fmt.Errorf("marshal breaker: %w", err)
	}
	return keysOf(av, nil), nil
}
