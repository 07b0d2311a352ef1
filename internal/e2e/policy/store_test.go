package policy

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
)

// TestRateCounterCountsEachNotificationOnce runs the counter's conditional
// update against DynamoDB Local: within the limit, over it, and again for
// notifications already counted (a stream retry), which must not count twice.
func TestRateCounterCountsEachNotificationOnce(t *testing.T) {
	st, s := store(t)
	ctx := context.Background()
	user := uniqueUser(t)
	window := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	steps := []struct {
		id   string
		want bool
	}{
		{"n1", true}, {"n1", true}, {"n2", true}, {"n3", false}, {"n1", true}, {"n2", true}, {"n3", false}, {"n4", false},
	}
	for i, step := range steps {
		got, err := s.CountDelivery(ctx, user, domain.ChannelEmail, window, time.Minute, 2, step.id)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got != step.want {
			t.Errorf("step %d (%s): within limit = %v, want %v", i, step.id, got, step.want)
		}
	}
	out, err := dynamodb.NewFromConfig(st.AWS).Query(ctx, &dynamodb.QueryInput{
		TableName: aws.String(st.Resources.Table), KeyConditionExpression: aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":pk": &ddbtypes.AttributeValueMemberS{Value: dynamo.RateLimitPK(user, domain.ChannelEmail)}},
	})
	if err != nil || len(out.Items) != 1 {
		t.Fatalf("counter items: %v, %v", out, err)
	}
	item := out.Items[0]
	if n := item["count"].(*ddbtypes.AttributeValueMemberN).Value; n != "2" {
		t.Errorf("count = %s, want 2", n)
	}
	if _, ok := item["ttl"].(*ddbtypes.AttributeValueMemberN); !ok {
		t.Error("counter has no ttl")
	}
	// Another window and another channel are separate counters.
	for _, c := range []struct {
		ch     domain.Channel
		window time.Time
	}{{domain.ChannelEmail, window.Add(time.Minute)}, {domain.ChannelSMS, window}} {
		if ok, err := s.CountDelivery(ctx, user, c.ch, c.window, time.Minute, 2, "n3"); err != nil || !ok {
			t.Errorf("%s at %v: %v, %v", c.ch, c.window, ok, err)
		}
	}
	if ok, err := s.CountDelivery(ctx, user, domain.ChannelPush, window, time.Minute, 0, "n9"); err != nil || !ok {
		t.Errorf("limit 0 (unlimited): %v, %v", ok, err)
	}
}

func TestDigestJoinIsIdempotentAndSealed(t *testing.T) {
	_, s := store(t)
	ctx := context.Background()
	key := domain.DigestKey{UserID: uniqueUser(t), Channel: domain.ChannelPush, BatchKey: "thread#1"}
	t0 := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	end := t0.Add(5 * time.Minute)
	join := func(id string, at time.Time) domain.DigestOutcome {
		t.Helper()
		out, err := s.JoinDigest(ctx, domain.DigestRequest{Key: key, NotificationID: id, CreatedAt: at, WindowEnd: at.Add(5 * time.Minute)})
		if err != nil {
			t.Fatalf("join %s: %v", id, err)
		}
		return out
	}
	want := func(got domain.DigestOutcome, role domain.DigestRole, digest string) {
		t.Helper()
		if got.Role != role || got.DigestID != digest {
			t.Errorf("outcome %+v, want role %d digest %q", got, role, digest)
		}
	}
	want(join("a", t0), domain.DigestLeader, "a")
	if got := join("a", t0); got.Role != domain.DigestLeader || !got.WindowEnd.Equal(end) {
		t.Errorf("leader retry: %+v", got)
	}
	want(join("b", t0.Add(time.Minute)), domain.DigestJoined, "a")
	want(join("b", t0.Add(time.Minute)), domain.DigestJoined, "a")  // retry: no second entry
	want(join("c", t0.Add(-time.Second)), domain.DigestJoined, "a") // accepted earlier, processed later
	want(join("d", t0.Add(2*time.Minute)), domain.DigestJoined, "a")

	members, err := s.SealDigest(ctx, key, "a")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(members); got != fmt.Sprint([]domain.DigestMember{
		{NotificationID: "d", CreatedAt: t0.Add(2 * time.Minute)},
		{NotificationID: "b", CreatedAt: t0.Add(time.Minute)},
		{NotificationID: "c", CreatedAt: t0.Add(-time.Second)},
	}) {
		t.Errorf("members %v, want d, b, c (newest first)", members)
	}
	if again, _ := s.SealDigest(ctx, key, "a"); fmt.Sprint(again) != fmt.Sprint(members) {
		t.Errorf("second seal %v", again)
	}
	// Sealed: a late joiner goes alone; a retried member still counts as joined.
	want(join("e", t0.Add(3*time.Minute)), domain.DigestAlone, "")
	want(join("b", t0.Add(time.Minute)), domain.DigestJoined, "a")
	// After the window, the next notification opens a new digest.
	want(join("f", end), domain.DigestLeader, "f")
	want(join("g", end.Add(time.Second)), domain.DigestJoined, "f")
	// A digest nobody joined seals empty.
	if m, err := s.SealDigest(ctx, domain.DigestKey{UserID: key.UserID, Channel: domain.ChannelEmail, BatchKey: "x"}, "z"); err != nil || len(m) != 0 {
		t.Errorf("empty seal: %v, %v", m, err)
	}
}

func TestGetNotificationsReadsInBatches(t *testing.T) {
	_, s := store(t)
	ctx := context.Background()
	user := uniqueUser(t)
	var ids []string
	for i := range 120 { // more than one BatchGetItem
		n := &domain.Notification{ID: fmt.Sprintf("%s-%03d", user, i), Type: "comment.created", Recipient: domain.Recipient{UserID: user},
			Priority: domain.PriorityLow, CreatedAt: time.Now(), Status: domain.NotificationAccepted, Data: map[string]any{"i": fmt.Sprint(i)}}
		if _, err := s.CreateNotification(ctx, n); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, n.ID)
	}
	got, err := s.GetNotifications(ctx, append(ids, user+"-missing"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 120 {
		t.Fatalf("got %d notifications, want 120 (the missing one left out)", len(got))
	}
	seen := map[string]bool{}
	for _, n := range got {
		seen[n.ID] = true
		if n.Recipient.UserID != user || n.Data["i"] == nil {
			t.Errorf("decoded %+v", n)
		}
	}
	if len(seen) != 120 {
		t.Errorf("%d distinct ids", len(seen))
	}
}
