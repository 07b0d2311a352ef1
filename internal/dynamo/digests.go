package dynamo

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
)

// Digests live in one partition per (user, channel, batch key),
// pk DG#<user>#<channel>#<batchKey>:
//   - sk HEAD: the open digest: digestId (the leader's notification id) and
//     windowEnd. It only changes when a window opens, conditionally on the
//     previous one having ended, so concurrent relays agree on one leader.
//   - sk D#<digestId>: that digest's members, a string set of
//     "<createdAt>#<notificationId>" (ADD is idempotent), and sealedAt, set by
//     the worker when it renders the digest; a sealed digest takes no members.
//
// User ids cannot contain '#' and the batch key comes last, so the key is
// unambiguous.
const (
	digestPrefix       = "DG#"
	digestHeadSK       = "HEAD"
	digestRecordPrefix = "D#"
	digestMembers      = "members"
	// digestKeep is how long digest items outlive their window (TTL).
	digestKeep = 7 * 24 * time.Hour
)

// MaxDigestMembers bounds one digest (the members set stays far below
// DynamoDB's 400 KB item limit); later notifications go on their own, where
// rate limits apply.
const MaxDigestMembers = 1000

// DigestPK is the partition of one digest stream.
func DigestPK(k domain.DigestKey) string {
	return digestPrefix + k.UserID + "#" + string(k.Channel) + "#" + k.BatchKey
}

func digestEntry(createdAt time.Time, id string) string { return formatTime(createdAt) + "#" + id }

// JoinDigest opens a digest for req.Key or joins the open one, in one or two
// conditional UpdateItems:
//  1. open: set HEAD to this notification if there is none or its window
//     ended at or before req.CreatedAt → leader;
//  2. otherwise (the failed write returns HEAD) join its leader's digest: add
//     the entry unless the digest is sealed or full → joined; if sealed or
//     full, DigestAlone (unless the entry is already there, from an earlier
//     attempt of the same record → joined).
//
// Windows compare against the notification's acceptance time, not the clock,
// so a retried record reaches the same answer: a leader finds HEAD naming
// itself, a member finds its entry.
func (s *Digests) JoinDigest(ctx context.Context, req domain.DigestRequest) (domain.DigestOutcome, error) {
	pk := DigestPK(req.Key)
	created := formatTime(req.CreatedAt)
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.table),
		Key:                      key(pk, digestHeadSK),
		UpdateExpression:         aws.String("SET digestId = :me, windowEnd = :end, openedAt = :created, #ttl = :ttl"),
		ConditionExpression:      aws.String("attribute_not_exists(digestId) OR windowEnd <= :created"),
		ExpressionAttributeNames: map[string]string{"#ttl": "ttl"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":me": str(req.NotificationID), ":end": str(formatTime(req.WindowEnd)), ":created": str(created),
			// Planned after the window ended (a relay backlog): kept from now.
			":ttl": num(domain.Latest(req.WindowEnd, s.now()).Add(digestKeep).Unix()),
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return domain.DigestOutcome{Role: domain.DigestLeader, DigestID: req.NotificationID, WindowEnd: req.WindowEnd}, nil
	}
	head, err := s.conditionItem(ctx, err, key(pk, digestHeadSK))
	if err != nil {
		return domain.DigestOutcome{}, fmt.Errorf("open digest for %s: %w", req.NotificationID, err)
	}
	leader := stringAttr(head, "digestId")
	end := parseTime(stringAttr(head, "windowEnd"))
	if leader == req.NotificationID {
		return domain.DigestOutcome{Role: domain.DigestLeader, DigestID: leader, WindowEnd: end}, nil
	}
	entry := digestEntry(req.CreatedAt, req.NotificationID)
	recordKey := key(pk, digestRecordPrefix+leader)
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.table),
		Key:                      recordKey,
		UpdateExpression:         aws.String("ADD #members :entry SET #ttl = if_not_exists(#ttl, :ttl)"),
		ConditionExpression:      aws.String("attribute_not_exists(sealedAt) AND (attribute_not_exists(#members) OR size(#members) < :max)"),
		ExpressionAttributeNames: map[string]string{"#members": digestMembers, "#ttl": "ttl"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":entry": &types.AttributeValueMemberSS{Value: []string{entry}},
			":max":   num(MaxDigestMembers),
			":ttl":   num(domain.Latest(end, s.now()).Add(digestKeep).Unix()),
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	joined := domain.DigestOutcome{Role: domain.DigestJoined, DigestID: leader, WindowEnd: end}
	if err == nil {
		return joined, nil
	}
	record, err := s.conditionItem(ctx, err, recordKey)
	if err != nil {
		return domain.DigestOutcome{}, fmt.Errorf("join digest %s with %s: %w", leader, req.NotificationID, err)
	}
	if members, ok := record[digestMembers].(*types.AttributeValueMemberSS); ok && slices.Contains(members.Value, entry) {
		return joined, nil
	}
	return domain.DigestOutcome{Role: domain.DigestAlone}, nil
}

