package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
)

// Campaign items share the partition C#<id>: the campaign (META, its status
// and counts), its recipient chunks (R#<chunk>, one per lot, ≤ 1,000 ids) and
// its lot results (L#<chunk>). Counts on META only ever move by the deltas a
// lot's versioned result write carries in the same transaction, so they
// converge to the sum of the lots and a retry never counts twice.
const (
	campaignPrefix   = "C#"
	campaignSK       = "META"
	chunkPrefix      = "R#"
	lotPrefix        = "L#"
	campaignItemKind = "campaign"
)

// CampaignPK is the partition key of a campaign, its chunks and its lots.
func CampaignPK(id string) string { return campaignPrefix + id }

type campaignItem struct {
	PK          string         `dynamodbav:"pk"`
	SK          string         `dynamodbav:"sk"`
	Kind        string         `dynamodbav:"kind"`
	ID          string         `dynamodbav:"id"`
	Caller      string         `dynamodbav:"caller"`
	Type        string         `dynamodbav:"type"`
	Data        map[string]any `dynamodbav:"data,omitempty"`
	Priority    string         `dynamodbav:"priority"`
	Channels    []string       `dynamodbav:"channels,omitempty"`
	SendAt      string         `dynamodbav:"sendAt,omitempty"`
	ExpiresAt   string         `dynamodbav:"expiresAt,omitempty"`
	Segment     string         `dynamodbav:"segment,omitempty"`
	Status      string         `dynamodbav:"status"`
	RequestHash string         `dynamodbav:"requestHash,omitempty"`
	DedupeKey   string         `dynamodbav:"dedupeKey,omitempty"`
	CreatedAt   string         `dynamodbav:"createdAt"`
	StartedAt   string         `dynamodbav:"startedAt,omitempty"`
	FinishedAt  string         `dynamodbav:"finishedAt,omitempty"`
	CancelledAt string         `dynamodbav:"cancelledAt,omitempty"`
	Chunks      int            `dynamodbav:"chunks"`
	Recipients  int            `dynamodbav:"recipients"`
	Notified    int            `dynamodbav:"notified"`
	Sent        int            `dynamodbav:"sent"`
	Skipped     int            `dynamodbav:"skipped"`
	Failed      int            `dynamodbav:"failed"`
	Dropped     int            `dynamodbav:"dropped"`
	LotsSettled int            `dynamodbav:"lotsSettled"`
	TTL         int64          `dynamodbav:"ttl,omitempty"`
}

type chunkItem struct {
	PK      string   `dynamodbav:"pk"`
	SK      string   `dynamodbav:"sk"`
	Kind    string   `dynamodbav:"kind"`
	UserIDs []string `dynamodbav:"userIds"`
	Count   int      `dynamodbav:"n"`
	Hash    string   `dynamodbav:"hash"`
	TTL     int64    `dynamodbav:"ttl,omitempty"`
}

type lotItem struct {
	PK       string   `dynamodbav:"pk"`
	SK       string   `dynamodbav:"sk"`
	Kind     string   `dynamodbav:"kind"`
	Total    int      `dynamodbav:"total"`
	Pending  []string `dynamodbav:"pending"`
	Notified int      `dynamodbav:"notified"`
	Sent     int      `dynamodbav:"sent"`
	Skipped  int      `dynamodbav:"skipped"`
	Failed   int      `dynamodbav:"failed"`
	Dropped  int      `dynamodbav:"dropped"`
	Version  int      `dynamodbav:"version"`
	TTL      int64    `dynamodbav:"ttl,omitempty"`
}

func (s *Store) toCampaignItem(c *domain.Campaign) campaignItem {
	it := campaignItem{
		PK: CampaignPK(c.ID), SK: campaignSK, Kind: campaignItemKind, ID: c.ID, Caller: c.Caller, Type: c.Type,
		Data: c.Data, Priority: string(c.Priority), SendAt: formatTime(c.SendAt), ExpiresAt: formatTime(c.ExpiresAt),
		Segment: c.Segment, Status: string(c.Status), RequestHash: c.RequestHash, DedupeKey: c.DedupeKey,
		CreatedAt: formatTime(c.CreatedAt), StartedAt: formatTime(c.StartedAt), FinishedAt: formatTime(c.FinishedAt),
		CancelledAt: formatTime(c.CancelledAt), Chunks: c.Chunks, Recipients: c.Recipients,
		Notified: c.Counts.Notified, Sent: c.Counts.Sent, Skipped: c.Counts.Skipped, Failed: c.Counts.Failed,
		Dropped: c.Counts.Dropped, LotsSettled: c.LotsSettled, TTL: c.CreatedAt.Add(s.retention).Unix(),
	}
	for _, ch := range c.Channels {
		it.Channels = append(it.Channels, string(ch))
	}
	return it
}

