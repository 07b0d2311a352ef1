package capacity

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
)

// Profile is the load the model is run with (issue 14).
type Profile struct {
	PerDay            float64 // notifications a day
	AveragePerSecond  float64
	PeakPerSecond     float64 // a low-priority campaign's rate …
	PeakMinutes       int     // … for this long
	CampaignUsers     int     // each gets one notification
	DeferredShare     float64 // of the day's traffic, deferred by quiet hours to one instant (08:00 in one zone)
	SMSShare          float64
	PushShare         float64 // the rest is email
	Users             int     // recipients of the day's traffic, drawn Zipf(ZipfS)
	ZipfS             float64
	BatchIntakeShare  float64 // of the campaign, submitted through the batch route (100 a request); the rest is a campaign (lots)
	LambdaConcurrency int     // account limit
	// CampaignReconcileSeconds is the template's CampaignReconcileDelay:
	// every lot of the campaign still pending is recounted once per delay.
	CampaignReconcileSeconds float64
	// CampaignChunkUploadsPerSecond: recipients chunks uploaded to another
	// campaign (a draft) in the same second.
	CampaignChunkUploadsPerSecond float64
	// ProfileCreatesPerSecond: new users' profiles written each second
	// (each also writes its entry in the profiles index, gsi4).
	ProfileCreatesPerSecond float64
}

// DefaultProfile is the profile.
func DefaultProfile() Profile {
	return Profile{PerDay: 50e6, AveragePerSecond: 600, PeakPerSecond: 20000, PeakMinutes: 10, CampaignUsers: 10e6,
		DeferredShare: 0.30, SMSShare: 0.05, PushShare: 0.40, Users: 10e6, ZipfS: 1.1, BatchIntakeShare: 0, LambdaConcurrency: 1000,
		CampaignReconcileSeconds: 30, CampaignChunkUploadsPerSecond: 20, ProfileCreatesPerSecond: 50}
}

// AWS limits the model checks.
const (
	PartitionWriteUnitsPerSecond = 1000
	PartitionReadUnitsPerSecond  = 3000
	HTTPAPIRequestsPerSecond     = 10000
)

// Assumptions about the functions in AWS (not measurable on this machine:
// the emulators are far slower than DynamoDB, SES and SNS).
const (
	apiSecondsPerRequest    = 0.012 // decode, validate, one PutItem
	apiSecondsPerBatchItem  = 0.002
	relaySecondsPerBatch    = 0.150 // 100 records: one batch read, writes in parallel, one publish
	relayRecordsPerBatch    = 100
	workerSecondsPerBatch   = 0.060 // load, claim, provider call, outcome; messages in parallel
	schedulerSecondsPerPage = 0.080
	campaignSecondsPerLot   = 2.0 // 1,000 conditional puts 16 at a time, reads, one transaction
	campaignSecondsPerStep  = 0.030
	sendsPerBatchCall       = 10 // SendMessageBatch entries
	apiMemoryGB             = 0.25
	// Log bytes per line as Herald writes them (JSON, ids only) and per EMF
	// document (one per dimension set and invocation).
	logBytesAcceptLine  = 330
	logBytesOutcomeLine = 300
	logBytesEMF         = 320
)

// channelBatch is the event source mapping's batch size per priority
// (template.yaml: 10, 10, LowBatchSize 2).
var channelBatch = map[domain.Priority]float64{domain.PriorityHigh: 10, domain.PriorityNormal: 10, domain.PriorityLow: 2}

// Kind is one notification kind the model prices.
type Kind struct {
	Name     string
	Type     string
	Priority domain.Priority
	Channels []domain.Channel
	// Limited: counted against the per-user rate limit (not high, not mandatory).
	Limited bool
	// RelayReadsProfile: the relay's batch read includes profile and preferences.
	RelayReadsProfile bool
	Batch             bool
	// Campaign: created by a lot of this campaign (no API request); its
	// work reads one of the campaign's status copies.
	Campaign string
	Data     map[string]any
}

