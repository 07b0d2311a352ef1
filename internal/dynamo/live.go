package dynamo

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/live"
)

// liveSK is a user's live-inbox connections item, next to the profile:
// one item holding every open connection (at most live's bound), so that
// the poster reads a whole batch's users in one BatchGetItem, and a user
// without connections costs a read of nothing. Its TTL is when the newest
// connection reaches API Gateway's 2-hour limit (and liveTTLSlack); readers
// skip connections past it before that. Pings write nothing here
// (live.Connection).
const liveSK = "LIVE"

// liveTTLSlack: each connect sets the TTL from its own clock, so the last
// write is not always the newest connection's; a minute covers the clocks
// of concurrent connects (Lambda's are NTP-synchronised to milliseconds).
const liveTTLSlack = time.Minute

// liveItem is the stored shape.
type liveItem struct {
	PK    string              `dynamodbav:"pk"`
	SK    string              `dynamodbav:"sk"`
	Kind  string              `dynamodbav:"kind"`
	Conns map[string]liveConn `dynamodbav:"conns"`
	TTL   int64               `dynamodbav:"ttl"`
	_     struct{}            `dynamodbav:"-"`
}

// liveConn is one connection: connected, Unix ms. (Items written before
// pings stopped touching them also hold "a", the last message; unread.)
type liveConn struct {
	Connected int64 `dynamodbav:"c"`
}

func (c liveConn) toDomain(id string) live.Connection {
	return live.Connection{ID: id, ConnectedAt: time.UnixMilli(c.Connected).UTC()}
}

// AddConnection records c for user and returns the user's connections as
// of this write. The write is an UpdateItem that sets the connection's own
// map entry, so connects of one user at once never conflict; only the very
// first connect of a user creates the item (a conditional PutItem; losing
// that race, it adds its entry to the item the winner created).
func (s *Live) AddConnection(ctx context.Context, user string, c live.Connection) ([]live.Connection, error) {
	entry := liveConn{Connected: c.ConnectedAt.UnixMilli()}
	av, err := attributevalue.Marshal(entry)
	if err != nil {
		return nil, err
	}
	ttl := c.ConnectedAt.Add(live.MaxConnectionAge + liveTTLSlack).Unix()
	for range 2 {
		out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(s.table),
			Key:                       key(UserPK(user), liveSK),
			UpdateExpression:          aws.String("SET conns.#c = :c, #ttl = :ttl"),
			ConditionExpression:       aws.String("attribute_exists(conns)"),
			ExpressionAttributeNames:  map[string]string{"#c": c.ID, "#ttl": "ttl"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":c": av, ":ttl": num(ttl)},
			ReturnValues:              types.ReturnValueAllNew,
		})
		if err == nil {
			var it liveItem
			if err := attributevalue.UnmarshalMap(out.Attributes, &it); err != nil {
				return nil, fmt.Errorf("unmarshal connections: %w", err)
			}
			return it.connections(), nil
		}
		if !isConditionFailed(err) {
			return nil, fmt.Errorf("write connections: %w", err)
		}
		first, err := attributevalue.MarshalMap(liveItem{PK: UserPK(user), SK: liveSK, Kind: "live", Conns: map[string]liveConn{c.ID: entry}, TTL: ttl})
		if err != nil {
			return nil, err
		}
		_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: first,
			ConditionExpression: aws.String("attribute_not_exists(pk)")})
		if err == nil {
			return []live.Connection{c}, nil
		}
		if !isConditionFailed(err) {
			return nil, fmt.Errorf("write connections: %w", err)
		}
		// Another connect created the item meanwhile: add to it.
	}
	return nil, fmt.Errorf("write connections: the item was created and deleted meanwhile")
}

// EvictConnection removes a connection if it is still recorded; the
// removal is conditional on it (never creating the item), so of concurrent
// evictions exactly one reports true.
func (s *Live) EvictConnection(ctx context.Context, user, connectionID string) (bool, error) {
	removed, _, err := s.removeConnection(ctx, user, connectionID)
	return removed, err
}

// ForgetConnections removes connections API Gateway has closed, in one
// write (a missing one is nothing to remove); the item must exist, and
// never is created.
func (s *Live) ForgetConnections(ctx context.Context, user string, connectionIDs []string) error {
	if len(connectionIDs) == 0 {
		return nil
	}
	names := map[string]string{}
	paths := make([]string, len(connectionIDs))
	for i, id := range connectionIDs {
		n := "#c" + strconv.Itoa(i)
		names[n], paths[i] = id, "conns."+n
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.table),
		Key:                      key(UserPK(user), liveSK),
		UpdateExpression:         aws.String("REMOVE " + strings.Join(paths, ", ")),
		ConditionExpression:      aws.String("attribute_exists(conns)"),
		ExpressionAttributeNames: names,
	})
	if err != nil && !isConditionFailed(err) {
		return fmt.Errorf("forget connections: %w", err)
	}
	return nil
}

// RemoveConnection forgets a connection and returns the user's connections
// left in the item (the item as the update left it, or as it was when the
// connection was not there); an absent item or connection is not an error
// (the update is conditional so it never creates the item).
func (s *Live) RemoveConnection(ctx context.Context, user, connectionID string) ([]live.Connection, error) {
	_, left, err := s.removeConnection(ctx, user, connectionID)
	return left, err
}

// removeConnection removes a connection if it is still recorded, with one
// conditional UpdateItem, and reports whether this call removed it and the
// connections left.
func (s *Live) removeConnection(ctx context.Context, user, connectionID string) (removed bool, left []live.Connection, err error) {
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 key(UserPK(user), liveSK),
		UpdateExpression:                    aws.String("REMOVE conns.#c"),
		ConditionExpression:                 aws.String("attribute_exists(conns.#c)"),
		ExpressionAttributeNames:            map[string]string{"#c": connectionID},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var item map[string]types.AttributeValue
	if err == nil {
		removed, item = true, out.Attributes
	} else if ccf, ok := asConditionFailed(err); ok {
		item = ccf.Item
	} else {
		return false, nil, fmt.Errorf("remove connection: %w", err)
	}
	var it liveItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return removed, nil, fmt.Errorf("unmarshal connections: %w", err)
	}
	return removed, it.connections(), nil
}

// connections are the item's connections, in no order.
func (it liveItem) connections() []live.Connection {
	cs := make([]live.Connection, 0, len(it.Conns))
	for id, c := range it.Conns {
		cs = append(cs, c.toDomain(id))
	}
	return cs
}

// Connections reads the connections of users (100 a BatchGetItem,
// eventually consistent: a connection made a moment ago may miss one post,
// which the kit's refetch on connect covers). Users without an item are
// absent from the result.
func (s *Live) Connections(ctx context.Context, users []string) (map[string][]live.Connection, error) {
	keys := make([]map[string]types.AttributeValue, 0, len(users))
	seen := map[string]bool{}
	for _, u := range users {
		if !seen[u] {
			seen[u] = true
			keys = append(keys, key(UserPK(u), liveSK))
		}
	}
	items, err := s.batchGet(ctx, "read connections", keys, types.KeysAndAttributes{})
	if err != nil {
		return nil, err
	}
	out := map[string][]live.Connection{}
	for _, av := range items {
		var it liveItem
		if err := attributevalue.UnmarshalMap(av, &it); err != nil {
			return nil, fmt.Errorf("unmarshal connections: %w", err)
		}
		user := it.PK[len(userPrefix):]
		for id, c := range it.Conns {
			out[user] = append(out[user], c.toDomain(id))
		}
	}
	return out, nil
}
