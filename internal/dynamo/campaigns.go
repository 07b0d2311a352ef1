package dynamo

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
)

// Campaign items. The campaign's partition C#<id> holds only what is small
// or written rarely: the campaign (META: status and counts, ≈ 0.5 KB so a
// count update is 1 WCU), its content (DATA: the template data, written once)
// and one marker per recipients chunk (R#<chunk>: hash and size). What is
// large or written per lot lives on its own partition, so a 20 lots/s
// fan-out puts no key near a partition's 1,000 WCU/s (docs/capacity.md):
// a chunk's ids (C#<id>#R#<chunk>/IDS, ≤ 1,000 ids), a lot's result
// (C#<id>#L#<chunk>/LOT) and the cancelled status the workers read
// (C#<id>#S<nn>/STATUS, one of CampaignStatusReplicas picked by the
// notification id). Counts on META only ever move by the deltas a lot's
// versioned result write carries in the same transaction, so they converge to
// the sum of the lots and a retry never counts twice.
const (
	campaignPrefix   = "C#"
	campaignSK       = "META"
	campaignDataSK   = "DATA"
	chunkPrefix      = "R#"
	chunkIDsSK       = "IDS"
	lotInfix         = "#L#"
	lotSK            = "LOT"
	statusSK         = "STATUS"
	campaignItemKind = "campaign"
)

// CampaignStatusReplicas is how many copies of a running campaign's
// cancellation the workers read from: every work message of a campaign reads
// one (strongly consistent, 1 RCU), so 20,000 sends/s spread to 1,250 RCU/s
// per copy, under a partition's 3,000.
const CampaignStatusReplicas = 16

// CampaignPK is the partition key of a campaign, its content and its chunk
// markers.
func CampaignPK(id string) string { return campaignPrefix + id }

// CampaignChunkPK is the partition key of one chunk's recipient ids.
func CampaignChunkPK(id, chunk string) string { return CampaignPK(id) + "#" + chunkPrefix + chunk }

// CampaignLotPK is the partition key of one lot's result.
func CampaignLotPK(id, chunk string) string { return CampaignPK(id) + lotInfix + chunk }

// CampaignStatusPK is the partition key of the status copy the work of
// notification notificationID reads.
func CampaignStatusPK(id, notificationID string) string {
	h := fnv.New32a()
	h.Write([]byte(notificationID))
	return statusReplicaPK(id, int(h.Sum32()%CampaignStatusReplicas))
}

func statusReplicaPK(id string, replica int) string {
	return fmt.Sprintf("%s#S%02d", CampaignPK(id), replica)
}

type campaignItem struct {
	PK          string    `dynamodbav:"pk"`
	SK          string    `dynamodbav:"sk"`
	Kind        string    `dynamodbav:"kind"`
	ID          string    `dynamodbav:"id"`
	Caller      string    `dynamodbav:"caller"`
	Type        string    `dynamodbav:"type"`
	Priority    string    `dynamodbav:"priority"`
	Channels    []string  `dynamodbav:"channels,omitempty"`
	SendAt      string    `dynamodbav:"sendAt,omitempty"`
	ExpiresAt   string    `dynamodbav:"expiresAt,omitempty"`
	Segment     string    `dynamodbav:"segment,omitempty"`
	Topic       string    `dynamodbav:"topic,omitempty"`
	Exclude     []string  `dynamodbav:"exclude,omitempty"`
	Status      string    `dynamodbav:"status"`
	RequestHash string    `dynamodbav:"requestHash,omitempty"`
	DedupeKey   string    `dynamodbav:"dedupeKey,omitempty"`
	CreatedAt   string    `dynamodbav:"createdAt"`
	StartedAt   string    `dynamodbav:"startedAt,omitempty"`
	FinishedAt  string    `dynamodbav:"finishedAt,omitempty"`
	CancelledAt string    `dynamodbav:"cancelledAt,omitempty"`
	Chunks      int       `dynamodbav:"chunks"`
	Recipients  int       `dynamodbav:"recipients"`
	Notified    int       `dynamodbav:"notified"`
	Sent        int       `dynamodbav:"sent"`
	Skipped     int       `dynamodbav:"skipped"`
	Failed      int       `dynamodbav:"failed"`
	Dropped     int       `dynamodbav:"dropped"`
	LotsSettled int       `dynamodbav:"lotsSettled"`
	CountedAt   string    `dynamodbav:"countedAt,omitempty"`
	Pace        *paceItem `dynamodbav:"pace,omitempty"`
	TTL         int64     `dynamodbav:"ttl,omitempty"`
}

