package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
)

// storedPrefs is the preferences item with its optimistic-locking version.
type storedPrefs struct {
	PK        string                     `dynamodbav:"pk"`
	SK        string                     `dynamodbav:"sk"`
	Kind      string                     `dynamodbav:"kind"`
	Prefs     map[string]map[string]bool `dynamodbav:"prefs"`
	Version   int64                      `dynamodbav:"version"`
	UpdatedAt string                     `dynamodbav:"updatedAt,omitempty"`
}

// GetPreferences reads a user's overrides (strongly consistent); a user
// without any has empty preferences.
func (s *Store) GetPreferences(ctx context.Context, userID string) (domain.Preferences, error) {
	sp, err := s.readPrefs(ctx, userID)
	if err != nil {
		return nil, err
	}
	return toPreferences(sp.Prefs), nil
}

func (s *Store) readPrefs(ctx context.Context, userID string) (*storedPrefs, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: key(UserPK(userID), prefsSK), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("get preferences of %s: %w", userID, err)
	}
	sp := &storedPrefs{}
	if len(out.Item) > 0 {
		if err := attributevalue.UnmarshalMap(out.Item, sp); err != nil {
			return nil, fmt.Errorf("unmarshal preferences of %s: %w", userID, err)
		}
	}
	return sp, nil
}

func toPreferences(m map[string]map[string]bool) domain.Preferences {
	p := domain.Preferences{}
	for typ, byChannel := range m {
		cm := make(map[domain.Channel]bool, len(byChannel))
		for c, on := range byChannel {
			cm[domain.Channel(c)] = on
		}
		p[typ] = cm
	}
	return p
}

// MergePreferences applies changes — type → channel → on/off, or nil to
// remove the override (back to the type's default) — to the stored overrides
// and returns the result. The item is one map read by the relay and workers in the user's
// profile query, so the merge is read → merge → conditional put on a version
// number, retried when a concurrent merge won.
func (s *Store) MergePreferences(ctx context.Context, userID string, changes map[string]map[domain.Channel]*bool) (domain.Preferences, error) {
	for attempt := 0; attempt < 8; attempt++ {
		sp, err := s.readPrefs(ctx, userID)
		if err != nil {
			return nil, err
		}
		merged := map[string]map[string]bool{}
		for typ, byChannel := range sp.Prefs {
			merged[typ] = map[string]bool{}
			for c, on := range byChannel {
				merged[typ][c] = on
			}
		}
		for typ, byChannel := range changes {
			for c, on := range byChannel {
				if on == nil {
					delete(merged[typ], string(c))
					continue
				}
				if merged[typ] == nil {
					merged[typ] = map[string]bool{}
				}
				merged[typ][string(c)] = *on
			}
			if len(merged[typ]) == 0 {
				delete(merged, typ)
			}
		}
		next := storedPrefs{PK: UserPK(userID), SK: prefsSK, Kind: "preferences", Prefs: merged,
			Version: sp.Version + 1, UpdatedAt: formatTime(s.now())}
		item, err := attributevalue.MarshalMap(next)
		if err != nil {
			return nil, fmt.Errorf("marshal preferences of %s: %w", userID, err)
		}
		in := &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item}
		if sp.Version == 0 {
			in.ConditionExpression = aws.String("attribute_not_exists(version)")
		} else {
			in.ConditionExpression = aws.String("version = :v")
			in.ExpressionAttributeValues = map[string]types.AttributeValue{":v": num(sp.Version)}
		}
		_, err = s.db.PutItem(ctx, in)
		if isConditionFailed(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("put preferences of %s: %w", userID, err)
		}
		return toPreferences(merged), nil
	}
	return nil, fmt.Errorf("merge preferences of %s: %w", userID, domain.ErrConflict)
}
