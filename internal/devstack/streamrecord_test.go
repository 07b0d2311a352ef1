package devstack

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/heraldhq/herald/internal/devstack/eventpattern"
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

// TestFilterPatterns: the Lambda event filtering the template's stream
// mappings use — exact values, anything-but, exists — on a record as the
// mapping marshals it.
func TestFilterPatterns(t *testing.T) {
	rec := func(priority string) map[string]any {
		r := map[string]any{"eventName": "INSERT", "dynamodb": map[string]any{"Keys": map[string]any{"sk": map[string]any{"S": "N"}}, "NewImage": map[string]any{}}}
		if priority != "" {
			r["dynamodb"].(map[string]any)["NewImage"] = map[string]any{"priority": map[string]any{"S": priority}}
		}
		return r
	}
	pattern := func(s string) *eventpattern.Pattern {
		p, err := eventpattern.Compile(s)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	matchPattern := func(p *eventpattern.Pattern, doc map[string]any) bool { return p.MatchValue(doc) }
	high := pattern(`{"eventName":["INSERT"],"dynamodb":{"NewImage":{"priority":{"S":["high"]}}}}`)
	notHigh := pattern(`{"eventName":["INSERT"],"dynamodb":{"NewImage":{"priority":{"S":[{"anything-but":["high"]}]}}}}`)
	noPriority := pattern(`{"eventName":["INSERT"],"dynamodb":{"NewImage":{"priority":[{"exists":false}]}}}`)
	for _, tc := range []struct {
		name                          string
		doc                           map[string]any
		wantHigh, wantNot, wantAbsent bool
	}{
		{"high", rec("high"), true, false, false},
		{"low", rec("low"), false, true, false},
		{"normal", rec("normal"), false, true, false},
		{"no priority attribute", rec(""), false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := matchPattern(high, tc.doc); got != tc.wantHigh {
				t.Errorf("high pattern = %v, want %v", got, tc.wantHigh)
			}
			if got := matchPattern(notHigh, tc.doc); got != tc.wantNot {
				t.Errorf("anything-but pattern = %v, want %v", got, tc.wantNot)
			}
			if got := matchPattern(noPriority, tc.doc); got != tc.wantAbsent {
				t.Errorf("exists:false pattern = %v, want %v", got, tc.wantAbsent)
			}
		})
	}
	if !matchPattern(pattern(`{"eventName":[{"prefix":"INS"}]}`), rec("high")) {
		t.Error("prefix filter did not match")
	}
}

// TestTemplateFiltersSplitNotificationsByPriority: on records as the
// emulated mapping builds them from the Streams API, the template's two
// relay mappings take every new notification exactly once between them —
// high priority the high mapping, the rest the other — and nothing else.
func TestTemplateFiltersSplitNotificationsByPriority(t *testing.T) {
	tmpl, err := LoadTemplate("../../template.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	mappings := map[string]*streamMapping{}
	for id, m := range tmpl.GetAllLambdaEventSourceMappingResources() {
		if !strings.Contains(aws.ToString(m.EventSourceArn), "StreamArn") {
			continue
		}
		sm := &streamMapping{name: id}
		for _, f := range m.FilterCriteria.Filters {
			sm.filters = append(sm.filters, eventpattern.MustCompile(aws.ToString(f.Pattern)))
		}
		mappings[id] = sm
	}
	if len(mappings) != 2 {
		t.Fatalf("stream mappings %v, want the relay's two", slices.Collect(maps.Keys(mappings)))
	}
	record := func(op streamtypes.OperationType, sk, priority string) events.DynamoDBEventRecord {
		image := map[string]streamtypes.AttributeValue{"pk": &streamtypes.AttributeValueMemberS{Value: "N#1"}, "sk": &streamtypes.AttributeValueMemberS{Value: sk}}
		if priority != "-" {
			image["priority"] = &streamtypes.AttributeValueMemberS{Value: priority}
		}
		at := time.Now()
		r, err := toStreamEventRecord(streamtypes.Record{EventName: op, Dynamodb: &streamtypes.StreamRecord{
			SequenceNumber: aws.String("1"), ApproximateCreationDateTime: &at, NewImage: image,
			Keys: map[string]streamtypes.AttributeValue{"pk": image["pk"], "sk": image["sk"]},
		}}, "arn:stream")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, tc := range []struct {
		name string
		rec  events.DynamoDBEventRecord
		want string // the mapping that takes it, "" for none
	}{
		{"high notification", record(streamtypes.OperationTypeInsert, "N", "high"), "RelayHighStreamMapping"},
		{"low notification", record(streamtypes.OperationTypeInsert, "N", "low"), "RelayStreamMapping"},
		{"normal notification", record(streamtypes.OperationTypeInsert, "N", "normal"), "RelayStreamMapping"},
		{"empty priority", record(streamtypes.OperationTypeInsert, "N", ""), "RelayStreamMapping"},
		{"no priority attribute", record(streamtypes.OperationTypeInsert, "N", "-"), "RelayStreamMapping"},
		{"a delivery item", record(streamtypes.OperationTypeInsert, "D#email", "high"), ""},
		{"a notification modified", record(streamtypes.OperationTypeModify, "N", "high"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var took []string
			for id, m := range mappings {
				if m.matches(tc.rec) {
					took = append(took, id)
				}
			}
			if want := []string{tc.want}; (tc.want == "" && len(took) != 0) || (tc.want != "" && !slices.Equal(took, want)) {
				t.Errorf("taken by %v, want %q", took, tc.want)
			}
		})
	}
}
