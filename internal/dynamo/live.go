package dynamo

import (
	"context"
	"fmt"
	"sort"
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
// without connections costs a read of nothing. Its TTL is when the last
// connection reaches API Gateway's 2-hour limit; readers skip connections
// past it before that. Pings write nothing here (live.Connection).
const liveSK = "LIVE"

// liveItem is the stored shape.
type liveItem struct {
	PK    string              `dynamodbav:"pk"`
	SK    string              `dynamodbav:"sk"`
	Kind  string              `dynamodbav:"kind"`
	Conns map[string]liveConn `dynamodbav:"conns"`
	Ver   int64               `dynamodbav:"ver"`
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

// maxLiveWriteAttempts bounds the optimistic retries of a connect racing
// another connect of the same user.
const maxLiveWriteAttempts = 4

// AddConnection records c for user: connections no longer open at now are
// dropped, and past max the oldest are evicted (returned). The write is
// conditional on the item's version, so two connects of one user at once
// both land.
func (s *Store) AddConnection(ctx context.Context, user string, c live.Connection, max int, now time.Time) ([]string, error) {
	for attempt := 0; attempt < maxLiveWriteAttempts; attempt++ {
		out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: key(UserPK(user), liveSK), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return nil, fmt.Errorf("read connections: %w", err)
		}
		it := liveItem{PK: UserPK(user), SK: liveSK, Kind: "live", Conns: map[string]liveConn{}}
		exists := len(out.Item) > 0
		if exists {
			if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
				return nil, fmt.Errorf("unmarshal connections: %w", err)
			}
			if it.Conns == nil {
				it.Conns = map[string]liveConn{}
			}
		}
		prev := it.Ver
		evicted := pruneConnections(it.Conns, c.ID, max, now)
		it.Conns[c.ID] = liveConn{Connected: c.ConnectedAt.UnixMilli()}
		it.Ver = prev + 1
		for _, lc := range it.Conns {
			it.TTL = maxInt64(it.TTL, time.UnixMilli(lc.Connected).Add(live.MaxConnectionAge).Unix())
		}
		av, err := attributevalue.MarshalMap(it)
		if err != nil {
			return nil, err
		}
		in := &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: av}
		if exists {
			in.ConditionExpression = aws.String("ver = :v")
			in.ExpressionAttributeValues = map[string]types.AttributeValue{":v": num(prev)}
		} else {
			in.ConditionExpression = aws.String("attribute_not_exists(pk)")
		}
		_, err = s.db.PutItem(ctx, in)
		if isConditionFailed(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("write connections: %w", err)
		}
		return evicted, nil
	}
	return nil, fmt.Errorf("write connections: %d concurrent changes", maxLiveWriteAttempts)
}

// pruneConnections drops the connections closed by now (not reported: API
// Gateway closed them) and evicts the oldest open ones so that, with the
// new one, at most max remain; it returns the evicted ids.
func pruneConnections(conns map[string]liveConn, newID string, max int, now time.Time) []string {
	type entry struct {
		id string
		c  liveConn
	}
	var open []entry
	for id, c := range conns {
		if id == newID || !c.toDomain(id).Open(now) {
			delete(conns, id)
			continue
		}
		open = append(open, entry{id, c})
	}
	sort.Slice(open, func(i, j int) bool {
		if open[i].c.Connected != open[j].c.Connected {
			return open[i].c.Connected < open[j].c.Connected
		}
		return open[i].id < open[j].id
	})
	var evicted []string
	for len(open) >= max && len(open) > 0 {
		evicted = append(evicted, open[0].id)
		delete(conns, open[0].id)
		open = open[1:]
	}
	return evicted
}

// RemoveConnection forgets a connection and returns the user's connections
// left in the item (the item as the update left it, or as it was when the
// connection was not there); an absent item or connection is not an error
// (the update is conditional so it never creates the item).
func (s *Store) RemoveConnection(ctx context.Context, user, connectionID string) ([]live.Connection, error) {
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 key(UserPK(user), liveSK),
		UpdateExpression:                    aws.String("REMOVE conns.#c ADD ver :one"),
		ConditionExpression:                 aws.String("attribute_exists(conns.#c)"),
		ExpressionAttributeNames:            map[string]string{"#c": connectionID},
		ExpressionAttributeValues:           map[string]types.AttributeValue{":one": num(1)},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var item map[string]types.AttributeValue
	if err == nil {
		item = out.Attributes
	} else if ccf, ok := asConditionFailed(err); ok {
		item = ccf.Item
	} else {
		return nil, fmt.Errorf("remove connection: %w", err)
	}
	var it liveItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return nil, fmt.Errorf("unmarshal connections: %w", err)
	}
	var left []live.Connection
	for id, c := range it.Conns {
		left = append(left, c.toDomain(id))
	}
	return left, nil
}

// Connections reads the connections of users (100 a BatchGetItem,
// eventually consistent: a connection made a moment ago may miss one post,
// which the kit's refetch on connect covers). Users without an item are
// absent from the result.
func (s *Store) Connections(ctx context.Context, users []string) (map[string][]live.Connection, error) {
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

func maxInt64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}
