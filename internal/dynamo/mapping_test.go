package dynamo

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
)

var created = time.Date(2026, 2, 3, 4, 5, 6, 789, time.UTC)

func fullNotification() *domain.Notification {
	return &domain.Notification{
		ID: "n1", Caller: "svc", Type: "invoice.payment_failed", Priority: domain.PriorityHigh,
		Recipient: domain.Recipient{UserID: "u1", Email: "u1@example.com", Phone: "+15550100", Locale: "fr-CA"},
		Data:      map[string]any{"url": "https://example.com/i/1", "n": 2.5, "nested": map[string]any{"list": []any{"a", 1.5, true, nil}}},
		Channels:  []domain.Channel{domain.ChannelEmail, domain.ChannelSMS}, ResourceID: "inv-1", BatchKey: "thread",
		SendAt: created.Add(time.Hour), ExpiresAt: created.Add(48 * time.Hour), CreatedAt: created,
		Status: domain.NotificationAccepted, RequestHash: "hash", DedupeKey: "dedupe",
	}
}

func TestNotificationItemRoundTrip(t *testing.T) {
	read, archived, cancelled := fullNotification(), fullNotification(), fullNotification()
	read.ReadAt = created.Add(time.Minute)
	archived.ReadAt, archived.ArchivedAt = created.Add(time.Minute), created.Add(2*time.Minute)
	cancelled.Status, cancelled.CancelledAt = domain.NotificationCancelled, created.Add(time.Second)
	tests := []struct {
		name string
		n    *domain.Notification
	}{
		{"minimal", &domain.Notification{ID: "m", Type: "t", Recipient: domain.Recipient{UserID: "u"}, Priority: domain.PriorityLow,
			CreatedAt: created, Status: domain.NotificationAccepted}},
		{"every field", fullNotification()},
		{"read", read},
		{"archived", archived},
		{"cancelled", cancelled},
	}
	s := New(nil, "t")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			item, err := attributevalue.MarshalMap(s.toNotificationItem(tt.n))
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeNotification(item)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.n) {
				t.Errorf("round trip\n got %+v\nwant %+v", got, tt.n)
			}
			// Decoding from a stream image gives the same notification.
			img, err := ToStreamImage(item)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := DecodeStreamNotification(img); err != nil || !reflect.DeepEqual(got, tt.n) {
				t.Errorf("from the stream image: %+v, %v", got, err)
			}
		})
	}
}

// TestNotificationItemIndexKeys: the sparse index attributes place a
// notification in the inbox, unread and archived listings by its state.
func TestNotificationItemIndexKeys(t *testing.T) {
	sortKey := "2026-02-03T04:05:06.000000789Z#n1"
	tests := []struct {
		name               string
		readAt, archivedAt time.Time
		gsi2pk             string
	}{
		{"unread", time.Time{}, time.Time{}, "UNREAD#u1"},
		{"read", created, time.Time{}, "READ#u1"},
		{"archived unread", time.Time{}, created, "ARCHIVED#u1"},
		{"archived read", created, created, "ARCHIVED#u1"},
	}
	s := New(nil, "t", WithRetention(time.Hour))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := fullNotification()
			n.ReadAt, n.ArchivedAt = tt.readAt, tt.archivedAt
			it := s.toNotificationItem(n)
			if it.PK != "N#n1" || it.SK != "N" || it.Kind != "notification" {
				t.Errorf("keys %s/%s kind %s", it.PK, it.SK, it.Kind)
			}
			if it.GSI2PK != tt.gsi2pk || it.GSI2SK != sortKey {
				t.Errorf("inbox index %s|%s, want %s|%s", it.GSI2PK, it.GSI2SK, tt.gsi2pk, sortKey)
			}
			if it.TTL != created.Add(time.Hour).Unix() {
				t.Errorf("ttl %d, want createdAt + retention", it.TTL)
			}
		})
	}
}