// Kinds are the kinds `herald capacity` prices, as the cost benchmark runs
// them (internal/e2e/cost).
func Kinds() []Kind {
	res := map[string]any{"reservationUrl": "https://example.com/r/123456"}
	com := map[string]any{"actorLabel": "Ada", "url": "https://example.com/c/1"}
	email := []domain.Channel{domain.ChannelEmail}
	sms := []domain.Channel{domain.ChannelSMS}
	push := []domain.Channel{domain.ChannelPush}
	var out []Kind
	for _, batch := range []bool{false, true} {
		suffix := map[bool]string{false: "", true: "-batch"}[batch]
		out = append(out,
			Kind{Name: "email" + suffix, Type: "reservation.approved", Priority: domain.PriorityNormal, Channels: email, Limited: true, RelayReadsProfile: true, Batch: batch, Data: res},
			Kind{Name: "sms" + suffix, Type: "otp.code", Priority: domain.PriorityHigh, Channels: sms, Batch: batch, Data: map[string]any{"code": "123456"}},
			Kind{Name: "push" + suffix, Type: "comment.created", Priority: domain.PriorityLow, Channels: push, Limited: true, Batch: batch, Data: com},
		)
	}
	return append(out,
		Kind{Name: "reservation.approved", Type: "reservation.approved", Priority: domain.PriorityNormal, Channels: []domain.Channel{domain.ChannelEmail, domain.ChannelPush}, Limited: true, Data: res},
		Kind{Name: "invoice.payment_failed", Type: "invoice.payment_failed", Priority: domain.PriorityHigh, Channels: []domain.Channel{domain.ChannelEmail, domain.ChannelPush}, Data: map[string]any{"invoiceUrl": "https://example.com/i/9"}},
		Kind{Name: "security.login_alert", Type: "security.login_alert", Priority: domain.PriorityHigh, Channels: []domain.Channel{domain.ChannelEmail, domain.ChannelSMS}, RelayReadsProfile: true, Data: map[string]any{"url": "https://example.com/s"}},
	)
}

// tally adds up units per key of the table and of each index.
type tally struct {
	write, read map[string]map[string]float64 // table|index → key → units
	usage       Usage
}

func newTally() *tally {
	return &tally{write: map[string]map[string]float64{}, read: map[string]map[string]float64{},
		usage: Usage{WriteUnits: map[string]float64{}, ReadUnits: map[string]float64{}, Invocations: map[string]float64{}, GBSeconds: map[string]float64{}}}
}

func (t *tally) w(where, key string, units float64) {
	if t.write[where] == nil {
		t.write[where] = map[string]float64{}
	}
	t.write[where][key] += units
	t.usage.WriteUnits[where] += units
}

// StorageOverheadBytes is what DynamoDB adds to every item and index entry
// it stores.
const StorageOverheadBytes = 100

// GBMonths is bytes kept for retention, in GB-months.
func GBMonths(bytes float64, retention time.Duration) float64 {
	return bytes / (1 << 30) * retention.Hours() / 24 / (365.0 / 12)
}

// store adds an item (or index entry) of size bytes kept for the retention
// (dynamo's DefaultRetention, the template's RetentionDays default).
func (t *tally) store(size int) {
	t.usage.StoredGBMonths += GBMonths(float64(size+StorageOverheadBytes), dynamo.DefaultRetention)
}

func (t *tally) r(where, key string, units float64) {
	if t.read[where] == nil {
		t.read[where] = map[string]float64{}
	}
	t.read[where][key] += units
	t.usage.ReadUnits[where] += units
}

// invoke counts n invocations of fn; every function is traced (the template's
// Globals set Tracing: Active, which internal/devstack's template test holds).
func (t *tally) invoke(fn string, n, seconds float64) {
	t.usage.Invocations[fn] += n
	t.usage.TracedInvocations += n
	t.usage.GBSeconds[fn] += n * seconds * apiMemoryGB
}

// model drives the real key and item builders of internal/dynamo.
type model struct {
	store *dynamo.Store
	now   time.Time
	rng   *rand.Rand
	seq   int
}

func newModel() *model {
	return &model{store: dynamo.New(nil, "model"), now: time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC), rng: rand.New(rand.NewPCG(14, 14))}
}