func decodeCampaign(av map[string]types.AttributeValue) (*domain.Campaign, error) {
	var it campaignItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return nil, fmt.Errorf("unmarshal campaign: %w", err)
	}
	if it.SK != campaignSK || !strings.HasPrefix(it.PK, campaignPrefix) {
		return nil, fmt.Errorf("item %s/%s is not a campaign", it.PK, it.SK)
	}
	c := &domain.Campaign{
		ID: it.ID, Caller: it.Caller, Type: it.Type, Data: it.Data, Priority: domain.Priority(it.Priority),
		SendAt: parseTime(it.SendAt), ExpiresAt: parseTime(it.ExpiresAt), Segment: it.Segment,
		Status: domain.CampaignStatus(it.Status), RequestHash: it.RequestHash, DedupeKey: it.DedupeKey,
		CreatedAt: parseTime(it.CreatedAt), StartedAt: parseTime(it.StartedAt), FinishedAt: parseTime(it.FinishedAt),
		CancelledAt: parseTime(it.CancelledAt), Chunks: it.Chunks, Recipients: it.Recipients,
		Counts:      domain.CampaignCounts{Notified: it.Notified, Sent: it.Sent, Skipped: it.Skipped, Failed: it.Failed, Dropped: it.Dropped},
		LotsSettled: it.LotsSettled,
	}
	for _, ch := range it.Channels {
		c.Channels = append(c.Channels, domain.Channel(ch))
	}
	return c, nil
}

func (s *Store) chunkPut(c *domain.Campaign, chunk string, ids []string, hash string) (*types.Put, error) {
	item, err := attributevalue.MarshalMap(chunkItem{
		PK: CampaignPK(c.ID), SK: chunkPrefix + chunk, Kind: "campaignChunk", UserIDs: ids, Count: len(ids), Hash: hash,
		TTL: c.CreatedAt.Add(s.retention).Unix(),
	})
	if err != nil {
		return nil, fmt.Errorf("marshal chunk: %w", err)
	}
	return &types.Put{TableName: aws.String(s.table), Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")}, nil
}

// CreateCampaign stores a draft campaign and, when inline is not empty, its
// inline audience as the chunk domain.InlineChunk, in one transaction
// conditioned on the campaign not existing. When it exists (an idempotent
// replay, a concurrent duplicate), nothing is written and the stored campaign
// is returned with domain.ErrConflict.
func (s *Store) CreateCampaign(ctx context.Context, c *domain.Campaign, inline []string, inlineHash string) (*domain.Campaign, error) {
	if len(inline) > 0 {
		c.Chunks, c.Recipients = 1, len(inline)
	}
	item, err := attributevalue.MarshalMap(s.toCampaignItem(c))
	if err != nil {
		return nil, fmt.Errorf("marshal campaign: %w", err)
	}
	put := &types.Put{TableName: aws.String(s.table), Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")}
	if len(inline) == 0 {
		_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: put.TableName, Item: put.Item, ConditionExpression: put.ConditionExpression})
		if isConditionFailed(err) {
			err = domain.ErrConflict
		}
	} else {
		var chunk *types.Put
		if chunk, err = s.chunkPut(c, domain.InlineChunk, inline, inlineHash); err != nil {
			return nil, err
		}
		_, err = s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{{Put: put}, {Put: chunk}}})
		if isTransactionConflict(err) {
			err = domain.ErrConflict
		}
	}
	switch {
	case errors.Is(err, domain.ErrConflict):
		existing, gerr := s.GetCampaign(ctx, c.ID)
		if gerr != nil {
			return nil, fmt.Errorf("read existing campaign %s: %w", c.ID, gerr)
		}
		return existing, fmt.Errorf("create campaign %s: %w", c.ID, domain.ErrConflict)
	case err != nil:
		return nil, fmt.Errorf("create campaign %s: %w", c.ID, err)
	}
	return c, nil
}

