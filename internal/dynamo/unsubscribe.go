package dynamo

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/api"
	"github.com/heraldhq/herald/internal/domain"
)

var _ api.UnsubscribeStore = (*Store)(nil)

// SetPreference sets one (type, channel) override in the user's preferences
// item without touching the others. DynamoDB cannot SET a nested path whose
// parent map is missing, so it tries the deepest update first and creates
// the missing level conditionally; a concurrent writer that creates the same
// level first makes the next round succeed.
func (s *Store) SetPreference(ctx context.Context, userID, notificationType string, c domain.Channel, enabled bool) error {
	names := map[string]string{"#prefs": "prefs", "#type": notificationType, "#channel": string(c)}
	on := &types.AttributeValueMemberBOOL{Value: enabled}
	attempts := []struct {
		update, cond string
		vals         map[string]types.AttributeValue
	}{
		{"SET #prefs.#type.#channel = :on", "attribute_exists(#prefs.#type)",
			map[string]types.AttributeValue{":on": on}},
		{"SET #prefs.#type = :byChannel", "attribute_exists(#prefs) AND attribute_not_exists(#prefs.#type)",
			map[string]types.AttributeValue{":byChannel": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{string(c): on}}}},
		{"SET #prefs = :prefs, kind = :kind", "attribute_not_exists(#prefs)",
			map[string]types.AttributeValue{":kind": str("preferences"), ":prefs": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
				notificationType: &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{string(c): on}}}}}},
	}
	for round := 0; round < 3; round++ {
		for _, a := range attempts {
			n := map[string]string{} // DynamoDB rejects unused names
			for k, v := range names {
				if strings.Contains(a.update+" "+a.cond, k) {
					n[k] = v
				}
			}
			_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName: aws.String(s.table), Key: key(UserPK(userID), prefsSK),
				UpdateExpression: aws.String(a.update), ConditionExpression: aws.String(a.cond),
				ExpressionAttributeNames: n, ExpressionAttributeValues: a.vals,
			})
			if err == nil {
				return nil
			}
			if !isConditionFailed(err) {
				return fmt.Errorf("set preference %s/%s of user %s: %w", notificationType, c, userID, err)
			}
		}
	}
	return fmt.Errorf("set preference %s/%s of user %s: %w", notificationType, c, userID, domain.ErrConflict)
}