func (m *model) id() string {
	m.seq++
	return fmt.Sprintf("n%025x", m.rng.Uint64()^uint64(m.seq))
}

// notify adds one notification of kind k to user, through intake, relay and
// the channel workers; deferred deliveries stop at the due index.
func (m *model) notify(t *tally, k Kind, user string, deferTo time.Time) error {
	n := &domain.Notification{ID: m.id(), Caller: "arn:aws:sts::123456789012:assumed-role/app/session", Type: k.Type,
		Recipient: domain.Recipient{UserID: user}, Data: k.Data, Priority: k.Priority, Channels: k.Channels,
		CreatedAt: m.now, Status: "accepted", RequestHash: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		DedupeKey: "idem#0123456789abcdef0123"}
	if k.Type == "otp.code" {
		n.Recipient.Phone = "+15550100000"
	}
	keys, err := m.store.NotificationItemKeys(n)
	if err != nil {
		return err
	}
	// Intake: one conditional PutItem (table, inbox and unread indexes).
	switch {
	case k.Campaign != "":
		// A lot's share (campaignFanOut counts the lot's own reads and writes).
		t.invoke("CampaignFunction", 1.0/domain.MaxChunkRecipients, campaignSecondsPerLot)
	case k.Batch:
		t.usage.APIRequests += 1.0 / 100
		t.invoke("ApiFunction", 1.0/100, apiSecondsPerRequest+100*apiSecondsPerBatchItem)
	default:
		t.usage.APIRequests++
		t.invoke("ApiFunction", 1, apiSecondsPerRequest)
	}
	t.usage.LogBytes += logBytesAcceptLine + logBytesEMF/map[bool]float64{false: 1, true: 100}[k.Batch]
	t.w("table", keys.PK, dynamo.WriteUnits(keys.Size))
	t.store(keys.Size)
	for idx, pk := range keys.Index {
		t.w(idx, pk, dynamo.WriteUnits(keys.Sparse[idx]))
		t.store(keys.Sparse[idx]) // gsi2's entry until read: counted for the whole retention
	}
	// Relay: a share of a batch invocation; one batch read; per channel the
	// rate counter, the delivery (created queued, or deferred) and a share
	// of a SendMessageBatch.
	t.invoke("RelayFunction", 1.0/relayRecordsPerBatch, relaySecondsPerBatch)
	t.usage.LogBytes += logBytesEMF / relayRecordsPerBatch
	if k.RelayReadsProfile {
		// Profile item read (a missing preferences item is not billed by
		// DynamoDB Local; AWS bills a missing item's minimum).
		t.r("table", dynamo.UserPK(user), 1)
	}
	var sent []dynamo.ItemKeys // the deliveries whose messages go out now
	for _, c := range k.Channels {
		if k.Limited {
			t.w("table", dynamo.RateLimitPK(user, c), 1)
		}
		d := &domain.Delivery{NotificationID: n.ID, Channel: c, UserID: user, Priority: k.Priority, Status: domain.StatusQueued, UpdatedAt: m.now}
		if !deferTo.IsZero() {
			d.Status, d.Reason, d.DueAt = domain.StatusDeferred, domain.ReasonQuietHours, deferTo
		}
		dk, err := m.store.DeliveryItemKeys(d)
		if err != nil {
			return err
		}
		t.w("table", dk.PK, dynamo.WriteUnits(dk.Size))
		t.store(dk.Size + 60) // with the outcome's attributes
		for idx, pk := range dk.Index {
			t.w(idx, pk, dynamo.WriteUnits(dk.Sparse[idx]))
		}
		if !deferTo.IsZero() {
			continue
		}
		m.send(t, k, n, keys, dk, user, c)
		sent = append(sent, dk)
	}
	return m.watch(t, user, k.Priority, k.Channels, sent)
}

