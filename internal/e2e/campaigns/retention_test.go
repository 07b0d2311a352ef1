package campaigns

import (
	"context"
	"net/http"
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

// Issue 36, defect 1: a campaign's sendAt is accepted up to a year ahead,
// but its items, its recipients' notifications and their deferred
// deliveries expired at their creation plus RetentionDays (90 here): TTL
// deleted them before they were due. Every item the campaign wrote, and
// the status copies its cancel writes for the workers, now expires no
// earlier than its sendAt plus the retention.
func TestScheduledCampaignKeepsItsItemsUntilItsSendAt(t *testing.T) {
	st := stacktest.Stack(t)
	db := stacktest.DB(t)
	run := stacktest.UniqueID("cmp-far")
	people := users(run, 0, 2)
	putUsers(t, people)
	retention, err := strconv.Atoi(st.Template.Params["RetentionDays"])
	if err != nil {
		t.Fatalf("RetentionDays %q: %v", st.Template.Params["RetentionDays"], err)
	}
	sendAt := st.Clock.Now().Add(200 * 24 * time.Hour).UTC().Truncate(time.Second)
	r := stacktest.Do(t, http.MethodPost, "/v1/campaigns", `{`+content+`,"sendAt":"`+sendAt.Format(time.RFC3339)+`","audience":{"userIds":`+quoted(people)+`}}`)
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", r.StatusCode, r.Body)
	}
	var c campaign
	r.JSON(t, &c)
	if r := stacktest.Do(t, http.MethodPost, "/v1/campaigns/"+c.ID+"/start", nil); r.StatusCode != http.StatusAccepted {
		t.Fatalf("start: %d %s", r.StatusCode, r.Body)
	}
	ids := make([]string, len(people))
	for i, u := range people {
		ids[i] = domain.CampaignNotificationID(c.ID, u)
	}
	stacktest.Eventually(t, 30*time.Second, "deliveries deferred", func() bool {
		for _, id := range ids {
			if item := raw(t, db, st.Resources.Table, dynamo.NotificationPK(id), "D#email"); stringOf(item, "status") != string(domain.StatusDeferred) {
				return false
			}
		}
		return true
	})
	if r := stacktest.Do(t, http.MethodDelete, "/v1/campaigns/"+c.ID, nil); r.StatusCode != http.StatusOK {
		t.Fatalf("cancel: %d %s", r.StatusCode, r.Body)
	}

	floor := sendAt.Add(time.Duration(retention) * 24 * time.Hour).Unix()
	keys := map[string][2]string{
		"META":        {dynamo.CampaignPK(c.ID), "META"},
		"DATA":        {dynamo.CampaignPK(c.ID), "DATA"},
		"lot":         {dynamo.CampaignLotPK(c.ID, domain.InlineChunk), "LOT"},
		"status copy": {dynamo.CampaignStatusPK(c.ID, ids[0]), "STATUS"},
	}
	for i, id := range ids {
		keys["notification "+people[i]] = [2]string{dynamo.NotificationPK(id), "N"}
		keys["deferred delivery "+people[i]] = [2]string{dynamo.NotificationPK(id), "D#email"}
	}
	for name, k := range keys {
		item := raw(t, db, st.Resources.Table, k[0], k[1])
		ttl, ok := item["ttl"].(*types.AttributeValueMemberN)
		if !ok {
			t.Errorf("%s (%s/%s): no ttl in %v", name, k[0], k[1], item)
			continue
		}
		if got, _ := strconv.ParseInt(ttl.Value, 10, 64); got < floor {
			t.Errorf("%s expires %v, before sendAt %v + %d days (%v)", name, time.Unix(got, 0).UTC(), sendAt, retention, time.Unix(floor, 0).UTC())
		}
	}
}

func raw(t *testing.T, db *dynamodb.Client, table, pk, sk string) map[string]types.AttributeValue {
	t.Helper()
	out, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}}})
	if err != nil {
		t.Fatalf("get %s/%s: %v", pk, sk, err)
	}
	return out.Item
}

func stringOf(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}
