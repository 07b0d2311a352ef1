package dynamo_test

import (
	"context"
	"fmt"
	"sync"
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
	s, db, _ := newStore(t)
	ctx := context.Background()
	user := uniq(t)
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
	out, err := db.Query(ctx, &dynamodb.QueryInput{
		TableName: aws.String(s.Name()), KeyConditionExpression: aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":pk": &ddbtypes.AttributeValueMemberS{Value: dynamo.RateLimitPK(user, domain.ChannelEmail)}},
	})
	if err != nil || len(out.Items) != 1 {
		t.Fatalf("counter items: %v, %v", out, err)
	}
	item := out.Items[0]
	if n := item["count"].(*ddbtypes.AttributeValueMemberN).Value; n != "2" {
		t.Errorf("count = %s, want 2", n)
	}
	// The counter outlives its window by an hour, then TTL removes it.
	if ttl := numAttr(t, item, "ttl"); ttl != fmt.Sprint(window.Add(time.Minute+time.Hour).Unix()) {
		t.Errorf("ttl = %s, want the window's end plus an hour", ttl)
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

// TestRateCounterUnderConcurrency races distinct notifications against one
// window: exactly limit of them fit, however the requests interleave; and
// the same notification counted concurrently counts once.
func TestRateCounterUnderConcurrency(t *testing.T) {
	s, db, _ := newStore(t)
	ctx := context.Background()
	user := uniq(t)
	const limit = 3
	count := func(ch domain.Channel, id func(i int) string) int {
		var wg sync.WaitGroup
		var mu sync.Mutex
		allowed := 0
		for i := range 2 * racers {
			wg.Go(func() {
				ok, err := s.CountDelivery(ctx, user, ch, t0, time.Minute, limit, id(i))
				if err != nil {
					t.Errorf("count %s: %v", id(i), err)
				}
				if ok {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return allowed
	}
	if got := count(domain.ChannelEmail, func(i int) string { return fmt.Sprint("n", i) }); got != limit {
		t.Errorf("%d distinct notifications allowed, want %d", got, limit)
	}
	if got := count(domain.ChannelSMS, func(int) string { return "same" }); got != 2*racers {
		t.Errorf("the same notification allowed %d of %d times, want every time", got, 2*racers)
	}
	item := rawItem(t, db, s.Name(), dynamo.RateLimitPK(user, domain.ChannelSMS), "W#"+t0.Format("2006-01-02T15:04:05.000000000Z"))
	if n := numAttr(t, item, "count"); n != "1" {
		t.Errorf("the same notification counted %s times", n)
	}
}