// watch is a notification's share of an in-flight watch (domain.Watch): one
// per relay batch (or release page) and priority, over the batch's sent
// deliveries. Armed before the messages go out (one item listing them and
// its due-index entry), checked by the scheduler once due (a share of a page
// of the index, a strongly consistent GetItem of the watch, an eventually
// consistent batch read of each delivery) and deleted there, every delivery
// having ended.
func (m *model) watch(t *tally, user string, p domain.Priority, channels []domain.Channel, dks []dynamo.ItemKeys) error {
	if len(dks) == 0 {
		return nil
	}
	const perWatch = relayRecordsPerBatch // notifications a watch covers
	w := domain.Watch{ID: domain.NewWatchID(), Priority: p, ArmedAt: m.now, DueAt: m.now.Add(domain.StuckAfter(p))}
	for i := range perWatch {
		for _, c := range channels[:len(dks)] {
			w.Entries = append(w.Entries, domain.WatchEntry{NotificationID: fmt.Sprintf("%s-%03d", m.id(), i), Channel: c})
		}
	}
	wk, err := m.store.WatchItemKeys(w)
	if err != nil {
		return err
	}
	due := wk.Index[dynamo.IndexDue]
	share := 1.0 / perWatch
	t.w("table", wk.PK, share*dynamo.WriteUnits(wk.Size))
	t.w(dynamo.IndexDue, due, share*dynamo.WriteUnits(wk.Sparse[dynamo.IndexDue]))
	t.r(dynamo.IndexDue, due, share*dynamo.ReadUnits(100*wk.Sparse[dynamo.IndexDue], false)/100) // pages of 100
	t.invoke("SchedulerFunction", share/100, schedulerSecondsPerPage)
	t.r("table", wk.PK, share*dynamo.ReadUnits(wk.Size, true))
	for _, dk := range dks {
		t.r("table", dk.PK, dynamo.ReadUnits(dk.Size+60, false)) // with the outcome's attributes
	}
	t.w("table", wk.PK, share*dynamo.WriteUnits(wk.Size))
	t.w(dynamo.IndexDue, due, share*dynamo.WriteUnits(wk.Sparse[dynamo.IndexDue]))
	return nil
}

// send is the work message's way: queue, worker load, claim, provider,
// outcome.
func (m *model) send(t *tally, k Kind, n *domain.Notification, nk, dk dynamo.ItemKeys, user string, c domain.Channel) {
	batch := channelBatch[k.Priority]
	t.usage.SQSRequests += 1.0/sendsPerBatchCall + 2/batch // send; receive and delete per batch
	fn := map[domain.Channel]string{domain.ChannelEmail: "EmailFunction", domain.ChannelSMS: "SmsFunction", domain.ChannelPush: "PushFunction"}[c]
	t.invoke(fn, 1/batch, workerSecondsPerBatch)
	t.usage.LogBytes += logBytesOutcomeLine + logBytesEMF/batch
	// Load: strongly consistent; the notification and the profile (with the
	// subscriptions for push). The delivery is not read: the claim returns it.
	t.r("table", nk.PK, dynamo.ReadUnits(nk.Size, true))
	t.r("table", dynamo.UserPK(user), 1)
	if k.Campaign != "" { // the cancel check rides the same batch read
		t.r("table", dynamo.CampaignStatusPK(k.Campaign, n.ID), 1)
	}
	// Claim and outcome.
	t.w("table", dk.PK, dynamo.WriteUnits(dk.Size+40))
	t.w("table", dk.PK, dynamo.WriteUnits(dk.Size+60))
	switch c {
	case domain.ChannelEmail:
		t.usage.Emails++
	case domain.ChannelSMS:
		t.usage.SMS++
	}
}

// releasePerPartition is the scheduler's pace per due partition
// (internal/scheduler: maxRate).
const releasePerPartition = 800

