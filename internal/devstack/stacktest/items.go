package stacktest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Expiry reads the item pk/sk of the stack's table as stored and returns
// when DynamoDB's TTL may delete it (its ttl attribute); the test fails
// when the item or its ttl is missing.
func Expiry(t testing.TB, pk, sk string) time.Time {
	t.Helper()
	out, err := DB(t).GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(Stack(t).Resources.Table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}}})
	if err != nil {
		t.Fatalf("get %s/%s: %v", pk, sk, err)
	}
	ttl, ok := out.Item["ttl"].(*types.AttributeValueMemberN)
	if !ok {
		t.Fatalf("%s/%s: no ttl in %v", pk, sk, out.Item)
	}
	sec, err := strconv.ParseInt(ttl.Value, 10, 64)
	if err != nil {
		t.Fatalf("%s/%s: ttl %q: %v", pk, sk, ttl.Value, err)
	}
	return time.Unix(sec, 0).UTC()
}

// Retention is the stack's RetentionDays parameter.
func Retention(t testing.TB) time.Duration {
	t.Helper()
	days, err := strconv.Atoi(Stack(t).Template.Params["RetentionDays"])
	if err != nil {
		t.Fatalf("RetentionDays %q: %v", Stack(t).Template.Params["RetentionDays"], err)
	}
	return time.Duration(days) * 24 * time.Hour
}