// isTransactionConflict reports a transaction cancelled because a condition
// failed (or a concurrent transaction touched the same item).
func isTransactionConflict(err error) bool {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return false
	}
	for _, r := range tce.CancellationReasons {
		if c := aws.ToString(r.Code); c == "ConditionalCheckFailed" || c == "TransactionConflict" {
			return true
		}
	}
	return len(tce.CancellationReasons) == 0
}

// GetCampaign reads a campaign (strongly consistent); domain.ErrNotFound if
// there is none.
func (s *Store) GetCampaign(ctx context.Context, id string) (*domain.Campaign, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: key(CampaignPK(id), campaignSK), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("get campaign %s: %w", id, err)
	}
	if len(out.Item) == 0 {
		return nil, fmt.Errorf("campaign %s: %w", id, domain.ErrNotFound)
	}
	return decodeCampaign(out.Item)
}

// ownCampaign reads caller's campaign; another caller's is domain.ErrNotFound.
func (s *Store) ownCampaign(ctx context.Context, id, caller string) (*domain.Campaign, error) {
	c, err := s.GetCampaign(ctx, id)
	if err != nil {
		return nil, err
	}
	if c.Caller != caller {
		return nil, fmt.Errorf("campaign %s: %w", id, domain.ErrNotFound)
	}
	return c, nil
}

// AddChunk stores one recipients chunk of caller's draft campaign and adds
// its recipients to the campaign, in one transaction. The same chunk with
// the same ids (hash) again writes nothing and reports created false; with
// other ids it is domain.ErrChunkConflict. A campaign that is not a draft is
// domain.ErrCampaignNotDraft, another caller's or none domain.ErrNotFound.
func (s *Store) AddChunk(ctx context.Context, id, caller, chunk string, ids []string, hash string) (created bool, err error) {
	c := &domain.Campaign{ID: id, CreatedAt: s.now()}
	put, err := s.chunkPut(c, chunk, ids, hash)
	if err != nil {
		return false, err
	}
	_, err = s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: put},
		{Update: &types.Update{
			TableName: aws.String(s.table), Key: key(CampaignPK(id), campaignSK),
			UpdateExpression:          aws.String("ADD chunks :one, recipients :n"),
			ConditionExpression:       aws.String("caller = :caller AND #status = :draft"),
			ExpressionAttributeNames:  map[string]string{"#status": "status"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1), ":n": num(int64(len(ids))), ":caller": str(caller), ":draft": str(string(domain.CampaignDraft))},
		}},
	}})
	if err == nil {
		return true, nil
	}
	if !isTransactionConflict(err) {
		return false, fmt.Errorf("add chunk %s to campaign %s: %w", chunk, id, err)
	}
	// Which condition failed: read both.
	camp, err := s.ownCampaign(ctx, id, caller)
	if err != nil {
		return false, err
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: key(CampaignPK(id), chunkPrefix+chunk),
		ConsistentRead: aws.Bool(true), ProjectionExpression: aws.String("#hash"), ExpressionAttributeNames: map[string]string{"#hash": "hash"}})
	if err != nil {
		return false, fmt.Errorf("read chunk %s of campaign %s: %w", chunk, id, err)
	}
	switch {
	case len(out.Item) > 0 && stringAttr(out.Item, "hash") == hash:
		return false, nil
	case len(out.Item) > 0:
		return false, fmt.Errorf("campaign %s chunk %s: %w", id, chunk, domain.ErrChunkConflict)
	case camp.Status != domain.CampaignDraft:
		return false, fmt.Errorf("campaign %s: %w", id, domain.ErrCampaignNotDraft)
	}
	return false, fmt.Errorf("add chunk %s to campaign %s: %w", chunk, id, domain.ErrConflict) // a concurrent writer: retry
}

// StartCampaign moves caller's draft campaign to running and returns it;
// not a draft is domain.ErrCampaignNotDraft.
func (s *Store) StartCampaign(ctx context.Context, id, caller string) (*domain.Campaign, error) {
	return s.updateCampaign(ctx, id, caller, domain.CampaignDraft, "SET #status = :to, startedAt = :now",
		map[string]types.AttributeValue{":to": str(string(domain.CampaignRunning))}, domain.ErrCampaignNotDraft)
}