func TestDeliveryItemRoundTrip(t *testing.T) {
	s := New(nil, "t")
	tests := []struct {
		name         string
		d            domain.Delivery
		gsi3pk, due3 string
	}{
		{"planned", domain.Delivery{NotificationID: "n1", Channel: domain.ChannelEmail, Priority: domain.PriorityNormal, Status: domain.StatusPlanned, UpdatedAt: created}, "", ""},
		{"deferred is indexed by due time", domain.Delivery{NotificationID: "n1", Channel: domain.ChannelSMS, UserID: "u1", Priority: domain.PriorityLow,
			Status: domain.StatusDeferred, Reason: domain.ReasonQuietHours, UpdatedAt: created, DueAt: created.Add(time.Hour)},
			"DUE#2026020305#14", "2026-02-03T05:05:06.000000789Z#n1#sms"}, // hour bucket, FNV-1a("n1#sms") mod 32
		{"dropped keeps its due time out of the index", domain.Delivery{NotificationID: "n1", Channel: domain.ChannelSMS, Status: domain.StatusDropped,
			Reason: domain.ReasonExpired, UpdatedAt: created, DueAt: created.Add(time.Hour)}, "", ""},
		{"sending with every field", domain.Delivery{NotificationID: "n1", Channel: domain.ChannelPush, UserID: "u1", Priority: domain.PriorityHigh,
			Status: domain.StatusSending, Attempts: 3, UpdatedAt: created, LeaseUntil: created.Add(time.Minute), LeaseHolder: "msg-1", LastError: "throttled",
			ProviderMessageID: "pm", DigestID: "dg"}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it := s.toDeliveryItem(&tt.d)
			if it.PK != "N#n1" || it.SK != "D#"+string(tt.d.Channel) || it.GSI3PK != tt.gsi3pk || it.GSI3SK != tt.due3 {
				t.Errorf("keys %s/%s gsi3 %s|%s", it.PK, it.SK, it.GSI3PK, it.GSI3SK)
			}
			if want := domain.Latest(created, tt.d.DueAt).Add(DefaultRetention).Unix(); it.TTL != want {
				t.Errorf("ttl %d, want %d: the later of updatedAt and dueAt, + retention", it.TTL, want)
			}
			item, err := attributevalue.MarshalMap(it)
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeDelivery(item)
			want := tt.d
			want.Trail = domain.TrailAtCreation(&tt.d) // created in its state: its first step
			if err != nil || !reflect.DeepEqual(*got, want) {
				t.Errorf("round trip\n got %+v, %v\nwant %+v", got, err, want)
			}
		})
	}
}

func TestDecodersRejectOtherItems(t *testing.T) {
	s := New(nil, "t")
	notification, _ := attributevalue.MarshalMap(s.toNotificationItem(fullNotification()))
	delivery, _ := attributevalue.MarshalMap(s.toDeliveryItem(&domain.Delivery{NotificationID: "n1", Channel: domain.ChannelEmail, Status: domain.StatusQueued}))
	profile := map[string]types.AttributeValue{"pk": str("U#u1"), "sk": str("PROFILE")}
	for name, item := range map[string]map[string]types.AttributeValue{"delivery": delivery, "profile": profile} {
		if n, err := DecodeNotification(item); n != nil || err != nil {
			t.Errorf("DecodeNotification(%s) = %v, %v; want nil, nil", name, n, err)
		}
		if _, err := decodeNotification(item); err == nil {
			t.Errorf("decodeNotification(%s): want an error", name)
		}
	}
	if _, err := decodeDelivery(notification); err == nil {
		t.Error("decodeDelivery(notification): want an error")
	}
	if n, err := decodeNotification(nil); n != nil || err != nil {
		t.Errorf("decodeNotification(nil) = %v, %v", n, err)
	}
	bad := map[string]types.AttributeValue{"pk": str("N#x"), "sk": str("N"), "data": str("not a map")}
	if _, err := decodeNotification(bad); err == nil {
		t.Error("a string where a map belongs: want an error")
	}
}

func TestKeyBuilders(t *testing.T) {
	due := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct{ got, want string }{
		{NotificationPK("abc"), "N#abc"},
		{UserPK("u1"), "U#u1"},
		{RateLimitPK("u1", domain.ChannelSMS), "RL#u1#sms"},
		{DigestPK(domain.DigestKey{UserID: "u1", Channel: domain.ChannelPush, BatchKey: "thread#7"}), "DG#u1#push#thread#7"},
		{dueSortKey(due, "n1", domain.ChannelEmail), "2026-01-02T03:04:05.000000000Z#n1#email"},
		{digestEntry(due, "n2"), "2026-01-02T03:04:05.000000000Z#n2"},
		{stringAttr(markerKey("u1", "a1"), "pk") + "|" + stringAttr(markerKey("u1", "a1"), "sk"), "ANNREAD#u1|a1"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	for _, tt := range []struct{ pk, sk, id string }{{NotificationPK("x"), "N", "x"}} {
		if id, ok := NotificationIDFromKeys(tt.pk, tt.sk); !ok || id != tt.id {
			t.Errorf("NotificationIDFromKeys(%q) = %q, %v", tt.pk, id, ok)
		}
	}
}

// TestTimestampsSortAsTheyOrder: sort keys and conditions compare timestamps
// as strings, so their text must order as the instants do, across whole
// seconds, nanoseconds and zones.
func TestTimestampsSortAsTheyOrder(t *testing.T) {
	paris := time.FixedZone("CET", 3600)
	instants := []time.Time{
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 100_000_000, time.UTC),
		time.Date(2026, 1, 1, 1, 30, 0, 0, paris), // 00:30 UTC
		time.Date(2026, 1, 1, 0, 59, 59, 999_999_999, time.UTC),
		time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC),
	}
	texts := make([]string, len(instants))
	for i, at := range instants {
		texts[i] = formatTime(at)
		if len(texts[i]) != len(timeLayout) {
			t.Errorf("%v formats as %q: not fixed width", at, texts[i])
		}
		if back := parseTime(texts[i]); !back.Equal(at) {
			t.Errorf("%q parses to %v, want %v", texts[i], back, at)
		}
	}
	byText := slices.Clone(texts)
	sort.Strings(byText)
	byTime := slices.Clone(instants)
	slices.SortFunc(byTime, func(a, b time.Time) int { return a.Compare(b) })
	for i := range byTime {
		if formatTime(byTime[i]) != byText[i] {
			t.Fatalf("text order %v differs from time order", byText)
		}
	}
	if formatTime(time.Time{}) != "" || !parseTime("").IsZero() {
		t.Error("the zero time is not stored")
	}
	if got := parseTime("2026-01-02T03:04:05+01:00"); !got.Equal(time.Date(2026, 1, 2, 2, 4, 5, 0, time.UTC)) {
		t.Errorf("RFC 3339 fallback: %v", got)
	}
}

