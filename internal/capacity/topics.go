package capacity

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
)

// CheckTopicShardReads: a topic shard's partition read at the fastest a
// scan can page it (one page at a time per shard) stays under a
// partition's read units. CheckTopicDrain: the largest topic send drains
// within StuckAfter(low), as a campaign must. CheckTopicTableWrites: its
// fan-out's table writes stay under the table's warm throughput.
const (
	CheckTopicShardReads  = "topicShardReads"
	CheckTopicDrain       = "topicDrain"
	CheckTopicTableWrites = "topicTableWrites"
)

// TopicSubscriberCounts are the topic sends herald capacity prices (issue 39).
var TopicSubscriberCounts = []int{1_000_000, 10_000_000}

// topicScanSecondsPerPage is one scan step in AWS (assumed, like the other
// durations): a Query of 1,000 subscriber items, the chunk's transaction,
// two queue messages. A shard is paged one step at a time.
const topicScanSecondsPerPage = 0.1

// modelTopic is the topic the model sends to (a 32-character key).
const modelTopic = "thread:0123456789abcdef012345678"

// TopicSend is one topic send to Subscribers, fanned out as a campaign at
// the template's CampaignFanOutRate with the day's average traffic beside.
type TopicSend struct {
	Subscribers float64 `json:"subscribers"`
	// FanOutPerSecond is the recipients notified a second (CampaignFanOutRate).
	FanOutPerSecond float64 `json:"fanOutPerSecond"`
	// Table and indexes' units a second during the fan-out: the average
	// second's, the recipients' notifications and deliveries, their lots,
	// every pending lot's reconcile, the subscriber pages and mute reads.
	WriteUnitsPerSecond float64 `json:"writeUnitsPerSecond"`
	ReadUnitsPerSecond  float64 `json:"readUnitsPerSecond"`
	// TableWriteUnitsPerSecond is the table's part (its warm throughput's).
	TableWriteUnitsPerSecond float64 `json:"tableWriteUnitsPerSecond"`
	// TopicReadUnitsPerSecond is the send's own reads (pages and mutes).
	TopicReadUnitsPerSecond float64 `json:"topicReadUnitsPerSecond"`
	// TablePartitions: the partitions the table's writes need (1,000 units/s each).
	TablePartitions float64 `json:"tablePartitions"`
	// Shards, ItemsPerShard and ShardBytes: T#<topic>#<shard> partitions.
	Shards        int     `json:"shards"`
	ItemsPerShard float64 `json:"itemsPerShard"`
	ShardBytes    float64 `json:"shardBytes"`
	// PageReadUnits is one page of 1,000 subscribers (eventually
	// consistent); ShardReadUnitsPerSecond a shard at the fan-out's pace,
	// ShardReadUnitsPerSecondMax at a scan step's speed.
	PageReadUnits              float64 `json:"pageReadUnits"`
	ShardReadUnitsPerSecond    float64 `json:"shardReadUnitsPerSecond"`
	ShardReadUnitsPerSecondMax float64 `json:"shardReadUnitsPerSecondMax"`
	// ScanSeconds is every shard paged at a scan step's speed, in
	// parallel; FanOutHours the notifications created at the pace.
	ScanSeconds float64 `json:"scanSeconds"`
	FanOutHours float64 `json:"fanOutHours"`
	// Drain per channel at what each provider's quota leaves the bulk
	// share (campaignDrain), and its longest.
	Drain      map[string]Drain `json:"drain"`
	DrainHours float64          `json:"drainHours"`
	// PerMillionRecipientsUSD: a recipient's notification, deliveries, lot
	// share, page share and mute read, at list prices (provider fee apart).
	PerMillionRecipientsUSD float64 `json:"perMillionRecipientsUSD"`
}