// paceItem is a campaign's domain.CampaignPace: rates per second, the tail
// in milliseconds, each channel's rate by channel name.
type paceItem struct {
	Recipients float64            `dynamodbav:"recipients"`
	FanOut     float64            `dynamodbav:"fanOut"`
	TailMs     int64              `dynamodbav:"tailMs"`
	Channels   map[string]float64 `dynamodbav:"channels"`
	Order      []string           `dynamodbav:"order"`
}

func toPaceItem(p domain.CampaignPace) *paceItem {
	if !p.Known() && len(p.Channels) == 0 {
		return nil
	}
	it := &paceItem{Recipients: p.RecipientsPerSecond, FanOut: p.FanOutPerSecond, TailMs: p.Tail.Milliseconds(), Channels: map[string]float64{}}
	for _, ch := range p.Channels {
		it.Channels[string(ch.Channel)] = ch.SendsPerSecond
		it.Order = append(it.Order, string(ch.Channel))
	}
	return it
}

func (it *paceItem) pace() domain.CampaignPace {
	if it == nil {
		return domain.CampaignPace{}
	}
	p := domain.CampaignPace{RecipientsPerSecond: it.Recipients, FanOutPerSecond: it.FanOut, Tail: time.Duration(it.TailMs) * time.Millisecond}
	for _, ch := range it.Order {
		p.Channels = append(p.Channels, domain.ChannelPace{Channel: domain.Channel(ch), SendsPerSecond: it.Channels[ch]})
	}
	return p
}

// campaignDataItem is a campaign's content, apart from META so that the
// counter updates on META write ≈ 0.5 KB instead of up to 16 KB of data.
type campaignDataItem struct {
	PK   string         `dynamodbav:"pk"`
	SK   string         `dynamodbav:"sk"`
	Kind string         `dynamodbav:"kind"`
	Data map[string]any `dynamodbav:"data"`
	TTL  int64          `dynamodbav:"ttl,omitempty"`
}

// chunkMarker is a chunk's entry in the campaign's partition: what planning
// lists and a replay compares, without the ids.
type chunkMarker struct {
	PK    string `dynamodbav:"pk"`
	SK    string `dynamodbav:"sk"`
	Kind  string `dynamodbav:"kind"`
	Count int    `dynamodbav:"n"`
	Hash  string `dynamodbav:"hash"`
	TTL   int64  `dynamodbav:"ttl,omitempty"`
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

func (s *Table) toCampaignItem(c *domain.Campaign) campaignItem {
	it := campaignItem{
		PK: CampaignPK(c.ID), SK: campaignSK, Kind: campaignItemKind, ID: c.ID, Caller: c.Caller, Type: c.Type,
		Priority: string(c.Priority), SendAt: formatTime(c.SendAt), ExpiresAt: formatTime(c.ExpiresAt),
		Segment: c.Segment, Topic: c.Topic, Exclude: c.Exclude, Status: string(c.Status), RequestHash: c.RequestHash, DedupeKey: c.DedupeKey,
		CreatedAt: formatTime(c.CreatedAt), StartedAt: formatTime(c.StartedAt), FinishedAt: formatTime(c.FinishedAt),
		CancelledAt: formatTime(c.CancelledAt), Chunks: c.Chunks, Recipients: c.Recipients,
		Notified: c.Counts.Notified, Sent: c.Counts.Sent, Skipped: c.Counts.Skipped, Failed: c.Counts.Failed,
		Dropped: c.Counts.Dropped, LotsSettled: c.LotsSettled, CountedAt: formatTime(c.CountedAt), Pace: toPaceItem(c.Pace),
		TTL: s.expiry(c.RetainFrom()),
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
		ID: it.ID, Caller: it.Caller, Type: it.Type, Priority: domain.Priority(it.Priority),
		SendAt: parseTime(it.SendAt), ExpiresAt: parseTime(it.ExpiresAt), Segment: it.Segment, Topic: it.Topic, Exclude: it.Exclude,
		Status: domain.CampaignStatus(it.Status), RequestHash: it.RequestHash, DedupeKey: it.DedupeKey,
		CreatedAt: parseTime(it.CreatedAt), StartedAt: parseTime(it.StartedAt), FinishedAt: parseTime(it.FinishedAt),
		CancelledAt: parseTime(it.CancelledAt), Chunks: it.Chunks, Recipients: it.Recipients,
		Counts:      domain.CampaignCounts{Notified: it.Notified, Sent: it.Sent, Skipped: it.Skipped, Failed: it.Failed, Dropped: it.Dropped},
		LotsSettled: it.LotsSettled, CountedAt: parseTime(it.CountedAt), Pace: it.Pace.pace(),
	}
	for _, ch := range it.Channels {
		c.Channels = append(c.Channels, domain.Channel(ch))
	}
	return c, nil
}

// chunkPuts are the conditional puts of a chunk: its marker in the
// campaign's partition and its ids on their own.
func (s *Table) chunkPuts(c *domain.Campaign, chunk string, ids []string, hash string) ([]types.TransactWriteItem, error) {
	ttl := s.expiry(c.RetainFrom())
	marker, err := attributevalue.MarshalMap(chunkMarker{PK: CampaignPK(c.ID), SK: chunkPrefix + chunk, Kind: "campaignChunk", Count: len(ids), Hash: hash, TTL: ttl})
	if err != nil {
		return nil, fmt.Errorf("marshal chunk marker: %w", err)
	}
	item, err := attributevalue.MarshalMap(chunkItem{
		PK: CampaignChunkPK(c.ID, chunk), SK: chunkIDsSK, Kind: "campaignChunkIds", UserIDs: ids, Count: len(ids), Hash: hash, TTL: ttl,
	})
	if err != nil {
		return nil, fmt.Errorf("marshal chunk: %w", err)
	}
	cond := aws.String("attribute_not_exists(pk)")
	return []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(s.table), Item: marker, ConditionExpression: cond}},
		{Put: &types.Put{TableName: aws.String(s.table), Item: item, ConditionExpression: cond}},
	}, nil
}