// release is the scheduler releasing one deferred delivery; perShard counts
// this second's releases per due partition, which the scheduler paces.
func (m *model) release(t *tally, k Kind, user string, due time.Time, perShard map[int]int) error {
	id := m.id()
	for perShard[dynamo.DuePartitionOf(due, id, k.Channels[0]).Shard] >= releasePerPartition {
		id = m.id()
	}
	perShard[dynamo.DuePartitionOf(due, id, k.Channels[0]).Shard]++
	n := &domain.Notification{ID: id, Type: k.Type, Recipient: domain.Recipient{UserID: user}, Data: k.Data, Priority: k.Priority, CreatedAt: m.now}
	nk, err := m.store.NotificationItemKeys(n)
	if err != nil {
		return err
	}
	for _, c := range k.Channels {
		d := &domain.Delivery{NotificationID: n.ID, Channel: c, UserID: user, Priority: k.Priority, Status: domain.StatusDeferred, DueAt: due, UpdatedAt: m.now}
		dk, err := m.store.DeliveryItemKeys(d)
		if err != nil {
			return err
		}
		due := dk.Index[dynamo.IndexDue]
		t.r(dynamo.IndexDue, due, dynamo.ReadUnits(100*dk.Sparse[dynamo.IndexDue], false)/100) // pages of 100
		t.invoke("SchedulerFunction", 1.0/100, schedulerSecondsPerPage)
		t.w("table", dk.PK, dynamo.WriteUnits(dk.Size)) // deferred → planned (index untouched: not projected)
		t.usage.SQSRequests += 1.0 / sendsPerBatchCall
		t.w("table", dk.PK, dynamo.WriteUnits(dk.Size))                                                  // planned → queued
		t.w(dynamo.IndexDue, due, dynamo.WriteUnits(dk.Sparse[dynamo.IndexDue]))                         // leaves the index
		m.send(t, Kind{Priority: k.Priority, Channels: k.Channels}, n, nk, dk, user, c)                  // then as any work message
		t.usage.SQSRequests -= 1.0 / sendsPerBatchCall                                                   // (counted above)
		if err := m.watch(t, user, k.Priority, []domain.Channel{c}, []dynamo.ItemKeys{dk}); err != nil { // armed by the release
			return err
		}
	}
	return nil
}

// createProfiles adds n new users' profiles (PUT /v1/users/{id}): the
// profile item and its keys-only entry in the profiles index.
func (m *model) createProfiles(t *tally, n float64) error {
	for range int(n) {
		m.seq++
		u := &domain.User{ID: fmt.Sprintf("new-user-%028d", m.seq), Email: "someone@example.com", Locale: "en", Timezone: "Europe/Berlin", UpdatedAt: m.now}
		k, err := m.store.UserItemKeys(u)
		if err != nil {
			return err
		}
		t.usage.APIRequests++
		t.invoke("ApiFunction", 1, apiSecondsPerRequest)
		t.w("table", k.PK, dynamo.WriteUnits(k.Size))
		for idx, pk := range k.Index {
			t.w(idx, pk, dynamo.WriteUnits(k.Sparse[idx]))
		}
	}
	return nil
}

// peakCampaign is the id of the campaign of the peak second.
const peakCampaign = "c0123456789abcdefghjkmnpqrs"

