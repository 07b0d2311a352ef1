package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/inbox"
)

// TestMigrateInboxIndex: items as the release with two inbox indexes wrote
// them (unread in gsi1 INBOX# and gsi2 UNREAD#, read in gsi1 INBOX# only,
// archived in gsi1 ARCHIVED#, announcements in gsi1 ANNOUNCEMENTS) are read
// through the one inbox index after the migration; an interrupted run
// resumes from its cursor, and a rerun changes nothing.
func TestMigrateInboxIndex(t *testing.T) {
	s, db, _ := newStore(t)
	ctx := context.Background()
	table := s.Name()
	user := uniq(t)
	var ids []string
	for i := range 6 {
		id := fmt.Sprintf("%s-%d", user, i)
		mustCreate(t, s, notification(id, user, t0.Add(time.Duration(i)*time.Minute)))
		ids = append(ids, id)
	}
	sortKey := func(i int) string {
		return t0.Add(time.Duration(i)*time.Minute).Format("2006-01-02T15:04:05.000000000Z") + "#" + ids[i]
	}
	at := &types.AttributeValueMemberS{Value: t0.Add(time.Hour).Format("2006-01-02T15:04:05.000000000Z")}
	// The former release's shapes: 0 and 5 unread, 1 and 4 read, 2
	// archived, 3 read and archived.
	legacy := func(i int, update string, values map[string]types.AttributeValue) {
		t.Helper()
		values[":sk"] = &types.AttributeValueMemberS{Value: sortKey(i)}
		if _, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: dynamo.NotificationPK(ids[i])}, "sk": &types.AttributeValueMemberS{Value: "N"}},
			UpdateExpression: aws.String(update), ExpressionAttributeValues: values,
		}); err != nil {
			t.Fatal(err)
		}
	}
	inboxPK := &types.AttributeValueMemberS{Value: "INBOX#" + user}
	archivedPK := &types.AttributeValueMemberS{Value: "ARCHIVED#" + user}
	for _, i := range []int{0, 5} {
		legacy(i, "SET gsi1pk = :pk, gsi1sk = :sk", map[string]types.AttributeValue{":pk": inboxPK})
	}
	for _, i := range []int{1, 4} {
		legacy(i, "SET gsi1pk = :pk, gsi1sk = :sk, readAt = :at REMOVE gsi2pk, gsi2sk", map[string]types.AttributeValue{":pk": inboxPK, ":at": at})
	}
	legacy(2, "SET gsi1pk = :pk, gsi1sk = :sk, archivedAt = :at REMOVE gsi2pk, gsi2sk", map[string]types.AttributeValue{":pk": archivedPK, ":at": at})
	legacy(3, "SET gsi1pk = :pk, gsi1sk = :sk, readAt = :at, archivedAt = :at REMOVE gsi2pk, gsi2sk", map[string]types.AttributeValue{":pk": archivedPK, ":at": at})
	// An (expired) announcement in the former listing only.
	annID := "mig-" + user
	annSK := "2001-01-01T00:00:00.000000000Z#" + annID
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "A#" + annID}, "sk": &types.AttributeValueMemberS{Value: "A"},
		"kind": &types.AttributeValueMemberS{Value: "announcement"}, "id": &types.AttributeValueMemberS{Value: annID},
		"publishedAt": &types.AttributeValueMemberS{Value: "2001-01-01T00:00:00.000000000Z"},
		"expiresAt":   &types.AttributeValueMemberS{Value: "2001-01-02T00:00:00.000000000Z"},
		"gsi1pk":      &types.AttributeValueMemberS{Value: "ANNOUNCEMENTS"}, "gsi1sk": &types.AttributeValueMemberS{Value: annSK},
	}}); err != nil {
		t.Fatal(err)
	}
	list := func(f inbox.Filter) []string {
		t.Helper()
		entries, _, err := s.ListInbox(ctx, user, f, "", 50)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range entries {
			got = append(got, e.Notification.ID)
		}
		return got
	}
	// Before: only the unread ones (already in place) are listed.
	if got := list(inbox.FilterAll); !slices.Equal(got, []string{ids[5], ids[0]}) {
		t.Fatalf("before the migration, all = %v", got)
	}

	// Interrupted after one small page, resumed from its cursor.
	first, err := s.MigrateInboxIndex(ctx, dynamo.MigrateInboxOptions{PageSize: 2, MaxPages: 1})
	if err != nil || first.Done || first.Cursor == "" || first.Scanned != 2 {
		t.Fatalf("first page: %+v, %v; want 2 items scanned and a cursor", first, err)
	}
	var reports []dynamo.MigrateInboxProgress
	began := time.Now()
	rest, err := s.MigrateInboxIndex(ctx, dynamo.MigrateInboxOptions{From: first.Cursor, PageSize: 25, WritesPerSecond: 20,
		Progress: func(p dynamo.MigrateInboxProgress) { reports = append(reports, p) }})
	if err != nil || !rest.Done || rest.Cursor != "" {
		t.Fatalf("resumed run: %+v, %v", rest, err)
	}
	if len(reports) == 0 || reports[len(reports)-1] != rest {
		t.Errorf("progress reports %v, last want %+v", reports, rest)
	}
	// Five items (4 notifications, the announcement) at 20 writes/s: at
	// least 4 intervals of 50 ms, however the two runs shared them.
	if n := first.Updated + rest.Updated; n < 5 {
		t.Errorf("updated %d + %d, want at least the 5 former items", first.Updated, rest.Updated)
	} else if min := time.Duration(rest.Updated-1) * 50 * time.Millisecond; rest.Updated > 1 && time.Since(began) < min {
		t.Errorf("%d writes at 20/s took %v, want at least %v", rest.Updated, time.Since(began), min)
	}

	want := map[inbox.Filter][]string{
		inbox.FilterAll:      {ids[5], ids[4], ids[1], ids[0]},
		inbox.FilterUnread:   {ids[5], ids[0]},
		inbox.FilterArchived: {ids[3], ids[2]},
	}
	for f, w := range want {
		if got := list(f); !slices.Equal(got, w) {
			t.Errorf("after the migration, %s = %v, want %v", f, got, w)
		}
	}
	if n, err := s.CountUnread(ctx, user, 100); err != nil || n != 2 {
		t.Errorf("unread count %d, %v; want 2", n, err)
	}
	ann := rawItem(t, db, table, "A#"+annID, "A")
	if pk, sk := ann["gsi2pk"], ann["gsi2sk"]; pk == nil || pk.(*types.AttributeValueMemberS).Value != "ANNOUNCEMENTS" || sk.(*types.AttributeValueMemberS).Value != annSK {
		t.Errorf("announcement keys %v %v", pk, sk)
	}
	// The former listing's keys stay for the release before.
	if it := rawItem(t, db, table, dynamo.NotificationPK(ids[1]), "N"); it["gsi1pk"] == nil {
		t.Errorf("gsi1pk removed: %v", it)
	}

	// A rerun (and a dry run) changes nothing.
	again, err := s.MigrateInboxIndex(ctx, dynamo.MigrateInboxOptions{PageSize: 100})
	if err != nil || again.Updated != 0 || !again.Done {
		t.Errorf("rerun: %+v, %v; want nothing updated", again, err)
	}
	if dry, err := s.MigrateInboxIndex(ctx, dynamo.MigrateInboxOptions{DryRun: true}); err != nil || dry.Updated != 0 {
		t.Errorf("dry run after: %+v, %v", dry, err)
	}
	if _, err := s.MigrateInboxIndex(ctx, dynamo.MigrateInboxOptions{From: "not-a-cursor"}); !errors.Is(err, dynamo.ErrInvalidMigrationCursor) {
		t.Errorf("bad cursor: %v", err)
	}
}