func (s *Table) campaignDataPut(c *domain.Campaign) (types.TransactWriteItem, error) {
	item, err := attributevalue.MarshalMap(campaignDataItem{PK: CampaignPK(c.ID), SK: campaignDataSK, Kind: "campaignData", Data: c.Data, TTL: s.expiry(c.RetainFrom())})
	if err != nil {
		return types.TransactWriteItem{}, fmt.Errorf("marshal campaign data: %w", err)
	}
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")}}, nil
}

// CreateCampaign stores a draft campaign and, when inline is not empty, its
// inline audience as the chunk domain.InlineChunk, with its content (DATA),
// in one transaction conditioned on the campaign not existing. When it exists (an idempotent
// replay, a concurrent duplicate), nothing is written and the stored campaign
// is returned with domain.ErrConflict.
func (s *Campaigns) CreateCampaign(ctx context.Context, c *domain.Campaign, inline []string, inlineHash string) (*domain.Campaign, error) {
	if len(inline) > 0 {
		c.Chunks, c.Recipients = 1, len(inline)
	}
	item, err := attributevalue.MarshalMap(s.toCampaignItem(c))
	if err != nil {
		return nil, fmt.Errorf("marshal campaign: %w", err)
	}
	writes := []types.TransactWriteItem{{Put: &types.Put{TableName: aws.String(s.table), Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")}}}
	if len(c.Data) > 0 {
		data, err := s.campaignDataPut(c)
		if err != nil {
			return nil, err
		}
		writes = append(writes, data)
	}
	if len(inline) > 0 {
		chunk, err := s.chunkPuts(c, domain.InlineChunk, inline, inlineHash)
		if err != nil {
			return nil, err
		}
		writes = append(writes, chunk...)
	}
	err = s.transactContended(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: writes})
	if failedCondition(err) {
		err = domain.ErrConflict
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

// failedCondition reports a transaction cancelled because one of its
// conditions failed. A transaction that only lost a race (TransactionConflict)
// is not one: transactContended tries it again.
func failedCondition(err error) bool {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return false
	}
	for _, r := range tce.CancellationReasons {
		if aws.ToString(r.Code) == "ConditionalCheckFailed" {
			return true
		}
	}
	return len(tce.CancellationReasons) == 0
}

// failedConditionAt reports whether err is a transaction cancelled because
// the condition of its item at index i failed.
func failedConditionAt(err error, i int) bool {
	var tce *types.TransactionCanceledException
	return errors.As(err, &tce) && i < len(tce.CancellationReasons) &&
		aws.ToString(tce.CancellationReasons[i].Code) == "ConditionalCheckFailed"
}

// lostRace reports a transaction cancelled only because another transaction
// or write was under way on one of its items (TransactionConflict, no
// condition failed): nothing was written, and the same transaction may be
// tried again.
func lostRace(err error) bool {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return false
	}
	race := false
	for _, r := range tce.CancellationReasons {
		switch aws.ToString(r.Code) {
		case "TransactionConflict":
			race = true
		case "None", "":
		default:
			return false
		}
	}
	return race
}

// maxTransactRaces bounds the tries of a transaction that loses races.
const maxTransactRaces = 5

// transactContended runs a transaction that may meet another write on one of
// its items — a campaign's META, which every lot's result updates (16 lots
// of a topic send at once); a subscription, a device owner — trying again
// with a short, jittered backoff while it only loses races (lostRace).
// Such a loss is no failed condition: taken for one, a lot's result was
// "recorded already" and never written (docs/decisions.md, "Campaign writes
// that lose a race").
func (s *Table) transactContended(ctx context.Context, in *dynamodb.TransactWriteItemsInput) error {
	var err error
	for attempt := 1; attempt <= maxTransactRaces; attempt++ {
		if attempt > 1 {
			if err := sleepCtx(ctx, time.Duration(attempt*attempt)*5*time.Millisecond+time.Duration(rand.IntN(20))*time.Millisecond); err != nil {
				return err
			}
		}
		if _, err = s.db.TransactWriteItems(ctx, in); !lostRace(err) {
			return err
		}
	}
	return fmt.Errorf("lost %d races on a contended item: %w", maxTransactRaces, err)
}

// GetCampaign reads a campaign (strongly consistent); domain.ErrNotFound if
// there is none.
func (s *Campaigns) GetCampaign(ctx context.Context, id string) (*domain.Campaign, error) {
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

// GetCampaignData reads a campaign's template data (nil when it has none).
func (s *Campaigns) GetCampaignData(ctx context.Context, id string) (map[string]any, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: key(CampaignPK(id), campaignDataSK)})
	if err != nil {
		return nil, fmt.Errorf("get data of campaign %s: %w", id, err)
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	var it campaignDataItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return nil, fmt.Errorf("unmarshal campaign data: %w", err)
	}
	return it.Data, nil
}

// ownCampaign reads caller's campaign; another caller's is domain.ErrNotFound.
func (s *Campaigns) ownCampaign(ctx context.Context, id, caller string) (*domain.Campaign, error) {
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
func (s *Campaigns) AddChunk(ctx context.Context, id, caller, chunk string, ids []string, hash string) (created bool, err error) {
	c := &domain.Campaign{ID: id, CreatedAt: s.now()}
	puts, err := s.chunkPuts(c, chunk, ids, hash)
	if err != nil {
		return false, err
	}
	err = s.transactContended(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: append(puts,
		types.TransactWriteItem{Update: &types.Update{
			TableName: aws.String(s.table), Key: key(CampaignPK(id), campaignSK),
			UpdateExpression:          aws.String("ADD chunks :one, recipients :n"),
			ConditionExpression:       aws.String("caller = :caller AND #status = :draft AND attribute_not_exists(#segment)"),
			ExpressionAttributeNames:  map[string]string{"#status": "status", "#segment": "segment"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1), ":n": num(int64(len(ids))), ":caller": str(caller), ":draft": str(string(domain.CampaignDraft))},
		}},
	)})
	if err == nil {
		return true, nil
	}
	if !failedCondition(err) {
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
	case camp.Segment != "":
		return false, fmt.Errorf("campaign %s: %w", id, domain.ErrSegmentAudience)
	}
	return false, fmt.Errorf("add chunk %s to campaign %s: %w", chunk, id, domain.ErrConflict) // a concurrent writer: retry
}