// RevertStart puts a campaign started at startedAt back to draft: its
// planning message could not be sent, so nothing has run yet.
func (s *Store) RevertStart(ctx context.Context, id string, startedAt time.Time) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: key(CampaignPK(id), campaignSK),
		UpdateExpression:          aws.String("SET #status = :draft REMOVE startedAt"),
		ConditionExpression:       aws.String("#status = :running AND startedAt = :startedAt"),
		ExpressionAttributeNames:  map[string]string{"#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":draft": str(string(domain.CampaignDraft)), ":running": str(string(domain.CampaignRunning)), ":startedAt": str(formatTime(startedAt))},
	})
	if err != nil {
		return fmt.Errorf("revert start of campaign %s: %w", id, err)
	}
	return nil
}

// CancelCampaign cancels caller's draft or running campaign and returns it.
// A draft has nothing in flight: its recipients are all dropped at once and
// it is finished. A running campaign's lots stop creating notifications, the
// worker drops what was created and not yet sent, and the lots' reconciles
// finish it. Cancelling again returns the cancelled campaign; a done one is
// domain.ErrCampaignFinished.
func (s *Store) CancelCampaign(ctx context.Context, id, caller string) (*domain.Campaign, error) {
	to := map[string]types.AttributeValue{":to": str(string(domain.CampaignCancelled))}
	c, err := s.updateCampaign(ctx, id, caller, domain.CampaignDraft,
		"SET #status = :to, cancelledAt = :now, finishedAt = :now, dropped = recipients", to, domain.ErrCampaignNotDraft)
	if !errors.Is(err, domain.ErrCampaignNotDraft) {
		return c, err
	}
	c, err = s.updateCampaign(ctx, id, caller, domain.CampaignRunning, "SET #status = :to, cancelledAt = :now", to, domain.ErrCampaignFinished)
	if errors.Is(err, domain.ErrCampaignFinished) {
		current, gerr := s.ownCampaign(ctx, id, caller)
		if gerr == nil && current.Status == domain.CampaignCancelled {
			return current, nil
		}
	}
	return c, err
}

// updateCampaign applies update to caller's campaign if its status is from;
// another status is notFrom, another caller's campaign or none
// domain.ErrNotFound. :now is the store's clock.
func (s *Store) updateCampaign(ctx context.Context, id, caller string, from domain.CampaignStatus, update string, values map[string]types.AttributeValue, notFrom error) (*domain.Campaign, error) {
	values[":now"] = str(formatTime(s.now()))
	values[":caller"] = str(caller)
	values[":from"] = str(string(from))
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: key(CampaignPK(id), campaignSK),
		UpdateExpression:                    aws.String(update),
		ConditionExpression:                 aws.String("caller = :caller AND #status = :from"),
		ExpressionAttributeNames:            map[string]string{"#status": "status"},
		ExpressionAttributeValues:           values,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return decodeCampaign(out.Attributes)
	}
	item, err := s.conditionItem(ctx, err, key(CampaignPK(id), campaignSK))
	if err != nil {
		return nil, fmt.Errorf("update campaign %s: %w", id, err)
	}
	if len(item) == 0 || stringAttr(item, "caller") != caller {
		return nil, fmt.Errorf("campaign %s: %w", id, domain.ErrNotFound)
	}
	return nil, fmt.Errorf("campaign %s is %s: %w", id, stringAttr(item, "status"), notFrom)
}

// ListChunks returns up to limit chunk keys of a campaign after the key
// after ("" from the first), in order, and whether more may follow.
func (s *Store) ListChunks(ctx context.Context, id, after string, limit int) ([]string, bool, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("pk = :pk AND begins_with(sk, :r)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(CampaignPK(id)), ":r": str(chunkPrefix)},
		ProjectionExpression:      aws.String("sk"),
		Limit:                     aws.Int32(int32(limit)),
	}
	if after != "" {
		in.ExclusiveStartKey = key(CampaignPK(id), chunkPrefix+after)
	}
	out, err := s.db.Query(ctx, in)
	if err != nil {
		return nil, false, fmt.Errorf("list chunks of campaign %s: %w", id, err)
	}
	keys := make([]string, 0, len(out.Items))
	for _, av := range out.Items {
		keys = append(keys, strings.TrimPrefix(stringAttr(av, "sk"), chunkPrefix))
	}
	return keys, len(out.LastEvaluatedKey) > 0, nil
}

