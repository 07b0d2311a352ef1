package dynamo

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
)

// GetPreferences reads a user's overrides (strongly consistent); a user
// without any has empty preferences.
func (s *Users) GetPreferences(ctx context.Context, userID string) (domain.Preferences, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: key(UserPK(userID), prefsSK), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("get preferences of %s: %w", userID, err)
	}
	return decodePrefs(out.Item, userID)
}

// decodePrefs reads a preferences item (empty: no overrides); a type whose
// overrides were all removed is left out.
func decodePrefs(av map[string]types.AttributeValue, userID string) (domain.Preferences, error) {
	var it prefsItem
	if len(av) > 0 {
		if err := attributevalue.UnmarshalMap(av, &it); err != nil {
			return nil, fmt.Errorf("unmarshal preferences of %s: %w", userID, err)
		}
	}
	p := domain.Preferences{}
	for typ, byChannel := range it.Prefs {
		if len(byChannel) == 0 {
			continue // a type whose overrides were all removed
		}
		cm := make(map[domain.Channel]bool, len(byChannel))
		for c, on := range byChannel {
			cm[domain.Channel(c)] = on
		}
		p[typ] = cm
	}
	return p, nil
}

// MergePreferences applies changes — type → channel → on/off, or nil to
// remove the override (back to the type's default) — to the stored overrides
// and returns the result. It updates only the paths it changes
// (prefs.<type>.<channel>), in one UpdateItem, so concurrent merges and
// other writers of single preferences (e.g. unsubscribe) never overwrite each
// other, and nothing is read first. DynamoDB cannot create the parent maps of
// a nested path implicitly: the first merge touching a type creates them with
// if_not_exists and tries again.
func (s *Users) MergePreferences(ctx context.Context, userID string, changes map[string]map[domain.Channel]*bool) (domain.Preferences, error) {
	if len(changes) == 0 {
		return s.GetPreferences(ctx, userID)
	}
	typeNames := slices.Sorted(maps.Keys(changes))

	names := map[string]string{"#prefs": "prefs"}
	vals := map[string]types.AttributeValue{":now": str(formatTime(s.now())), ":kind": str("preferences")}
	sets := []string{"updatedAt = :now", "kind = :kind"}
	var removes, parents, ensure []string
	for ti, typ := range typeNames {
		tn := fmt.Sprintf("#t%d", ti)
		names[tn] = typ
		parents = append(parents, "attribute_exists(#prefs."+tn+")")
		ensure = append(ensure, fmt.Sprintf("#prefs.%s = if_not_exists(#prefs.%s, :empty)", tn, tn))
		for ci, c := range slices.Sorted(maps.Keys(changes[typ])) {
			cn := fmt.Sprintf("#c%d_%d", ti, ci)
			names[cn] = string(c)
			path := "#prefs." + tn + "." + cn
			if on := changes[typ][c]; on == nil {
				removes = append(removes, path)
			} else {
				vn := fmt.Sprintf(":v%d_%d", ti, ci)
				vals[vn] = &types.AttributeValueMemberBOOL{Value: *on}
				sets = append(sets, path+" = "+vn)
			}
		}
	}
	update := "SET " + strings.Join(sets, ", ")
	if len(removes) > 0 {
		update += " REMOVE " + strings.Join(removes, ", ")
	}
	empty := &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}
	k := key(UserPK(userID), prefsSK)
	for attempt := 0; attempt < 3; attempt++ {
		out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.table), Key: k,
			UpdateExpression:          aws.String(update),
			ConditionExpression:       aws.String(strings.Join(parents, " AND ")),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: vals,
			ReturnValues:              types.ReturnValueAllNew,
		})
		if err == nil {
			return decodePrefs(out.Attributes, userID)
		}
		if !isConditionFailed(err) {
			return nil, fmt.Errorf("merge preferences of %s: %w", userID, err)
		}
		// Create the missing parents, then try again.
		if _, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.table), Key: k,
			UpdateExpression:          aws.String("SET #prefs = if_not_exists(#prefs, :empty), kind = :kind"),
			ExpressionAttributeNames:  map[string]string{"#prefs": "prefs"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":empty": empty, ":kind": str("preferences")},
		}); err != nil {
			return nil, fmt.Errorf("create preferences of %s: %w", userID, err)
		}
		typeOnly := map[string]string{"#prefs": "prefs"}
		for ti, typ := range typeNames {
			typeOnly[fmt.Sprintf("#t%d", ti)] = typ
		}
		if _, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.table), Key: k,
			UpdateExpression:          aws.String("SET " + strings.Join(ensure, ", ")),
			ExpressionAttributeNames:  typeOnly,
			ExpressionAttributeValues: map[string]types.AttributeValue{":empty": empty},
		}); err != nil {
			return nil, fmt.Errorf("create preference types of %s: %w", userID, err)
		}
	}
	return nil, fmt.Errorf("merge preferences of %s: %w", userID, domain.ErrConflict)
}