// StartCampaign moves caller's draft campaign to running and returns it;
// not a draft is domain.ErrCampaignNotDraft.
func (s *Campaigns) StartCampaign(ctx context.Context, id, caller string) (*domain.Campaign, error) {
	return s.updateCampaign(ctx, id, caller, domain.CampaignDraft, "SET #status = :to, startedAt = :now",
		map[string]types.AttributeValue{":to": str(string(domain.CampaignRunning))}, domain.ErrCampaignNotDraft)
}

// RevertStart puts a campaign started at startedAt back to draft: its
// planning message could not be sent, so nothing has run yet.
func (s *Campaigns) RevertStart(ctx context.Context, id string, startedAt time.Time) error {
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
// worker drops what was created and not yet sent (it reads one of the status
// copies, written before the status so nothing created after the cancel is
// sent), and the lots' reconciles finish it. Cancelling again returns the
// cancelled campaign; a done one is domain.ErrCampaignFinished.
func (s *Campaigns) CancelCampaign(ctx context.Context, id, caller string) (*domain.Campaign, error) {
	current, err := s.ownCampaign(ctx, id, caller)
	if err != nil {
		return nil, err
	}
	to := map[string]types.AttributeValue{":to": str(string(domain.CampaignCancelled))}
	if current.Status == domain.CampaignDraft {
		c, err := s.updateCampaign(ctx, id, caller, domain.CampaignDraft,
			"SET #status = :to, cancelledAt = :now, finishedAt = :now, dropped = recipients", to, domain.ErrCampaignNotDraft)
		if !errors.Is(err, domain.ErrCampaignNotDraft) {
			return c, err
		}
		if current, err = s.ownCampaign(ctx, id, caller); err != nil { // started meanwhile
			return nil, err
		}
	}
	switch current.Status {
	case domain.CampaignDone:
		return nil, fmt.Errorf("campaign %s is done: %w", id, domain.ErrCampaignFinished)
	case domain.CampaignCancelled:
		// A retry after the status was written: the copies may be missing.
		return current, s.putStatusReplicas(ctx, current, current.CancelledAt)
	}
	if err := s.putStatusReplicas(ctx, current, s.now()); err != nil {
		return nil, err
	}
	c, err := s.updateCampaign(ctx, id, caller, domain.CampaignRunning, "SET #status = :to, cancelledAt = :now", to, domain.ErrCampaignFinished)
	if errors.Is(err, domain.ErrCampaignFinished) {
		// Done meanwhile (its copies say cancelled, and nothing is left to
		// send), or cancelled by a concurrent call.
		if current, gerr := s.ownCampaign(ctx, id, caller); gerr == nil && current.Status == domain.CampaignCancelled {
			return current, nil
		}
	}
	return c, err
}

// putStatusReplicas writes the cancelled status to every copy the workers
// read (CampaignStatusPK), kept as long as the campaign's notifications may
// still be sent (a cancel before sendAt is read at sendAt).
func (s *Campaigns) putStatusReplicas(ctx context.Context, c *domain.Campaign, cancelledAt time.Time) error {
	id := c.ID
	for r := range CampaignStatusReplicas {
		_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: map[string]types.AttributeValue{
			"pk": str(statusReplicaPK(id, r)), "sk": str(statusSK), "kind": str("campaignStatus"),
			"status": str(string(domain.CampaignCancelled)), "cancelledAt": str(formatTime(cancelledAt)),
			"ttl": num(s.expiry(cancelledAt, c.RetainFrom())),
		}})
		if err != nil {
			return fmt.Errorf("write status copy %d of campaign %s: %w", r, id, err)
		}
	}
	return nil
}