// SealDigest closes a digest to new members and returns them, newest first
// (the leader is not among them). It is one UpdateItem and idempotent: a
// retried render gets the same members. A digest nobody joined has no record
// yet; sealing creates it, which also turns away a late joiner.
func (s *Digests) SealDigest(ctx context.Context, k domain.DigestKey, digestID string) ([]domain.DigestMember, error) {
	now := s.now()
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.table),
		Key:                      key(DigestPK(k), digestRecordPrefix+digestID),
		UpdateExpression:         aws.String("SET sealedAt = if_not_exists(sealedAt, :now), #ttl = if_not_exists(#ttl, :ttl)"),
		ExpressionAttributeNames: map[string]string{"#ttl": "ttl"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now": str(formatTime(now)), ":ttl": num(now.Add(digestKeep).Unix()),
		},
		ReturnValues: types.ReturnValueAllNew,
	})
	if err != nil {
		return nil, fmt.Errorf("seal digest %s: %w", digestID, err)
	}
	set, _ := out.Attributes[digestMembers].(*types.AttributeValueMemberSS)
	if set == nil {
		return nil, nil
	}
	members := make([]domain.DigestMember, 0, len(set.Value))
	for _, e := range set.Value {
		at, id, ok := strings.Cut(e, "#")
		if !ok || id == "" {
			return nil, fmt.Errorf("digest %s: malformed member %q", digestID, e)
		}
		members = append(members, domain.DigestMember{NotificationID: id, CreatedAt: parseTime(at)})
	}
	domain.SortNewestFirst(members)
	return members, nil
}

// GetNotifications reads notifications by id with BatchGetItem (100 keys per
// call, unprocessed keys retried); ids that no longer exist are left out.
func (s *Digests) GetNotifications(ctx context.Context, ids []string) ([]domain.Notification, error) {
	keys := make([]map[string]types.AttributeValue, len(ids))
	for i, id := range ids {
		keys[i] = key(NotificationPK(id), notificationSK)
	}
	items, err := s.batchGet(ctx, "batch get notifications", keys, consistentRead)
	if err != nil {
		return nil, err
	}
	out := make([]domain.Notification, 0, len(items))
	for _, av := range items {
		n, err := decodeNotification(av)
		if err != nil {
			return nil, err
		}
		out = append(out, *n)
	}
	return out, nil
}

// conditionItem returns the item a failed conditional write reported, reading
// it when the store did not return it. Any other error is returned as is.
func (s *Table) conditionItem(ctx context.Context, err error, k map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	ccf, ok := asConditionFailed(err)
	if !ok {
		return nil, err
	}
	if len(ccf.Item) > 0 {
		return ccf.Item, nil
	}
	out, gerr := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: k, ConsistentRead: aws.Bool(true)})
	if gerr != nil {
		return nil, gerr
	}
	return out.Item, nil
}

func stringAttr(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}