// campaignFanOut adds one second of a campaign's own items (the
// notifications are counted by notify): recipients/1,000 lots (lot result,
// META, DATA, chunk ids, profiles), the reconciles of every lot still pending
// (CampaignUsers/1,000 lots recounted once per CampaignReconcileSeconds), and
// chunk uploads to another campaign. Keys and sizes come from the store's
// builders; transactional writes cost twice.
func (m *model) campaignFanOut(t *tally, p Profile, recipientsPerSecond float64) error {
	c := &domain.Campaign{ID: peakCampaign, Caller: "arn:aws:sts::123456789012:assumed-role/app/session", Type: "reservation.approved",
		Priority: domain.PriorityLow, Status: domain.CampaignRunning, CreatedAt: m.now, StartedAt: m.now, Chunks: p.CampaignUsers / domain.MaxChunkRecipients,
		Recipients: p.CampaignUsers, Data: map[string]any{"reservationUrl": "https://example.com/r/123456", "body": fmt.Sprintf("%04000d", 0)},
		RequestHash: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", Counts: domain.CampaignCounts{Notified: p.CampaignUsers}}
	meta, data, err := m.store.CampaignItemKeys(c)
	if err != nil {
		return err
	}
	ids := make([]string, domain.MaxChunkRecipients)
	for i := range ids {
		ids[i] = fmt.Sprintf("user-%030d", i) // 36-byte ids
	}
	lots := recipientsPerSecond / domain.MaxChunkRecipients
	for i := range int(lots) {
		chunk := domain.ChunkKey(int64(i))
		_, chunkIDs, err := m.store.ChunkItemKeys(c, chunk, ids, "hash")
		if err != nil {
			return err
		}
		lot := &domain.CampaignLot{Chunk: chunk, Total: len(ids), Pending: ids, Counts: domain.CampaignCounts{Notified: len(ids)}, Version: 1}
		lk, err := m.store.LotItemKeys(c.ID, lot)
		if err != nil {
			return err
		}
		t.usage.SQSRequests += 1.0/sendsPerBatchCall + 2 + 1 // planned; received and deleted; its reconcile sent
		t.r("table", lk.PK, 1)                               // GetLot: none yet
		t.r("table", meta.PK, dynamo.ReadUnits(meta.Size, true))
		t.r("table", data.PK, dynamo.ReadUnits(data.Size, false))
		t.r("table", chunkIDs.PK, dynamo.ReadUnits(chunkIDs.Size, true))
		for _, u := range ids { // ExistingProfiles: keys only, eventually consistent
			t.r("table", dynamo.UserPK(u), 0.5)
		}
		t.w("table", lk.PK, 2*dynamo.WriteUnits(lk.Size)) // RecordLot: one transaction
		t.w("table", meta.PK, 2*dynamo.WriteUnits(meta.Size))
	}
	// Reconciles: every pending lot once per delay, each a transaction.
	reconciles := float64(p.CampaignUsers/domain.MaxChunkRecipients) / p.CampaignReconcileSeconds
	half := &domain.CampaignLot{Chunk: domain.ChunkKey(0), Total: len(ids), Pending: ids[:500], Counts: domain.CampaignCounts{Notified: len(ids), Sent: 500}, Version: 2}
	for i := range int(reconciles) {
		half.Chunk = domain.ChunkKey(int64(i))
		lk, err := m.store.LotItemKeys(c.ID, half)
		if err != nil {
			return err
		}
		t.invoke("CampaignFunction", 1, campaignSecondsPerStep)
		t.usage.SQSRequests += 3
		t.r("table", lk.PK, dynamo.ReadUnits(lk.Size, true))
		t.r("table", meta.PK, dynamo.ReadUnits(meta.Size, true))
		t.w("table", lk.PK, 2*dynamo.WriteUnits(lk.Size))
		t.w("table", meta.PK, 2*dynamo.WriteUnits(meta.Size))
	}
	// Uploads to a draft: marker, ids and META in one transaction.
	up := *c
	up.ID, up.Status = "c-uploading", domain.CampaignDraft
	upMeta, _, err := m.store.CampaignItemKeys(&up)
	if err != nil {
		return err
	}
	for i := range int(p.CampaignChunkUploadsPerSecond) {
		marker, chunkIDs, err := m.store.ChunkItemKeys(&up, domain.ChunkKey(int64(i)), ids, "hash")
		if err != nil {
			return err
		}
		t.usage.APIRequests++
		t.invoke("ApiFunction", 1, apiSecondsPerRequest)
		t.w("table", marker.PK, 2*dynamo.WriteUnits(marker.Size))
		t.w("table", chunkIDs.PK, 2*dynamo.WriteUnits(chunkIDs.Size))
		t.w("table", upMeta.PK, 2*dynamo.WriteUnits(upMeta.Size))
	}
	return nil
}

// CostOf prices one notification of kind k.
func CostOf(k Kind, p Prices) (Usage, Cost, error) {
	m := newModel()
	t := newTally()
	const n = 200
	for i := range n {
		// UUID-shaped user ids, as the cost benchmark's (and most
		// deployments'): the id is part of three keys of every notification
		// copy, so its length shows in the storage.
		if err := m.notify(t, k, fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i), time.Time{}); err != nil {
			return Usage{}, Cost{}, err
		}
	}
	u := t.usage
	scale := func(mp map[string]float64) {
		for key := range mp {
			mp[key] /= n
		}
	}
	scale(u.WriteUnits)
	scale(u.ReadUnits)
	scale(u.Invocations)
	scale(u.GBSeconds)
	u.SQSRequests /= n
	u.APIRequests /= n
	u.TracedInvocations /= n
	u.LogBytes /= n
	u.Emails /= n
	u.SMS /= n
	u.StoredGBMonths /= n
	return u, p.PerMillion(u), nil
}