// updateCampaign applies update to caller's campaign if its status is from;
// another status is notFrom, another caller's campaign or none
// domain.ErrNotFound. :now is the store's clock.
func (s *Campaigns) updateCampaign(ctx context.Context, id, caller string, from domain.CampaignStatus, update string, values map[string]types.AttributeValue, notFrom error) (*domain.Campaign, error) {
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
func (s *Campaigns) ListChunks(ctx context.Context, id, after string, limit int) ([]string, bool, error) {
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
func (s *Campaigns) GetChunk(ctx context.Context, id, chunk string) ([]string, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: key(CampaignChunkPK(id, chunk), chunkIDsSK), ConsistentRead: aws.Bool(true)})
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
func (s *Campaigns) GetLot(ctx context.Context, id, chunk string) (*domain.CampaignLot, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: key(CampaignLotPK(id, chunk), lotSK), ConsistentRead: aws.Bool(true)})
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
func (s *Campaigns) ExistingProfiles(ctx context.Context, users []string) (map[string]bool, error) {
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
func (s *Campaigns) RecordLot(ctx context.Context, id string, lot *domain.CampaignLot) error {
	it := lotItem{
		PK: CampaignLotPK(id, lot.Chunk), SK: lotSK, Kind: "campaignLot", Total: lot.Total, Pending: lot.Pending,
		Notified: lot.Counts.Notified, Sent: lot.Counts.Sent, Skipped: lot.Counts.Skipped, Failed: lot.Counts.Failed, Dropped: lot.Counts.Dropped,
		Version: 1, TTL: s.expiry(s.now(), lot.RetainFrom),
	}
	if it.Pending == nil {
		it.Pending = []string{}
	}
	item, err := attributevalue.MarshalMap(it)
	if err != nil {
		return fmt.Errorf("marshal lot: %w", err)
	}
	err = s.transactContended(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(s.table), Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
		{Update: s.countsUpdate(id, lot.Counts, lot.Settled())},
	}})
	switch {
	case failedConditionAt(err, 0):
		return fmt.Errorf("lot %s of campaign %s: %w", lot.Chunk, id, domain.ErrConflict)
	case failedConditionAt(err, 1):
		return fmt.Errorf("campaign %s: %w", id, domain.ErrNotFound)
	case err != nil:
		return fmt.Errorf("record lot %s of campaign %s: %w", lot.Chunk, id, err)
	}
	lot.Version = 1
	return nil
}