// GetChunk reads the user ids of one chunk; domain.ErrNotFound if absent.
func (s *Store) GetChunk(ctx context.Context, id, chunk string) ([]string, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: key(CampaignPK(id), chunkPrefix+chunk), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("get chunk %s of campaign %s: %w", chunk, id, err)
	}
	if len(out.Item) == 0 {
		return nil, fmt.Errorf("chunk %s of campaign %s: %w", chunk, id, domain.ErrNotFound)
	}
	var it chunkItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return nil, fmt.Errorf("unmarshal chunk: %w", err)
	}
	return it.UserIDs, nil
}

// GetLot reads a lot's result; domain.ErrNotFound before its first record.
func (s *Store) GetLot(ctx context.Context, id, chunk string) (*domain.CampaignLot, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: key(CampaignPK(id), lotPrefix+chunk), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("get lot %s of campaign %s: %w", chunk, id, err)
	}
	if len(out.Item) == 0 {
		return nil, fmt.Errorf("lot %s of campaign %s: %w", chunk, id, domain.ErrNotFound)
	}
	var it lotItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return nil, fmt.Errorf("unmarshal lot: %w", err)
	}
	return &domain.CampaignLot{
		Chunk: chunk, Total: it.Total, Pending: it.Pending, Version: it.Version,
		Counts: domain.CampaignCounts{Notified: it.Notified, Sent: it.Sent, Skipped: it.Skipped, Failed: it.Failed, Dropped: it.Dropped},
	}, nil
}

// ExistingProfiles reports which of the users have a profile (keys only,
// 100 per BatchGetItem).
func (s *Store) ExistingProfiles(ctx context.Context, users []string) (map[string]bool, error) {
	keys := make([]map[string]types.AttributeValue, len(users))
	for i, u := range users {
		keys[i] = key(UserPK(u), profileSK)
	}
	items, err := s.batchGet(ctx, "read recipient profiles", keys, types.KeysAndAttributes{ProjectionExpression: aws.String("pk")})
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(items))
	for _, av := range items {
		out[strings.TrimPrefix(stringAttr(av, "pk"), userPrefix)] = true
	}
	return out, nil
}

// RecordLot writes a lot's first result and adds its counts to the
// campaign, in one transaction conditioned on the lot having no result yet;
// one that has is domain.ErrConflict (a duplicate lot message).
func (s *Store) RecordLot(ctx context.Context, id string, lot *domain.CampaignLot) error {
	it := lotItem{
		PK: CampaignPK(id), SK: lotPrefix + lot.Chunk, Kind: "campaignLot", Total: lot.Total, Pending: lot.Pending,
		Notified: lot.Counts.Notified, Sent: lot.Counts.Sent, Skipped: lot.Counts.Skipped, Failed: lot.Counts.Failed, Dropped: lot.Counts.Dropped,
		Version: 1, TTL: s.now().Add(s.retention).Unix(),
	}
	if it.Pending == nil {
		it.Pending = []string{}
	}
	item, err := attributevalue.MarshalMap(it)
	if err != nil {
		return fmt.Errorf("marshal lot: %w", err)
	}
	_, err = s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(s.table), Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
		{Update: s.countsUpdate(id, lot.Counts, lot.Settled())},
	}})
	if isTransactionConflict(err) {
		return fmt.Errorf("lot %s of campaign %s: %w", lot.Chunk, id, domain.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("record lot %s of campaign %s: %w", lot.Chunk, id, err)
	}
	lot.Version = 1
	return nil
}

