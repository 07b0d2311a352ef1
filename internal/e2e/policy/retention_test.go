package policy

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

// Issue 36, defect 1: sendAt is accepted up to a year ahead, but the
// notification and its deferred delivery (with its due-index entry)
// expired at their creation plus RetentionDays: TTL deleted them before
// they were due, with no DLQ and no metric. Both now expire no earlier than
// the due time plus the retention.
func TestFarSendAtOutlivesTheRetention(t *testing.T) {
	st := stacktest.Stack(t)
	retention, err := strconv.Atoi(st.Template.Params["RetentionDays"])
	if err != nil {
		t.Fatalf("RetentionDays %q: %v", st.Template.Params["RetentionDays"], err)
	}
	user := uniqueUser(t)
	sendAt := st.Clock.Now().Add(300 * 24 * time.Hour).UTC().Truncate(time.Second)
	id := stacktest.Notify(t, reservation(user, user+"@example.com", map[string]any{"sendAt": sendAt.Format(time.RFC3339)}))
	if d := waitStatus(t, id, domain.ChannelEmail, domain.StatusDeferred, 10*time.Second); !d.DueAt.Equal(sendAt) {
		t.Fatalf("deferred to %v, want sendAt %v", d.DueAt, sendAt)
	}
	floor := sendAt.Add(time.Duration(retention) * 24 * time.Hour)
	for _, sk := range []string{"N", "D#email"} {
		out, err := dynamodb.NewFromConfig(st.AWS).GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(st.Resources.Table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: dynamo.NotificationPK(id)}, "sk": &types.AttributeValueMemberS{Value: sk}}})
		if err != nil {
			t.Fatal(err)
		}
		ttl, ok := out.Item["ttl"].(*types.AttributeValueMemberN)
		if !ok {
			t.Fatalf("%s: no ttl in %v", sk, out.Item)
		}
		if got, _ := strconv.ParseInt(ttl.Value, 10, 64); got < floor.Unix() {
			t.Errorf("%s expires %v, before sendAt + %d days (%v)", sk, time.Unix(got, 0).UTC(), retention, floor)
		}
	}
}