// ReconcileLot replaces a lot's result prev by next and adds the difference
// to the campaign, in one transaction conditioned on the lot still being at
// prev's version: a concurrent or repeated reconcile is domain.ErrConflict
// and counts nothing.
func (s *Campaigns) ReconcileLot(ctx context.Context, id string, prev, next *domain.CampaignLot) error {
	pending := next.Pending
	if pending == nil {
		pending = []string{}
	}
	pendingAV, err := attributevalue.Marshal(pending)
	if err != nil {
		return fmt.Errorf("marshal pending: %w", err)
	}
	c := next.Counts
	err = s.transactContended(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{
			TableName: aws.String(s.table), Key: key(CampaignLotPK(id, next.Chunk), lotSK),
			UpdateExpression:    aws.String("SET pending = :pending, notified = :notified, sent = :sent, skipped = :skipped, failed = :failed, dropped = :dropped, version = :next"),
			ConditionExpression: aws.String("version = :version"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pending": pendingAV, ":notified": num(int64(c.Notified)), ":sent": num(int64(c.Sent)), ":skipped": num(int64(c.Skipped)),
				":failed": num(int64(c.Failed)), ":dropped": num(int64(c.Dropped)), ":next": num(int64(prev.Version + 1)), ":version": num(int64(prev.Version)),
			},
		}},
		{Update: s.countsUpdate(id, next.Counts.Sub(prev.Counts), next.Settled() && !prev.Settled())},
	}})
	switch {
	case failedConditionAt(err, 0):
		return fmt.Errorf("lot %s of campaign %s: %w", next.Chunk, id, domain.ErrConflict)
	case failedConditionAt(err, 1):
		return fmt.Errorf("campaign %s: %w", id, domain.ErrNotFound)
	case err != nil:
		return fmt.Errorf("reconcile lot %s of campaign %s: %w", next.Chunk, id, err)
	}
	next.Version = prev.Version + 1
	return nil
}

// countsUpdate adds delta (and one settled lot) to a campaign's counts.
func (s *Campaigns) countsUpdate(id string, delta domain.CampaignCounts, settled bool) *types.Update {
	lots := int64(0)
	if settled {
		lots = 1
	}
	return &types.Update{
		TableName: aws.String(s.table), Key: key(CampaignPK(id), campaignSK),
		UpdateExpression:    aws.String("ADD notified :notified, sent :sent, skipped :skipped, failed :failed, dropped :dropped, lotsSettled :lots SET countedAt = :now"),
		ConditionExpression: aws.String("attribute_exists(pk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now":      str(formatTime(s.now())),
			":notified": num(int64(delta.Notified)), ":sent": num(int64(delta.Sent)), ":skipped": num(int64(delta.Skipped)),
			":failed": num(int64(delta.Failed)), ":dropped": num(int64(delta.Dropped)), ":lots": num(lots),
		},
	}
}

