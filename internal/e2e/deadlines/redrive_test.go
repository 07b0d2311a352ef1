package deadlines

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/app/relayfn"
	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/ops"
)

// TestRelayDLQRedriveADayLaterOverADigest: a burst of two digestible
// comments whose relay fails every time (the user's profile item is
// corrupt) parks the relay's on-failure records in the relay DLQ. A day
// later on the stack's clock (23 h: within RetentionDays 1, with DynamoDB's
// TTL played), the profile fixed, `herald dlq redrive relay --all` re-plans
// them 23 h after their digest window closed: the leader is deferred to the
// redrive's time, not to the window's end (issue 36, defect 2: a due time
// behind the scheduler's watermark), the other comment joins its digest,
// and the next tick releases one push of both comments. Nothing is left in
// the relay DLQ.
func TestRelayDLQRedriveADayLaterOverADigest(t *testing.T) {
	st := stacktest.Stack(t)
	ctx := context.Background()
	user := stacktest.UniqueID("dl-redrive")
	corruptProfile(t, user)
	var ids []string
	for i := range 2 {
		ids = append(ids, stacktest.Notify(t, map[string]any{"type": "comment.created", "recipient": map[string]any{"userId": user}, "batchKey": "thread-" + user,
			"data": map[string]any{"actorLabel": "Someone", "url": "https://example.com/c/" + user + "/" + string(rune('a'+i))}}))
	}
	waitParked(t, ids...)

	// A day later (less an hour: RetentionDays 1 keeps them a day past their
	// digest window), the profile is fixed and the relay DLQ redriven.
	st.Clock.Advance(23 * time.Hour)
	for _, id := range ids {
		expireByTTL(t, id)
	}
	fixProfile(t, &domain.User{ID: user})
	sinkID := addPush(t, user)
	redriven := st.Clock.Now()
	if out := dlq(t, "redrive", "relay", "--all"); !strings.Contains(out, "replanned") {
		t.Fatalf("redrive relay: %s", out)
	}
	var lead *domain.Delivery
	stacktest.Eventually(t, 10*time.Second, "the leader deferred, the other comment digested", func() bool {
		var errs [2]error
		var member *domain.Delivery
		lead, errs[0] = stacktest.Store(t).GetDelivery(ctx, ids[0], domain.ChannelPush)
		member, errs[1] = stacktest.Store(t).GetDelivery(ctx, ids[1], domain.ChannelPush)
		return errs[0] == nil && errs[1] == nil && lead.Status == domain.StatusDeferred && member.Status == domain.StatusSkipped && member.Reason == domain.ReasonDigested
	})
	if lead.DueAt.Before(redriven) {
		t.Fatalf("the leader planned a day late is due %v, before the redrive (%v): behind the scheduler's watermark", lead.DueAt, redriven)
	}
	st.Clock.Advance(lead.DueAt.Sub(st.Clock.Now()) + time.Minute)
	if due, err := st.Scheduler.Tick(ctx); err != nil || due == 0 {
		t.Fatalf("tick after the leader's due time: %d partitions, %v", due, err)
	}
	stacktest.Eventually(t, 20*time.Second, "the digest sent", func() bool {
		d, err := stacktest.Store(t).GetDelivery(ctx, ids[0], domain.ChannelPush)
		return err == nil && d.Status == domain.StatusSent
	})
	settle(t) // a duplicate would come from a queued message: none is left
	msgs := st.Push.MessagesFor(sinkID)
	if n := st.Push.ReceivedCount(sinkID); n != 1 || len(msgs) != 1 {
		t.Fatalf("%d pushes, want one digest", n)
	}
	var payload struct{ Title string }
	if err := json.Unmarshal(msgs[0].Body, &payload); err != nil || payload.Title != "2 new comments" {
		t.Fatalf("push %s: want the digest of both comments", msgs[0].Body)
	}
	if parked := parkedIDs(t); len(parked) != 0 {
		t.Fatalf("relay DLQ after the redrive holds %v", parked)
	}
}