// topicSends prices TopicSubscriberCounts' sends. average is the profile's
// average second (its writes and reads continue beside the send).
func topicSends(p Profile, l Limits, average Peak) (map[string]TopicSend, error) {
	m := newModel(l.Batch)
	fanOut := l.CampaignFanOutRate
	// One lot of 1,000 subscribers: their notifications (the profile's
	// channel mix, low priority, sent now), the lot, the page read, the
	// chunk written from it and the mute read of each.
	lot := newTally()
	lot.traced = l.Traced
	kinds := Kinds()
	for i := range domain.MaxChunkRecipients {
		k := kinds[0]
		switch x := float64(i) / domain.MaxChunkRecipients; {
		case x < p.SMSShare:
			k = kinds[1]
		case x < p.SMSShare+p.PushShare:
			k = kinds[2]
		}
		k.Priority, k.Batch, k.Campaign = domain.PriorityLow, false, peakCampaign
		if err := m.notify(lot, k, fmt.Sprintf("sub%032d", i), time.Time{}); err != nil {
			return nil, err
		}
	}
	lotOnly := p
	lotOnly.CampaignUsers, lotOnly.CampaignChunkUploadsPerSecond = 0, 0
	if err := m.campaignFanOut(lot, lotOnly, domain.MaxChunkRecipients); err != nil {
		return nil, err
	}
	ids := make([]string, domain.MaxChunkRecipients)
	pageBytes := 0
	var subBytes int
	for i := range ids {
		ids[i] = fmt.Sprintf("sub%032d", i)
		sub, own, err := m.store.SubscriptionItemKeys(modelTopic, ids[i])
		if err != nil {
			return nil, err
		}
		pageBytes += sub.Size
		subBytes = sub.Size
		lot.r("table", own.PK, dynamo.ReadUnits(own.Size, true)) // MutedSubscribers: strongly consistent
	}
	page := dynamo.ReadUnits(pageBytes, false)
	lot.r("table", dynamo.TopicShardPK(modelTopic, 0), page)
	c := &domain.Campaign{ID: peakCampaign, Topic: modelTopic, Priority: domain.PriorityLow, Status: domain.CampaignRunning, CreatedAt: m.now}
	meta, _, err := m.store.CampaignItemKeys(c)
	if err != nil {
		return nil, err
	}
	_, chunkIDs, err := m.store.ChunkItemKeys(c, domain.ChunkKey(0), ids, "hash")
	if err != nil {
		return nil, err
	}
	lot.w("table", chunkIDs.PK, 2*dynamo.WriteUnits(chunkIDs.Size)) // the page's ids, one transaction with META
	lot.w("table", meta.PK, 2*dynamo.WriteUnits(meta.Size))
	lot.invoke("CampaignFunction", 1, topicScanSecondsPerPage)
	lot.usage.SQSRequests += 3 // the scan message received and deleted, the next page's and the lot's sent together
	per := func(mp map[string]float64) float64 {
		s := 0.0
		for _, v := range mp {
			s += v
		}
		return s / domain.MaxChunkRecipients
	}
	writesPer, readsPer := per(lot.usage.WriteUnits), per(lot.usage.ReadUnits)
	topicReadsPer := (page + float64(domain.MaxChunkRecipients)*dynamo.ReadUnits(subBytes, true)) / domain.MaxChunkRecipients
	u := lot.usage
	scaleUsage(&u, domain.MaxChunkRecipients)
	perMillion := ListPrices.PerMillion(u).Total

	out := map[string]TopicSend{}
	for _, n := range TopicSubscriberCounts {
		// Every pending lot recounted once per CampaignReconcileDelay.
		rec := newTally()
		pn := p
		pn.CampaignUsers, pn.CampaignChunkUploadsPerSecond = n, 0
		if err := m.campaignFanOut(rec, pn, 0); err != nil {
			return nil, err
		}
		sum := func(mp map[string]float64) float64 {
			s := 0.0
			for _, v := range mp {
				s += v
			}
			return s
		}
		avgW := average.TableWriteUnitsPerSecond + sum(average.IndexWriteUnitsPerSecond)
		avgR := average.TableReadUnitsPerSecond + sum(average.IndexReadUnitsPerSecond)
		writes := avgW + fanOut*writesPer + sum(rec.usage.WriteUnits)
		tableWrites := average.TableWriteUnitsPerSecond + fanOut*lot.usage.WriteUnits["table"] + rec.usage.WriteUnits["table"]
		reads := avgR + fanOut*readsPer + sum(rec.usage.ReadUnits)
		items := float64(n) / domain.TopicShards
		drain := campaignDrain(pn, l, effectiveRates(l))
		hours := 0.0
		for _, d := range drain {
			hours = math.Max(hours, d.Hours)
		}
		out[strconv.Itoa(n)] = TopicSend{Subscribers: float64(n), FanOutPerSecond: fanOut,
			WriteUnitsPerSecond: round2(writes), ReadUnitsPerSecond: round2(reads), TopicReadUnitsPerSecond: round2(fanOut * topicReadsPer),
			TableWriteUnitsPerSecond: round2(tableWrites), TablePartitions: math.Ceil(tableWrites / PartitionWriteUnitsPerSecond),
			Shards: domain.TopicShards, ItemsPerShard: items, ShardBytes: items * float64(subBytes),
			PageReadUnits: page, ShardReadUnitsPerSecond: round2(fanOut / domain.MaxChunkRecipients / domain.TopicShards * page),
			ShardReadUnitsPerSecondMax: round2(page / topicScanSecondsPerPage),
			ScanSeconds:                round2(math.Ceil(items/domain.MaxChunkRecipients) * topicScanSecondsPerPage),
			FanOutHours:                round2(float64(n) / fanOut / 3600),
			Drain:                      drain, DrainHours: round2(hours), PerMillionRecipientsUSD: round2(perMillion)}
	}
	return out, nil
}