// FinishCampaign records that every lot of a campaign is settled: running
// becomes done, a cancelled one keeps its status; both get finishedAt. It
// reports whether this call finished it (false: not every lot is settled
// yet, or it was finished already).
func (s *Campaigns) FinishCampaign(ctx context.Context, id string) (bool, error) {
	for _, from := range []domain.CampaignStatus{domain.CampaignRunning, domain.CampaignCancelled} {
		to := domain.CampaignDone
		if from == domain.CampaignCancelled {
			to = from
		}
		_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.table), Key: key(CampaignPK(id), campaignSK),
			UpdateExpression: aws.String("SET #status = :to, finishedAt = :now"),
			// A segment campaign is finished once every scan segment has
			// stored its last page (its chunks are counted by then).
			ConditionExpression: aws.String("#status = :from AND lotsSettled >= chunks AND attribute_not_exists(finishedAt) AND " +
				"(attribute_not_exists(scanSegments) OR size(scannedSegments) >= scanSegments)"),
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

// withCampaign applies n's campaign status, reading its status copy when
// the caller's batch read did not include it (read false).
func (s *Table) withCampaign(ctx context.Context, n *domain.Notification, campaign map[string]types.AttributeValue, read bool) error {
	if n == nil || n.CampaignID == "" {
		return nil
	}
	if !read {
		out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(s.table), Key: campaignStatusKey(n.CampaignID, n.ID), ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return fmt.Errorf("read campaign %s: %w", n.CampaignID, err)
		}
		campaign = out.Item
	}
	applyCampaignStatus(n, campaign)
	return nil
}

// campaignStatusKey is the status copy the work of a campaign's
// notification reads: absent while the campaign is not cancelled.
func campaignStatusKey(campaignID, notificationID string) map[string]types.AttributeValue {
	return key(CampaignStatusPK(campaignID, notificationID), statusSK)
}

// CampaignItemKeys builds a campaign's META and DATA items with the code
// CreateCampaign uses and returns their keys and billed sizes (the capacity
// model reads them; docs/capacity.md).
func (s *Table) CampaignItemKeys(c *domain.Campaign) (meta, data ItemKeys, err error) {
	av, err := attributevalue.MarshalMap(s.toCampaignItem(c))
	if err != nil {
		return meta, data, fmt.Errorf("marshal campaign: %w", err)
	}
	d, err := s.campaignDataPut(c)
	if err != nil {
		return meta, data, err
	}
	return keysOf(av, nil), keysOf(d.Put.Item, nil), nil
}

// ChunkItemKeys does the same for a chunk's marker and ids (AddChunk).
func (s *Table) ChunkItemKeys(c *domain.Campaign, chunk string, ids []string, hash string) (marker, payload ItemKeys, err error) {
	puts, err := s.chunkPuts(c, chunk, ids, hash)
	if err != nil {
		return marker, payload, err
	}
	return keysOf(puts[0].Put.Item, nil), keysOf(puts[1].Put.Item, nil), nil
}

// LotItemKeys does the same for a lot's result (RecordLot, ReconcileLot).
func (s *Table) LotItemKeys(id string, lot *domain.CampaignLot) (ItemKeys, error) {
	av, err := attributevalue.MarshalMap(lotItem{PK: CampaignLotPK(id, lot.Chunk), SK: lotSK, Kind: "campaignLot", Total: lot.Total, Pending: lot.Pending,
		Notified: lot.Counts.Notified, Sent: lot.Counts.Sent, Skipped: lot.Counts.Skipped, Failed: lot.Counts.Failed, Dropped: lot.Counts.Dropped,
		Version: lot.Version, TTL: s.expiry(s.now(), lot.RetainFrom)})
	if err != nil {
		return ItemKeys{}, fmt.Errorf("marshal lot: %w", err)
	}
	return keysOf(av, nil), nil
}

// SetScanSegments records how many parallel scan segments a segment
// campaign's planning uses, unless a plan step recorded it already, and
// returns the recorded number (a retried plan step scans the same way).
func (s *Campaigns) SetScanSegments(ctx context.Context, id string, n int) (int, error) {
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: key(CampaignPK(id), campaignSK),
		UpdateExpression:          aws.String("SET scanSegments = if_not_exists(scanSegments, :n)"),
		ConditionExpression:       aws.String("attribute_exists(pk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": num(int64(n))},
		ReturnValues:              types.ReturnValueUpdatedNew,
	})
	if isConditionFailed(err) {
		return 0, fmt.Errorf("campaign %s: %w", id, domain.ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("set scan segments of campaign %s: %w", id, err)
	}
	var got struct {
		ScanSegments int `dynamodbav:"scanSegments"`
	}
	if err := attributevalue.UnmarshalMap(out.Attributes, &got); err != nil {
		return 0, fmt.Errorf("scan segments of campaign %s: %w", id, err)
	}
	if got.ScanSegments <= 0 {
		return 0, fmt.Errorf("campaign %s records %d scan segments", id, got.ScanSegments)
	}
	return got.ScanSegments, nil
}

