package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// SuppressEmail records address as the user's suppressed email (after a hard
// bounce or a complaint) with one update of the profile item, creating a
// minimal profile when the user has none (the address came from an intake
// override). The worker drops email to it while it is still the address in
// use; a profile whose email changes no longer matches it.
func (s *Users) SuppressEmail(ctx context.Context, userID, address string) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(s.table),
		Key:              key(UserPK(userID), profileSK),
		UpdateExpression: aws.String("SET suppressedEmail = :addr, kind = if_not_exists(kind, :kind), userId = if_not_exists(userId, :user), updatedAt = if_not_exists(updatedAt, :now), gsi4pk = if_not_exists(gsi4pk, :user)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":addr": str(address), ":kind": str("user"), ":user": str(userID), ":now": str(formatTime(s.now())),
		},
	})
	if err != nil {
		return fmt.Errorf("suppress email of user %s: %w", userID, err)
	}
	return nil
}