// TestStreamImageDecoding decodes every attribute type of a stream image as
// Lambda delivers it (JSON), and round trips through ToStreamImage.
func TestStreamImageDecoding(t *testing.T) {
	raw := `{
		"s": {"S": "text"}, "n": {"N": "12345678901234567890.5"}, "t": {"BOOL": true}, "null": {"NULL": true},
		"b": {"B": "AQI="}, "ss": {"SS": ["a", "b"]}, "ns": {"NS": ["1", "2.5"]}, "bs": {"BS": ["AQ==", "Ag=="]},
		"l": {"L": [{"S": "x"}, {"N": "1"}, {"L": []}]}, "m": {"M": {"k": {"M": {"deep": {"BOOL": false}}}}}
	}`
	var image map[string]events.DynamoDBAttributeValue
	if err := json.Unmarshal([]byte(raw), &image); err != nil {
		t.Fatal(err)
	}
	got, err := FromStreamImage(image)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]types.AttributeValue{
		"s": str("text"), "n": &types.AttributeValueMemberN{Value: "12345678901234567890.5"},
		"t": &types.AttributeValueMemberBOOL{Value: true}, "null": &types.AttributeValueMemberNULL{Value: true},
		"b": &types.AttributeValueMemberB{Value: []byte{1, 2}}, "ss": &types.AttributeValueMemberSS{Value: []string{"a", "b"}},
		"ns": &types.AttributeValueMemberNS{Value: []string{"1", "2.5"}}, "bs": &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2}}},
		"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{str("x"), &types.AttributeValueMemberN{Value: "1"}, &types.AttributeValueMemberL{Value: []types.AttributeValue{}}}},
		"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"k": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"deep": &types.AttributeValueMemberBOOL{Value: false}}},
		}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded\n%#v\nwant\n%#v", got, want)
	}
	back, err := ToStreamImage(got)
	if err != nil {
		t.Fatal(err)
	}
	again, err := FromStreamImage(back)
	if err != nil || !reflect.DeepEqual(again, want) {
		t.Errorf("round trip: %#v, %v", again, err)
	}

	// A notification's image as Lambda delivers it decodes to the notification;
	// other items are not notifications.
	s := New(nil, "t")
	item, _ := attributevalue.MarshalMap(s.toNotificationItem(fullNotification()))
	img, _ := ToStreamImage(item)
	encoded, err := json.Marshal(img)
	if err != nil {
		t.Fatal(err)
	}
	var fromJSON map[string]events.DynamoDBAttributeValue
	if err := json.Unmarshal(encoded, &fromJSON); err != nil {
		t.Fatal(err)
	}
	if n, err := DecodeStreamNotification(fromJSON); err != nil || !reflect.DeepEqual(n, fullNotification()) {
		t.Errorf("notification from JSON image: %+v, %v", n, err)
	}
	delivery, _ := attributevalue.MarshalMap(s.toDeliveryItem(&domain.Delivery{NotificationID: "n1", Channel: domain.ChannelEmail}))
	dimg, _ := ToStreamImage(delivery)
	if n, err := DecodeStreamNotification(dimg); n != nil || err != nil {
		t.Errorf("delivery image: %v, %v; want nil, nil", n, err)
	}
	if _, err := ToStreamImage(map[string]types.AttributeValue{"x": nil}); err == nil || !strings.Contains(err.Error(), "x") {
		t.Errorf("unsupported attribute: %v", err)
	}
}