// ReconcileLot replaces a lot's result prev by next and adds the difference
// to the campaign, in one transaction conditioned on the lot still being at
// prev's version: a concurrent or repeated reconcile is domain.ErrConflict
// and counts nothing.
func (s *Store) ReconcileLot(ctx context.Context, id string, prev, next *domain.CampaignLot) error {
	pending := next.Pending
	if pending == nil {
		pending = []string{}
	}
	pendingAV, err := attributevalue.Marshal(pending)
	if err != nil {
		return fmt.Errorf("marshal pending: %w", err)
	}
	c := next.Counts
	_, err = s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{
			TableName: aws.String(s.table), Key: key(CampaignPK(id), lotPrefix+next.Chunk),
			UpdateExpression:    aws.String("SET pending = :pending, notified = :notified, sent = :sent, skipped = :skipped, failed = :failed, dropped = :dropped, version = :next"),
			ConditionExpression: aws.String("version = :version"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pending": pendingAV, ":notified": num(int64(c.Notified)), ":sent": num(int64(c.Sent)), ":skipped": num(int64(c.Skipped)),
				":failed": num(int64(c.Failed)), ":dropped": num(int64(c.Dropped)), ":next": num(int64(prev.Version + 1)), ":version": num(int64(prev.Version)),
			},
		}},
		{Update: s.countsUpdate(id, next.Counts.Sub(prev.Counts), next.Settled() && !prev.Settled())},
	}})
	if isTransactionConflict(err) {
		return fmt.Errorf("lot %s of campaign %s: %w", next.Chunk, id, domain.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("reconcile lot %s of campaign %s: %w", next.Chunk, id, err)
	}
	next.Version = prev.Version + 1
	return nil
}

// countsUpdate adds delta (and one settled lot) to a campaign's counts.
func (s *Store) countsUpdate(id string, delta domain.CampaignCounts, settled bool) *types.Update {
	lots := int64(0)
	if settled {
		lots = 1
	}
	return &types.Update{
		TableName: aws.String(s.table), Key: key(CampaignPK(id), campaignSK),
		UpdateExpression:    aws.String("ADD notified :notified, sent :sent, skipped :skipped, failed :failed, dropped :dropped, lotsSettled :lots"),
		ConditionExpression: aws.String("attribute_exists(pk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":notified": num(int64(delta.Notified)), ":sent": num(int64(delta.Sent)), ":skipped": num(int64(delta.Skipped)),
			":failed": num(int64(delta.Failed)), ":dropped": num(int64(delta.Dropped)), ":lots": num(lots),
		},
	}
}

// FinishCampaign records that every lot of a campaign is settled: running
// becomes done, a cancelled one keeps its status; both get finishedAt. It
// reports whether this call finished it (false: not every lot is settled
// yet, or it was finished already).
func (s *Store) FinishCampaign(ctx context.Context, id string) (bool, error) {
	for _, from := range []domain.CampaignStatus{domain.CampaignRunning, domain.CampaignCancelled} {
		to := domain.CampaignDone
		if from == domain.CampaignCancelled {
			to = from
		}
		_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.table), Key: key(CampaignPK(id), campaignSK),
			UpdateExpression:         aws.String("SET #status = :to, finishedAt = :now"),
			ConditionExpression:      aws.String("#status = :from AND lotsSettled >= chunks AND attribute_not_exists(finishedAt)"),
			ExpressionAttributeNames: map[string]string{"#status": "status"},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":to": str(string(to)), ":from": str(string(from)), ":now": str(formatTime(s.now())),
			},
		})
		if err == nil {
			return true, nil
		}
		if !isConditionFailed(err) {
			return false, fmt.Errorf("finish campaign %s: %w", id, err)
		}
	}
	return false, nil
}

// applyCampaignStatus marks n cancelled when its campaign (item av, or
// none) is cancelled: a notification of a cancelled campaign must not be
// sent, and the worker's recheck drops it as it drops a cancelled one.
func applyCampaignStatus(n *domain.Notification, av map[string]types.AttributeValue) {
	if domain.CampaignStatus(stringAttr(av, "status")) == domain.CampaignCancelled && n.Status != domain.NotificationCancelled {
		n.Status, n.CancelledAt = domain.NotificationCancelled, parseTime(stringAttr(av, "cancelledAt"))
	}
}

// withCampaign applies n's campaign status, reading the campaign when the
// caller's batch read did not include it (campaign nil).
func (s *Store) withCampaign(ctx context.Context, n *domain.Notification, campaign map[string]types.AttributeValue) error {
	if n == nil || n.CampaignID == "" {
		return nil
	}
	if campaign == nil {
		out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(s.table), Key: key(CampaignPK(n.CampaignID), campaignSK), ConsistentRead: aws.Bool(true),
			ProjectionExpression: aws.String("#status, cancelledAt"), ExpressionAttributeNames: map[string]string{"#status": "status"},
		})
		if err != nil {
			return fmt.Errorf("read campaign %s: %w", n.CampaignID, err)
		}
		campaign = out.Item
	}
	applyCampaignStatus(n, campaign)
	return nil
}