// Peak is one second of a scenario.
type Peak struct {
	Scenario string `json:"scenario"`
	// Busiest partition key's units per second, by "table" or index.
	WriteUnits map[string]PartitionLoad `json:"writeUnits"`
	ReadUnits  map[string]PartitionLoad `json:"readUnits"`
	// LambdaConcurrency by function (arrivals × duration, Little's law).
	LambdaConcurrency    map[string]float64 `json:"lambdaConcurrency"`
	SQSRequestsPerSecond float64            `json:"sqsRequestsPerSecond"`
	APIRequestsPerSecond float64            `json:"apiRequestsPerSecond"`
}

// PartitionLoad is the busiest key and its units per second.
type PartitionLoad struct {
	Key   string  `json:"key"`
	Units float64 `json:"units"`
}

// Result is the model's answer.
type Result struct {
	Profile                         Profile            `json:"profile"`
	Peaks                           []Peak             `json:"seconds"`
	MaxPartitionWriteUnitsPerSecond float64            `json:"maxPartitionWriteUnitsPerSecond"`
	MaxPartitionReadUnitsPerSecond  float64            `json:"maxPartitionReadUnitsPerSecond"`
	LimitsExceeded                  []string           `json:"limitsExceeded"`
	CostPerMillionUSD               map[string]float64 `json:"costPerMillionUSD"`
	ProviderFeePerMillionUSD        map[string]float64 `json:"providerFeePerMillionUSD"`
	// StoragePerMillionUSD is DynamoDB storage over the retention period,
	// beside the cost like the provider fee.
	StoragePerMillionUSD map[string]float64 `json:"storagePerMillionUSD"`
	Cost                 map[string]Cost    `json:"cost"`
	Prices               Prices             `json:"prices"`
}