// checkTopics makes the topic sends' named checks.
func (res *Result) checkTopics(l Limits) {
	largest := res.Topics[strconv.Itoa(TopicSubscriberCounts[len(TopicSubscriberCounts)-1])]
	res.seedCheck(CheckTopicShardReads, map[string]float64{"pageReadUnits": largest.PageReadUnits, "atThePace": largest.ShardReadUnitsPerSecond, "atScanSpeed": largest.ShardReadUnitsPerSecondMax},
		"fewer subscribers a page, or pace the scan", cond{"a topic shard's read units/s paged at a scan step's speed vs a partition's", largest.ShardReadUnitsPerSecondMax, PartitionReadUnitsPerSecond})
	figures := map[string]float64{}
	for k, t := range res.Topics {
		figures[k+"DrainHours"] = t.DrainHours
		figures[k+"FanOutHours"] = t.FanOutHours
	}
	res.seedCheck(CheckTopicDrain, figures, "raise the send quotas or BulkQuotaShare: a larger topic's last sends would be taken for stuck",
		cond{fmt.Sprintf("the %.0f-subscriber topic send's drain hours vs StuckAfter(low)", largest.Subscribers), largest.DrainHours, l.StuckAfterLowSeconds / 3600})
	res.seedCheck(CheckTopicTableWrites, map[string]float64{"tableWriteUnitsPerSecond": largest.TableWriteUnitsPerSecond, "warm": l.warm("table", true)},
		"raise TableWarmWriteUnitsPerSecond, or a longer CampaignReconcileDelay",
		cond{fmt.Sprintf("the %.0f-subscriber topic send's table write units/s vs the table's warm throughput", largest.Subscribers), largest.TableWriteUnitsPerSecond, l.warm("table", true)})
}

// scaleUsage divides u's per-unit figures by n.
func scaleUsage(u *Usage, n float64) {
	for _, mp := range []map[string]float64{u.WriteUnits, u.ReadUnits, u.Invocations, u.GBSeconds} {
		for k := range mp {
			mp[k] /= n
		}
	}
	u.SQSRequests /= n
	u.APIRequests /= n
	u.TracedInvocations /= n
	u.LogBytes /= n
	u.Emails /= n
	u.SMS /= n
	u.StoredGBMonths /= n
}