// ScanProfiles reads up to limit user ids of segment seg of total of the
// profiles index (KEYS_ONLY: no notification or other item is read), after
// the user id after ("" from the segment's start). next is the last user id
// read when the segment may have more, else "".
func (s *Campaigns) ScanProfiles(ctx context.Context, seg, total int, after string, limit int) (ids []string, next string, err error) {
	in := &dynamodb.ScanInput{
		TableName: aws.String(s.table), IndexName: aws.String(IndexProfiles),
		Segment: aws.Int32(int32(seg)), TotalSegments: aws.Int32(int32(total)), Limit: aws.Int32(int32(limit)),
	}
	if after != "" {
		in.ExclusiveStartKey = map[string]types.AttributeValue{"pk": str(UserPK(after)), "sk": str(profileSK), "gsi4pk": str(after)}
	}
	out, err := s.db.Scan(ctx, in)
	if err != nil {
		return nil, "", fmt.Errorf("scan profiles segment %d/%d: %w", seg, total, err)
	}
	ids = make([]string, 0, len(out.Items))
	for _, av := range out.Items {
		if u := stringAttr(av, "gsi4pk"); u != "" {
			ids = append(ids, u)
		}
	}
	if len(out.LastEvaluatedKey) > 0 {
		next = stringAttr(out.LastEvaluatedKey, "gsi4pk")
	}
	return ids, next, nil
}

// GetScanPage reads the page a scan step stored as chunk: the user id its
// segment continues after ("" when it was the segment's last page); ok
// false when it is not stored yet.
func (s *Campaigns) GetScanPage(ctx context.Context, id, chunk string) (next string, ok bool, err error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: key(CampaignPK(id), chunkPrefix+chunk), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return "", false, fmt.Errorf("get scan page %s of campaign %s: %w", chunk, id, err)
	}
	if len(out.Item) == 0 {
		return "", false, nil
	}
	return stringAttr(out.Item, "next"), true, nil
}

// RecordScanPage stores one page of scan segment seg as chunk (its ids, and
// on the marker the user id the segment continues after) and adds it to the
// campaign's chunks and recipients, in one transaction conditioned on the
// chunk not existing: a retried step gets domain.ErrConflict and reads the
// stored page instead. The segment's last page (next "") marks the segment
// scanned in the same transaction; an empty last page only marks it (a
// set: marking twice is marking once).
func (s *Campaigns) RecordScanPage(ctx context.Context, c *domain.Campaign, chunk string, seg int, ids []string, next string) error {
	segSet := &types.AttributeValueMemberNS{Value: []string{fmt.Sprint(seg)}}
	if len(ids) == 0 {
		if next != "" {
			return nil // an empty page in the middle of a segment: nothing to store
		}
		_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.table), Key: key(CampaignPK(c.ID), campaignSK),
			UpdateExpression: aws.String("ADD scannedSegments :seg"), ConditionExpression: aws.String("attribute_exists(pk)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":seg": segSet},
		})
		if err != nil {
			return fmt.Errorf("mark segment %d of campaign %s scanned: %w", seg, c.ID, err)
		}
		return nil
	}
	update := &types.Update{
		TableName: aws.String(s.table), Key: key(CampaignPK(c.ID), campaignSK),
		UpdateExpression:          aws.String("ADD chunks :one, recipients :n"),
		ConditionExpression:       aws.String("attribute_exists(pk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1), ":n": num(int64(len(ids)))},
	}
	puts, err := s.chunkPuts(c, chunk, ids, "")
	if err != nil {
		return err
	}
	if next != "" {
		puts[0].Put.Item["next"] = str(next)
	} else {
		update.UpdateExpression = aws.String("ADD chunks :one, recipients :n, scannedSegments :seg")
		update.ExpressionAttributeValues[":seg"] = segSet
	}
	err = s.transactContended(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: append(puts, types.TransactWriteItem{Update: update})})
	switch {
	case failedConditionAt(err, 0) || failedConditionAt(err, 1):
		return fmt.Errorf("scan page %s of campaign %s: %w", chunk, c.ID, domain.ErrConflict)
	case failedConditionAt(err, 2):
		return fmt.Errorf("campaign %s: %w", c.ID, domain.ErrNotFound)
	case err != nil:
		return fmt.Errorf("record scan page %s of campaign %s: %w", chunk, c.ID, err)
	}
	return nil
}