// Run runs the model: the cost of each kind, and three seconds of the
// profile (an average second; a second of the campaign with the day's
// deferrals landing in the due index; the 08:00 release at full speed while
// the average traffic continues), each simulated notification by
// notification through the real key and item builders.
func Run(p Profile) (Result, error) {
	res := Result{Profile: p, CostPerMillionUSD: map[string]float64{}, ProviderFeePerMillionUSD: map[string]float64{}, StoragePerMillionUSD: map[string]float64{},
		Cost: map[string]Cost{}, Prices: ListPrices, LimitsExceeded: []string{}}
	for _, k := range Kinds() {
		_, c, err := CostOf(k, ListPrices)
		if err != nil {
			return res, err
		}
		res.CostPerMillionUSD[k.Name] = round2(c.Total)
		res.ProviderFeePerMillionUSD[k.Name] = round2(c.ProviderFee)
		res.StoragePerMillionUSD[k.Name] = round2(c.Storage)
		res.Cost[k.Name] = c
	}
	kinds := Kinds()
	mix := func(r *rand.Rand, low bool) Kind {
		x := r.Float64()
		k := kinds[0] // email
		switch {
		case x < p.SMSShare:
			k = kinds[1]
		case x < p.SMSShare+p.PushShare:
			k = kinds[2]
		}
		if low {
			k.Priority, k.Batch = domain.PriorityLow, r.Float64() < p.BatchIntakeShare
			if !k.Batch {
				k.Campaign = peakCampaign
			}
		}
		return k
	}
	m := newModel()
	zipf := rand.NewZipf(m.rng, p.ZipfS, 1, uint64(p.Users-1))
	eight := time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC)
	// Release rate: every shard of the 08:00 bucket at the scheduler's pace.
	releasePerSecond := math.Min(float64(dynamo.DueShards)*releasePerPartition, p.PerDay*p.DeferredShare)
	scenarios := []struct {
		name                   string
		campaign, releases     float64
		deferredShareOfCampain float64
	}{
		{name: "average second", campaign: 0},
		{name: "campaign second (20,000/s low, 30% deferred to 08:00)", campaign: p.PeakPerSecond, deferredShareOfCampain: p.DeferredShare},
		{name: "08:00 release of the deferred share", releases: releasePerSecond},
	}
	for _, sc := range scenarios {
		t := newTally()
		for range int(p.AveragePerSecond) {
			if err := m.notify(t, mix(m.rng, false), fmt.Sprintf("u%d", zipf.Uint64()), time.Time{}); err != nil {
				return res, err
			}
		}
		if err := m.createProfiles(t, p.ProfileCreatesPerSecond); err != nil {
			return res, err
		}
		campaignUser := 0
		for range int(sc.campaign) {
			campaignUser++
			var due time.Time
			if m.rng.Float64() < sc.deferredShareOfCampain {
				due = eight
			}
			if err := m.notify(t, mix(m.rng, true), fmt.Sprintf("c%d", campaignUser), due); err != nil {
				return res, err
			}
		}
		if sc.campaign > 0 {
			if err := m.campaignFanOut(t, p, sc.campaign*(1-p.BatchIntakeShare)); err != nil {
				return res, err
			}
		}
		perShard := map[int]int{}
		for i := range int(sc.releases) {
			if err := m.release(t, mix(m.rng, true), fmt.Sprintf("r%d", i), eight, perShard); err != nil {
				return res, err
			}
		}
		pk := Peak{Scenario: sc.name, WriteUnits: busiest(t.write), ReadUnits: busiest(t.read), LambdaConcurrency: map[string]float64{},
			SQSRequestsPerSecond: round2(t.usage.SQSRequests), APIRequestsPerSecond: round2(t.usage.APIRequests)}
		total := 0.0
		for fn, gbs := range t.usage.GBSeconds {
			c := math.Ceil(gbs / apiMemoryGB)
			pk.LambdaConcurrency[fn] = c
			total += c
		}
		for where, l := range pk.WriteUnits {
			res.MaxPartitionWriteUnitsPerSecond = math.Max(res.MaxPartitionWriteUnitsPerSecond, l.Units)
			if l.Units > PartitionWriteUnitsPerSecond {
				res.LimitsExceeded = append(res.LimitsExceeded, fmt.Sprintf("%s: %s partition %s takes %.0f WCU/s > %d", sc.name, where, l.Key, l.Units, PartitionWriteUnitsPerSecond))
			}
		}
		for where, l := range pk.ReadUnits {
			res.MaxPartitionReadUnitsPerSecond = math.Max(res.MaxPartitionReadUnitsPerSecond, l.Units)
			if l.Units > PartitionReadUnitsPerSecond {
				res.LimitsExceeded = append(res.LimitsExceeded, fmt.Sprintf("%s: %s partition %s takes %.0f RCU/s > %d", sc.name, where, l.Key, l.Units, PartitionReadUnitsPerSecond))
			}
		}
		if total > float64(p.LambdaConcurrency) {
			res.LimitsExceeded = append(res.LimitsExceeded, fmt.Sprintf("%s: Lambda concurrency %.0f > account limit %d", sc.name, total, p.LambdaConcurrency))
		}
		if t.usage.APIRequests > HTTPAPIRequestsPerSecond {
			res.LimitsExceeded = append(res.LimitsExceeded, fmt.Sprintf("%s: HTTP API %.0f requests/s > %d", sc.name, t.usage.APIRequests, HTTPAPIRequestsPerSecond))
		}
		res.Peaks = append(res.Peaks, pk)
	}
	return res, nil
}

func busiest(units map[string]map[string]float64) map[string]PartitionLoad {
	out := map[string]PartitionLoad{}
	for _, where := range slices.Sorted(maps.Keys(units)) {
		var best PartitionLoad
		for _, key := range slices.Sorted(maps.Keys(units[where])) {
			if u := units[where][key]; u > best.Units {
				best = PartitionLoad{Key: key, Units: round2(u)}
			}
		}
		out[where] = best
	}
	return out
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }
