package devstack

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// TestSharedDynamoDBKeepsADatabasePerKey: the DynamoDB Local make test
// shares (DatabasePerKey) gives each access key its own tables, items and
// stream, so stacks with keys of their own (Config.DynamoDB) do not see each
// other; and a stack refuses to keep a data directory in it.
func TestSharedDynamoDBKeepsADatabasePerKey(t *testing.T) {
	if _, err := Start(context.Background(), Config{Root: "../..", APIAddr: "127.0.0.1:0", DataDir: t.TempDir(), DynamoDB: "http://127.0.0.1:1"}); err == nil ||
		!strings.Contains(err.Error(), "data directory") {
		t.Errorf("Start with a data directory in a shared DynamoDB Local: %v; want a refusal", err)
	}
	if testing.Short() || os.Getenv("HERALD_SKIP_INTEGRATION") != "" {
		t.Skip("integration test: starts DynamoDB Local")
	}
	ctx := context.Background()
	endpoint := os.Getenv(SharedDynamoDBEnv) // make test's, started the same way (scripts/testdynamodb)
	if endpoint == "" {
		emu, err := StartEmulators(ctx, EmulatorOptions{InfraDir: "../../infra/local", Services: []string{"dynamodb"}, DatabasePerKey: true})
		if err != nil {
			t.Fatal(err)
		}
		defer emu.Stop()
		endpoint = emu.DynamoDB
	}
	creds := func(key string) aws.CredentialsProvider {
		return credentials.NewStaticCredentialsProvider(key, "local", "")
	}
	items := map[string]int{NewAccessKey(): 2, NewAccessKey(): 3} // fresh keys: the shared instance holds other stacks' too
	for key, n := range items {
		db := dynamodb.New(dynamodb.Options{Region: LocalRegion, BaseEndpoint: aws.String(endpoint), Credentials: creds(key)})
		// The same table name under each key: a shared database would refuse
		// the second (ResourceInUseException).
		if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String("herald-Table"), BillingMode: types.BillingModePayPerRequest,
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
			StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewImage}}); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		for i := range n {
			if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("herald-Table"),
				Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: key + string(rune('a'+i))}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for key, n := range items {
		db := dynamodb.New(dynamodb.Options{Region: LocalRegion, BaseEndpoint: aws.String(endpoint), Credentials: creds(key)})
		scan, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("herald-Table")})
		if err != nil || int(scan.Count) != n {
			t.Errorf("%s: scan %v items (%v), want its own %d", key, scan, err, n)
			continue
		}
		desc, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("herald-Table")})
		if err != nil {
			t.Fatal(err)
		}
		streams := dynamodbstreams.New(dynamodbstreams.Options{Region: LocalRegion, BaseEndpoint: aws.String(endpoint), Credentials: creds(key)})
		stream, err := streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: desc.Table.LatestStreamArn})
		if err != nil {
			t.Fatal(err)
		}
		records := 0
		for _, shard := range stream.StreamDescription.Shards {
			it, err := streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: desc.Table.LatestStreamArn,
				ShardId: shard.ShardId, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon})
			if err != nil {
				t.Fatal(err)
			}
			out, err := streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range out.Records {
				if pk := r.Dynamodb.Keys["pk"].(*streamtypes.AttributeValueMemberS).Value; !strings.HasPrefix(pk, key) {
					t.Errorf("%s's stream holds %s's item %s", key, pk[:6], pk)
				}
				records++
			}
		}
		if records != n {
			t.Errorf("%s's stream: %d records, want %d", key, records, n)
		}
	}
}
