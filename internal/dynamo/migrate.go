package dynamo

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
)

// MigrateInboxOptions drive MigrateInboxIndex.
type MigrateInboxOptions struct {
	// From resumes a run at the cursor a previous one printed ("" = the
	// start of the table).
	From string
	// WritesPerSecond paces the updates (the write budget; 0 = unpaced).
	WritesPerSecond float64
	// PageSize is the Scan's Limit (items read per request; default 100).
	PageSize int
	// MaxPages stops after that many pages (0 = the whole table), leaving
	// the cursor to resume from.
	MaxPages int
	// DryRun counts what would change and writes nothing.
	DryRun bool
	// Progress, when set, is called after each page.
	Progress func(MigrateInboxProgress)
}

// MigrateInboxProgress is a run's progress so far.
type MigrateInboxProgress struct {
	Scanned int `json:"scanned"`
	// Updated items got their inbox-index keys (or would, dry run);
	// Current ones had them already.
	Updated int `json:"updated"`
	Current int `json:"current"`
	// Cursor is where the next page starts ("" once the scan is done).
	Cursor string `json:"cursor"`
	Done   bool   `json:"done"`
}

// ErrInvalidMigrationCursor: --from is not a cursor a run printed.
var ErrInvalidMigrationCursor = errors.New("invalid migration cursor")

// MigrateInboxIndex gives the notifications and announcements written by a
// release with two inbox indexes their keys in the one inbox index (gsi2):
// read notifications READ#<user>, archived ones ARCHIVED#<user>, every
// announcement ANNOUNCEMENTS, each with the sort key it had in the former
// listing (gsi1sk, "<time>#<id>"). Unread notifications are already in
// place (UNREAD#<user> is the former unread index's partition) and cancelled
// ones stay out. It scans the table page by page; each update is
// conditional on the state it was computed from, so it runs safely beside
// either release, is idempotent (a rerun updates nothing) and resumes from
// the cursor of any progress report. The former listing's keys (gsi1pk,
// gsi1sk) are left for the release before to read; they expire with the
// items.
func (s *Inbox) MigrateInboxIndex(ctx context.Context, o MigrateInboxOptions) (MigrateInboxProgress, error) {
	var p MigrateInboxProgress
	start, err := decodeMigrationCursor(o.From)
	if err != nil {
		return p, err
	}
	if o.PageSize <= 0 {
		o.PageSize = 100
	}
	pacer := newPacer(o.WritesPerSecond)
	for pages := 0; o.MaxPages == 0 || pages < o.MaxPages; pages++ {
		out, err := s.db.Scan(ctx, &dynamodb.ScanInput{
			TableName:         aws.String(s.table),
			ExclusiveStartKey: start,
			Limit:             aws.Int32(int32(o.PageSize)),
		})
		if err != nil {
			return p, fmt.Errorf("migrate inbox index: scan: %w", err)
		}
		for _, av := range out.Items {
			p.Scanned++
			changed, err := s.migrateInboxItem(ctx, av, o.DryRun, pacer)
			if err != nil {
				return p, err
			}
			if changed {
				p.Updated++
			} else if _, ok := wantInboxKeys(av); ok {
				p.Current++
			}
		}
		start = out.LastEvaluatedKey
		p.Cursor, p.Done = encodeMigrationCursor(start), len(start) == 0
		if o.Progress != nil {
			o.Progress(p)
		}
		if p.Done {
			break
		}
	}
	return p, nil
}

// wantInboxKeys returns the inbox-index keys an item should carry ("", ""
// for none) and whether it is an item the inbox lists at all.
func wantInboxKeys(av map[string]types.AttributeValue) ([2]string, bool) {
	get := func(name string) string {
		v, _ := av[name].(*types.AttributeValueMemberS)
		if v == nil {
			return ""
		}
		return v.Value
	}
	pk, sk := get("pk"), get("sk")
	sortKey := get("gsi1sk")
	switch {
	case sk == notificationSK && len(pk) > len(notificationPrefix) && pk[:len(notificationPrefix)] == notificationPrefix:
		if get("status") == string(domain.NotificationCancelled) || get("userId") == "" {
			return [2]string{}, true
		}
		if sortKey == "" {
			sortKey = get("createdAt") + "#" + get("id")
		}
		user := get("userId")
		switch {
		case get("archivedAt") != "":
			return [2]string{archivedPrefix + user, sortKey}, true
		case get("readAt") != "":
			return [2]string{readPrefix + user, sortKey}, true
		}
		return [2]string{unreadPrefix + user, sortKey}, true
	case sk == announcementSK && len(pk) > len(announcementPrefix) && pk[:len(announcementPrefix)] == announcementPrefix:
		if sortKey == "" {
			sortKey = get("publishedAt") + "#" + get("id")
		}
		return [2]string{announcementsPartition, sortKey}, true
	}
	return [2]string{}, false
}

