package devstack

import (
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// TestStreamRecordConversion: every attribute type of a Streams API record
// reaches the function as Lambda delivers it.
func TestStreamRecordConversion(t *testing.T) {
	at := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	image := map[string]streamtypes.AttributeValue{
		"s":    &streamtypes.AttributeValueMemberS{Value: "x"},
		"n":    &streamtypes.AttributeValueMemberN{Value: "42"},
		"bool": &streamtypes.AttributeValueMemberBOOL{Value: true},
		"null": &streamtypes.AttributeValueMemberNULL{Value: true},
		"b":    &streamtypes.AttributeValueMemberB{Value: []byte{1, 2}},
		"ss":   &streamtypes.AttributeValueMemberSS{Value: []string{"a", "b"}},
		"ns":   &streamtypes.AttributeValueMemberNS{Value: []string{"1", "2"}},
		"bs":   &streamtypes.AttributeValueMemberBS{Value: [][]byte{{3}}},
		"l":    &streamtypes.AttributeValueMemberL{Value: []streamtypes.AttributeValue{&streamtypes.AttributeValueMemberS{Value: "y"}}},
		"m":    &streamtypes.AttributeValueMemberM{Value: map[string]streamtypes.AttributeValue{"k": &streamtypes.AttributeValueMemberN{Value: "7"}}},
	}
	rec := streamtypes.Record{
		EventID: aws.String("e1"), EventName: streamtypes.OperationTypeInsert, EventVersion: aws.String("1.1"),
		Dynamodb: &streamtypes.StreamRecord{
			SequenceNumber: aws.String("100"), SizeBytes: aws.Int64(64), StreamViewType: streamtypes.StreamViewTypeNewAndOldImages,
			ApproximateCreationDateTime: &at,
			Keys:                        map[string]streamtypes.AttributeValue{"pk": &streamtypes.AttributeValueMemberS{Value: "N#1"}},
			NewImage:                    image,
		},
	}
	got, err := toStreamEventRecord(rec, "arn:stream")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]events.DynamoDBAttributeValue{
		"s": events.NewStringAttribute("x"), "n": events.NewNumberAttribute("42"), "bool": events.NewBooleanAttribute(true),
		"null": events.NewNullAttribute(), "b": events.NewBinaryAttribute([]byte{1, 2}),
		"ss": events.NewStringSetAttribute([]string{"a", "b"}), "ns": events.NewNumberSetAttribute([]string{"1", "2"}),
		"bs": events.NewBinarySetAttribute([][]byte{{3}}),
		"l":  events.NewListAttribute([]events.DynamoDBAttributeValue{events.NewStringAttribute("y")}),
		"m":  events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"k": events.NewNumberAttribute("7")}),
	}
	if !reflect.DeepEqual(got.Change.NewImage, want) {
		t.Errorf("new image %v, want %v", got.Change.NewImage, want)
	}
	if got.Change.OldImage != nil || got.Change.Keys["pk"].String() != "N#1" || got.Change.SequenceNumber != "100" ||
		got.EventName != "INSERT" || got.EventSourceArn != "arn:stream" || !got.Change.ApproximateCreationDateTime.Time.Equal(at) {
		t.Errorf("record %+v", got)
	}
}
