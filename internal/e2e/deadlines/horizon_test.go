package deadlines

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
)

// TestFurthestSendAtAtTheShortestRetention: a notification whose sendAt is
// the furthest the API accepts (a year ahead), on a stack whose
// RetentionDays is its minimum (1), is sent once when the year has passed
// on the stack's clock, although DynamoDB's TTL has had a year to delete
// its items (issue 36, defect 1: they expired at creation plus the
// retention). The year is not ticked through: the scheduler ticks every
// minute and, finding nothing due, keeps its watermark an hour behind the
// clock, so the test puts the watermark where a year of empty ticks leaves
// it (a jump would make the scheduler catch up 48 h a tick: 183 ticks of
// 1,536 probes). The TTL is played: before each tick, every item of the
// notification whose ttl has passed is deleted, as DynamoDB may.
func TestFurthestSendAtAtTheShortestRetention(t *testing.T) {
	st := stacktest.Stack(t)
	if r := stacktest.Retention(t); r != 24*time.Hour {
		t.Fatalf("the stack's retention is %v, want RetentionDays' minimum, 1 day", r)
	}
	user := stacktest.UniqueID("dl-year")
	addr := user + "@example.com"
	n := reservation(user, map[string]any{"email": addr})
	// The API's bound is a year from its own clock when it validates:
	// a minute less leaves the request's time to reach it.
	sendAt := st.Clock.Now().AddDate(1, 0, 0).Add(-time.Minute).UTC().Truncate(time.Second)
	n["sendAt"] = sendAt.Format(time.RFC3339)
	id := stacktest.Notify(t, n)
	stacktest.Eventually(t, 10*time.Second, "deferred to sendAt", func() bool {
		d, err := stacktest.Store(t).GetDelivery(context.Background(), id, domain.ChannelEmail)
		return err == nil && d.Status == domain.StatusDeferred && d.DueAt.Equal(sendAt)
	})

	// A year less two hours of empty ticks.
	st.Clock.Advance(sendAt.Sub(st.Clock.Now()) - 2*time.Hour)
	expireByTTL(t, id)
	if err := stacktest.Store(t).AdvanceReleaseWatermark(context.Background(), st.Clock.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if due, err := st.Scheduler.Tick(context.Background()); err != nil || due != 0 {
		t.Fatalf("tick two hours before sendAt: %d partitions due, %v; want none", due, err)
	}

	// sendAt passes: the next tick releases it, the worker sends it once.
	st.Clock.Advance(2*time.Hour + 2*time.Minute)
	expireByTTL(t, id)
	if due, err := st.Scheduler.Tick(context.Background()); err != nil || due == 0 {
		t.Fatalf("tick after sendAt: %d partitions due, %v; want its partition", due, err)
	}
	var d *domain.Delivery
	stacktest.Eventually(t, 20*time.Second, "sent a year later", func() bool {
		var err error
		d, err = stacktest.Store(t).GetDelivery(context.Background(), id, domain.ChannelEmail)
		return err == nil && d.Status == domain.StatusSent
	})
	settle(t) // a duplicate would come from a queued message: none is left
	if mails := stacktest.EmailsTo(t, addr); len(mails) != 1 || d.Attempts != 1 {
		t.Fatalf("%d emails after %d attempts, want one", len(mails), d.Attempts)
	}
	// Readable for the retention after it was due.
	if got := stacktest.Expiry(t, dynamo.NotificationPK(id), "N"); got.Before(sendAt.Add(24 * time.Hour)) {
		t.Errorf("the notification expires %v, before sendAt + 1 day", got)
	}
}

// expireByTTL deletes the items of a notification's partition whose ttl is
// past on the stack's clock, as DynamoDB's TTL may from that second on.
func expireByTTL(t *testing.T, id string) {
	t.Helper()
	st := stacktest.Stack(t)
	db := stacktest.DB(t)
	now := st.Clock.Now().Unix()
	out, err := db.Query(context.Background(), &dynamodb.QueryInput{TableName: aws.String(st.Resources.Table), ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: dynamo.NotificationPK(id)}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, item := range out.Items {
		ttl, ok := item["ttl"].(*types.AttributeValueMemberN)
		if !ok {
			continue
		}
		if sec, err := strconv.ParseInt(ttl.Value, 10, 64); err == nil && sec <= now {
			if _, err := db.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(st.Resources.Table),
				Key: map[string]types.AttributeValue{"pk": item["pk"], "sk": item["sk"]}}); err != nil {
				t.Fatal(err)
			}
			t.Logf("TTL: %s expired", item["sk"].(*types.AttributeValueMemberS).Value)
		}
	}
}