// corruptProfile makes every relay of the user's notifications fail (its
// profile item is unreadable), so their records park in the relay DLQ.
func corruptProfile(t *testing.T, user string) {
	t.Helper()
	st := stacktest.Stack(t)
	key := profileKey(user)
	corrupt := map[string]types.AttributeValue{"pk": key["pk"], "sk": key["sk"],
		"kind": &types.AttributeValueMemberS{Value: "user"}, "email": &types.AttributeValueMemberBOOL{Value: true}}
	if _, err := stacktest.DB(t).PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(st.Resources.Table), Item: corrupt}); err != nil {
		t.Fatal(err)
	}
}

// fixProfile replaces a corrupt profile with u.
func fixProfile(t *testing.T, u *domain.User) {
	t.Helper()
	st := stacktest.Stack(t)
	if _, err := stacktest.DB(t).DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(st.Resources.Table), Key: profileKey(u.ID)}); err != nil {
		t.Fatal(err)
	}
	if err := stacktest.Store(t).PutUser(context.Background(), u); err != nil {
		t.Fatal(err)
	}
}

func profileKey(user string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: dynamo.UserPK(user)}, "sk": &types.AttributeValueMemberS{Value: "PROFILE"}}
}

// addPush gives the user a push subscription at the local push service and
// returns its sink.
func addPush(t *testing.T, user string) string {
	t.Helper()
	st := stacktest.Stack(t)
	sinkID, sub, err := st.Push.NewSubscription("")
	if err != nil {
		t.Fatal(err)
	}
	if err := stacktest.Store(t).AddPushSubscription(context.Background(), user, domain.PushSubscription{ID: sinkID, Endpoint: sub.Endpoint, P256dh: sub.P256dh, Auth: sub.Auth, CreatedAt: st.Clock.Now()}); err != nil {
		t.Fatal(err)
	}
	return sinkID
}

// parkedIDs lists the notifications named by the relay DLQ's records.
func parkedIDs(t *testing.T) []string {
	t.Helper()
	var parked []ops.Parked
	if err := json.Unmarshal([]byte(dlq(t, "show", "relay", "--json")), &parked); err != nil {
		t.Fatal(err)
	}
	var named []string
	for _, p := range parked {
		named = append(named, p.NotificationIDs...)
	}
	return named
}

// waitParked waits until the relay DLQ holds the records of every id.
func waitParked(t *testing.T, ids ...string) {
	t.Helper()
	stacktest.Eventually(t, 60*time.Second, "the records in the relay DLQ", func() bool {
		named := parkedIDs(t)
		for _, id := range ids {
			if !slices.Contains(named, id) {
				return false
			}
		}
		return true
	})
}

// dlq runs `herald dlq args…` against the stack and returns its output.
// The operator and the relay it re-runs read the stack's clock: the command
// runs when the test's clock says, as an operator's runs at AWS's time
// (ops.Connect's relay reads the real clock, which a moved stack clock has
// left behind).
func dlq(t *testing.T, args ...string) string {
	t.Helper()
	st := stacktest.Stack(t)
	connect := func(ctx context.Context, w ops.Where) (*ops.Operator, string, error) {
		cfg, target, desc, err := ops.DefaultResolver().Resolve(ctx, w)
		if err != nil {
			return nil, "", err
		}
		op, err := ops.Connect(cfg, target, nil)
		if err != nil {
			return nil, "", err
		}
		env := target.RelayEnv()
		relay, err := relayfn.New(app.Deps{AWS: cfg, Getenv: func(k string) string { return env[k] }, Now: st.Clock.Now,
			Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Catalog: catalog.MustLoad()})
		if err != nil {
			return nil, "", err
		}
		op.Replanner = ops.RelayReplanner{Handle: relay.Handle, Record: stacktest.Store(t).NotificationInsertRecord}
		op.Now = st.Clock.Now
		// The local SQS is one server: a receive without a long poll sees
		// every message, and a command does not end on a second's empty wait.
		op.PollWait = -1
		return op, desc, nil
	}
	out, err := stacktest.Herald(t, connect, args...)
	if err != nil {
		t.Fatalf("herald dlq %v: %v", args, err)
	}
	return out
}