// migrateInboxItem updates one item when its inbox-index keys are not the
// ones its state wants; it reports whether it wrote. A concurrent change of
// the item (a read, an archive, a cancel) fails the condition: the item is
// read again and reconsidered.
func (s *Inbox) migrateInboxItem(ctx context.Context, av map[string]types.AttributeValue, dryRun bool, pacer *pacer) (bool, error) {
	for attempt := 0; ; attempt++ {
		want, ok := wantInboxKeys(av)
		if !ok {
			return false, nil
		}
		pkv, _ := av["gsi2pk"].(*types.AttributeValueMemberS)
		skv, _ := av["gsi2sk"].(*types.AttributeValueMemberS)
		var hasPK, hasSK string
		if pkv != nil {
			hasPK = pkv.Value
		}
		if skv != nil {
			hasSK = skv.Value
		}
		if hasPK == want[0] && hasSK == want[1] {
			return false, nil
		}
		if dryRun {
			return true, nil
		}
		if attempt == 3 {
			return false, fmt.Errorf("migrate inbox index: item %v keeps changing", av["pk"])
		}
		// The condition: the attributes the keys were computed from are
		// as read.
		names := map[string]string{}
		values := map[string]types.AttributeValue{}
		cond := "attribute_exists(pk)"
		for i, a := range []string{"gsi2pk", "gsi2sk", "readAt", "archivedAt", "status"} {
			n := fmt.Sprintf("#c%d", i)
			names[n] = a
			if v, ok := av[a]; ok {
				values[fmt.Sprintf(":c%d", i)] = v
				cond += fmt.Sprintf(" AND %s = :c%d", n, i)
			} else {
				cond += fmt.Sprintf(" AND attribute_not_exists(%s)", n)
			}
		}
		update := "REMOVE #c0, #c1" // gsi2pk, gsi2sk
		if want[0] != "" {
			update = "SET #c0 = :pk, #c1 = :sk"
			values[":pk"], values[":sk"] = str(want[0]), str(want[1])
		}
		if err := pacer.wait(ctx); err != nil {
			return false, err
		}
		in := &dynamodb.UpdateItemInput{
			TableName:                           aws.String(s.table),
			Key:                                 map[string]types.AttributeValue{"pk": av["pk"], "sk": av["sk"]},
			UpdateExpression:                    aws.String(update),
			ConditionExpression:                 aws.String(cond),
			ExpressionAttributeNames:            names,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}
		if len(values) > 0 {
			in.ExpressionAttributeValues = values
		}
		_, err := s.db.UpdateItem(ctx, in)
		var failed *types.ConditionalCheckFailedException
		if errors.As(err, &failed) {
			if len(failed.Item) == 0 {
				return false, nil // deleted meanwhile (TTL)
			}
			av = failed.Item
			continue
		}
		if err != nil {
			return false, fmt.Errorf("migrate inbox index: update %v: %w", av["pk"], err)
		}
		return true, nil
	}
}

// The cursor is the Scan's LastEvaluatedKey (the table's pk and sk), as
// base64url JSON.
func encodeMigrationCursor(k map[string]types.AttributeValue) string {
	if len(k) == 0 {
		return ""
	}
	m := map[string]string{}
	for name, v := range k {
		if s, ok := v.(*types.AttributeValueMemberS); ok {
			m[name] = s.Value
		}
	}
	raw, _ := json.Marshal(m)
	return base64.RawURLEncoding.EncodeToString(raw)
}

func decodeMigrationCursor(c string) (map[string]types.AttributeValue, error) {
	if c == "" {
		return nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return nil, ErrInvalidMigrationCursor
	}
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil || len(m) != 2 || m["pk"] == "" || m["sk"] == "" {
		return nil, ErrInvalidMigrationCursor
	}
	return key(m["pk"], m["sk"]), nil
}

// pacer spaces writes to a rate.
type pacer struct {
	every time.Duration
	next  time.Time
}

func newPacer(perSecond float64) *pacer {
	if perSecond <= 0 {
		return &pacer{}
	}
	return &pacer{every: time.Duration(float64(time.Second) / perSecond)}
}

func (p *pacer) wait(ctx context.Context) error {
	if p.every == 0 {
		return nil
	}
	now := time.Now()
	if p.next.After(now) {
		if err := sleepCtx(ctx, p.next.Sub(now)); err != nil {
			return err
		}
		now = p.next
	}
	p.next = now.Add(p.every)
	return nil
}
