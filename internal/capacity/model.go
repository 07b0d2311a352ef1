package capacity

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/heraldhq/herald/internal/campaign"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/failover"
	"github.com/heraldhq/herald/internal/policy"
	"github.com/heraldhq/herald/internal/recovery"
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
	// ProviderRatePerSecond is each channel's provider quota: the value of
	// the required EmailSendRate, SmsSendRate and PushSendRate parameters.
	ProviderRatePerSecond float64
	// The day's own traffic (its notifications less the campaign's, which
	// are the day's low priority) is high and normal: SMS high (one-time
	// codes), SteadyHighShare of email and push high (alerts), the rest
	// normal; its busiest hour carries BusyHourFactor × its average.
	SteadyHighShare float64
	BusyHourFactor  float64
	// SMSMonthlySpendLimitUSD is the account's SNS SMS spend limit
	// (MonthlySpendLimit, a support request): SNS stops sending at it.
	SMSMonthlySpendLimitUSD float64
}

// DefaultProfile is the profile.
func DefaultProfile() Profile {
	return Profile{PerDay: 50e6, AveragePerSecond: 600, PeakPerSecond: 20000, PeakMinutes: 10, CampaignUsers: 10e6,
		DeferredShare: 0.30, SMSShare: 0.05, PushShare: 0.40, Users: 10e6, ZipfS: 1.1, BatchIntakeShare: 0, LambdaConcurrency: 1000,
		CampaignReconcileSeconds: 30, CampaignChunkUploadsPerSecond: 20, ProfileCreatesPerSecond: 50, ProviderRatePerSecond: 500,
		SteadyHighShare: 0.05, BusyHourFactor: 1.5, SMSMonthlySpendLimitUSD: 600000}
}

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
	// Log bytes per line as Herald writes them (JSON, ids only, with the
	// invocation's requestId) and per EMF document (one per dimension set
	// and invocation). A single intake request's accept line is its EMF
	// document (Accepted under its Priority): 453 B for the email kind
	// (reservation.approved, normal), where the two lines were 265 + 190 B;
	// a batch item's accept line is 265 B, the batch's document shared.
	logBytesAcceptDocument = 453
	logBytesAcceptLine     = 265
	logBytesOutcomeLine    = 300
	logBytesEMF            = 320
)

// Route keys of the API requests the model makes.
const (
	routeNotify   = "POST /v1/notifications"
	routeBatch    = "POST /v1/notifications/batch"
	routePutUser  = "PUT /v1/users/{userId}"
	routeUpload   = "POST /v1/campaigns/{id}/recipients"
	routeUnsubGet = "GET /v1/unsubscribe"
	// The kit's refetch on a live message (a broadcast's pace).
	routeInbox = "GET /v1/users/{userId}/inbox"
)

// Kind is one notification kind the model prices.
type Kind struct {
	Name     string
	Type     string
	Priority domain.Priority
	Channels []domain.Channel
	// Limited: counted against the per-user rate limit and the notification
	// budget (not high, not mandatory).
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
	routes      map[string]float64 // API requests by route key
	// traced: the functions with active X-Ray tracing (Limits.Traced).
	traced map[string]bool
}

func (t *tally) api(route string, n float64) {
	t.usage.APIRequests += n
	t.routes[route] += n
}

func newTally() *tally {
	return &tally{write: map[string]map[string]float64{}, read: map[string]map[string]float64{}, routes: map[string]float64{},
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

// invoke counts n invocations of fn, traced when fn's tracing is Active
// (the template's Tracing parameter, PassThrough by default).
func (t *tally) invoke(fn string, n, seconds float64) {
	t.usage.Invocations[fn] += n
	if t.traced[fn] {
		t.usage.TracedInvocations += n
	}
	t.usage.GBSeconds[fn] += n * seconds * apiMemoryGB
}

// model drives the real key and item builders of internal/dynamo.
type model struct {
	store *dynamo.Table
	now   time.Time
	rng   *rand.Rand
	seq   int
	// batch is the channel mappings' BatchSize per priority (the template's).
	batch map[domain.Priority]float64
	// watchEntries is, by watch shape, the size a watch's entries add to
	// its item and index entries (watchKeys).
	watchEntries map[string]dynamo.ItemKeys
	// budgetSizes is, by the length of a user's id, the size of the user's
	// budget item at its largest (budgetSize).
	budgetSizes map[int]int
	// itemSizes is, by shape, the sizes of the notification and delivery
	// items the model builds (sized); verifySizes builds every item in full
	// and fails a run where one differs from its shape's (the tests).
	itemSizes   map[string]dynamo.ItemKeys
	verifySizes bool
}

func newModel(batch map[domain.Priority]float64) *model {
	return &model{store: dynamo.New(nil, "model"), now: time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC), rng: rand.New(rand.NewPCG(14, 14)), batch: batch,
		watchEntries: map[string]dynamo.ItemKeys{}, budgetSizes: map[int]int{}, itemSizes: map[string]dynamo.ItemKeys{}}
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
	keys, err := m.notificationKeys("notify", k, n)
	if err != nil {
		return err
	}
	// Intake: one conditional PutItem (table, inbox and unread indexes).
	switch {
	case k.Campaign != "":
		// A lot's share (campaignFanOut counts the lot's own reads and writes).
		t.invoke("CampaignFunction", 1.0/domain.MaxChunkRecipients, campaignSecondsPerLot)
	case k.Batch:
		t.api(routeBatch, 1.0/100)
		t.invoke("ApiFunction", 1.0/100, apiSecondsPerRequest+100*apiSecondsPerBatchItem)
	default:
		t.api(routeNotify, 1)
		t.invoke("ApiFunction", 1, apiSecondsPerRequest)
	}
	switch {
	case k.Batch:
		t.usage.LogBytes += logBytesAcceptLine + logBytesEMF/100
	case k.Campaign != "":
		t.usage.LogBytes += logBytesAcceptLine + logBytesEMF // as before: not measured here
	default:
		t.usage.LogBytes += logBytesAcceptDocument
	}
	t.w("table", keys.PK, dynamo.WriteUnits(keys.Size))
	t.store(keys.Size)
	for idx, pk := range keys.Index {
		t.w(idx, pk, dynamo.WriteUnits(keys.Sparse[idx]))
		t.store(keys.Sparse[idx]) // the inbox entry (any state) for the whole retention
	}
	// Relay: a share of a batch invocation; one batch read; per channel the
	// rate counter, a deferred delivery (one sent at once is created by the
	// worker's claim) and a share of a SendMessageBatch.
	t.invoke("RelayFunction", 1.0/relayRecordsPerBatch, relaySecondsPerBatch)
	t.usage.LogBytes += logBytesEMF / relayRecordsPerBatch
	if k.RelayReadsProfile {
		// Profile item read (a missing preferences item is not billed by
		// DynamoDB Local; AWS bills a missing item's minimum).
		t.r("table", dynamo.UserPK(user), 1)
	}
	if k.Limited {
		// The notification budget (policy.BudgetOf: never high priority or
		// mandatory): one conditional UpdateItem on U#<user>/BUDGET, no
		// read, the item at its largest (every slot filled).
		t.w("table", dynamo.UserPK(user), dynamo.WriteUnits(m.budgetSize(user)))
	}
	var sent []dynamo.ItemKeys // the deliveries whose messages go out now
	for _, c := range k.Channels {
		if k.Limited {
			t.w("table", dynamo.RateLimitPK(user, c), 1)
		}
		d := domain.DeliveryOf(n, c)
		d.Status, d.UpdatedAt = domain.StatusQueued, m.now
		if !deferTo.IsZero() {
			d.Status, d.Reason, d.DueAt = domain.StatusDeferred, domain.ReasonQuietHours, deferTo
		}
		dk, err := m.deliveryKeys("notify", k, d)
		if err != nil {
			return err
		}
		// With the outcome's attributes and its trail's second step; as much
		// again for its copy in the recipient's history (inbox index, ALL).
		t.store(dk.Size + 60 + trailStepBytes)
		if dk.Index[dynamo.IndexInbox] != "" {
			t.store(dk.Sparse[dynamo.IndexInbox] + 60 + trailStepBytes)
		}
		if !deferTo.IsZero() {
			// Deferred: the relay creates the delivery (and its due entry).
			t.w("table", dk.PK, dynamo.WriteUnits(dk.Size))
			for idx, pk := range dk.Index {
				t.w(idx, pk, dynamo.WriteUnits(dk.Sparse[idx]))
			}
			continue
		}
		// Sent at once: no relay write, the worker's claim creates it.
		m.send(t, k, n, keys, dk, user, c)
		sent = append(sent, dk)
	}
	return m.watch(t, user, k.Priority, k.Channels, sent)
}

// watch is a notification's share of an in-flight watch (recovery.Watch): one
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
	w := recovery.Watch{ID: recovery.NewWatchID(), Priority: p, ArmedAt: m.now, DueAt: m.now.Add(recovery.StuckAfter(p))}
	wk, err := m.watchKeys(w, channels[:len(dks)])
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

// watchKeys is w's item keys and sizes with perWatch notifications' entries
// on channels, as the relay lists them. The entries' part of the item (and
// of each index entry) is the same for every watch of a shape (priority,
// channels: the model's ids are of fixed length), so the full item is built
// once per shape and every other watch adds that part to its own entry-less
// item, whose keys (the id picks the due shard, whose number's length shows
// in the size) are its own.
func (m *model) watchKeys(w recovery.Watch, channels []domain.Channel) (dynamo.ItemKeys, error) {
	const perWatch = relayRecordsPerBatch
	shape := fmt.Sprint(w.Priority, channels)
	part, ok := m.watchEntries[shape]
	if ok {
		// The ids the entries would have taken, drawn all the same: the
		// random stream (users, kinds, deferrals) stays the one a full
		// build draws.
		for range perWatch * len(channels) {
			m.seq++
			m.rng.Uint64()
		}
	}
	own, err := m.store.WatchItemKeys(w)
	if err != nil {
		return own, err
	}
	if ok {
		own.Size += part.Size
		for idx, n := range part.Sparse {
			own.Sparse[idx] += n
		}
		return own, nil
	}
	full := w
	for i := range perWatch {
		for _, c := range channels {
			full.Entries = append(full.Entries, recovery.WatchEntry{NotificationID: fmt.Sprintf("%s-%03d", m.id(), i), Channel: c})
		}
	}
	k, err := m.store.WatchItemKeys(full)
	if err != nil {
		return k, err
	}
	part = dynamo.ItemKeys{Size: k.Size - own.Size, Sparse: map[string]int{}}
	for idx, n := range k.Sparse {
		part.Sparse[idx] = n - own.Sparse[idx]
	}
	m.watchEntries[shape] = part
	return k, nil
}

// budgetSize is the billed size of user's budget item at its largest (every
// slot filled). Its slots are of fixed length and its key is the user's, so
// its size depends only on the length of the id: the item is built once per
// length (a full build, tens of slot strings and a marshal, was the largest
// part of a model run when made for each notification).
func (m *model) budgetSize(user string) int {
	if n, ok := m.budgetSizes[len(user)]; ok {
		return n
	}
	n := dynamo.BudgetItemKeys(user, m.now, policy.BudgetSlots).Size
	m.budgetSizes[len(user)] = n
	return n
}

// notificationKeys is n's item keys and sizes; n is of kind k, built by the
// model's path (notify, release) with notification ids of fixed length.
func (m *model) notificationKeys(path string, k Kind, n *domain.Notification) (dynamo.ItemKeys, error) {
	shape := fmt.Sprint("notification ", path, " ", k.Name, k.Type, k.Priority, k.Channels, n.Status, n.CreatedAt.Unix(), " user ", len(n.Recipient.UserID))
	return m.sized(shape, m.store.NotificationKeys(n), func() (dynamo.ItemKeys, error) { return m.store.NotificationItemKeys(n) })
}

// deliveryKeys is notificationKeys for a delivery of a notification of kind k.
func (m *model) deliveryKeys(path string, k Kind, d *domain.Delivery) (dynamo.ItemKeys, error) {
	shape := fmt.Sprint("delivery ", path, " ", k.Name, k.Type, k.Priority, d.Channel, d.Status, d.Reason, d.DueAt.Unix(), d.UpdatedAt.Unix(), " user ", len(d.UserID))
	return m.sized(shape, m.store.DeliveryKeys(d), func() (dynamo.ItemKeys, error) { return m.store.DeliveryItemKeys(d) })
}

// sized gives keys, an item's own keys, the sizes of its shape: what the
// model varies besides ids of fixed length (the kind, the state, the times,
// the length of the user's id) and the length of each of its keys (a due
// shard's number has one or two digits). The item is built in full once per shape (a marshal of each
// notification and delivery was most of a model run's time under -race).
func (m *model) sized(shape string, keys dynamo.ItemKeys, build func() (dynamo.ItemKeys, error)) (dynamo.ItemKeys, error) {
	shape += fmt.Sprint(" keys ", len(keys.PK))
	for _, idx := range []string{dynamo.IndexInbox, dynamo.IndexDue, dynamo.IndexProfiles} {
		shape += fmt.Sprint(" ", len(keys.Index[idx]))
	}
	known, ok := m.itemSizes[shape]
	if ok && !m.verifySizes {
		keys.Size, keys.Sparse = known.Size, known.Sparse
		return keys, nil
	}
	full, err := build()
	if err != nil {
		return full, err
	}
	if ok && (full.Size != known.Size || !maps.Equal(full.Sparse, known.Sparse)) {
		return full, fmt.Errorf("capacity model: an item of shape %q is %d bytes (%v), its shape's %d (%v)", shape, full.Size, full.Sparse, known.Size, known.Sparse)
	}
	m.itemSizes[shape] = full
	return full, nil
}

// send is the work message's way: queue, worker load, claim, provider,
// outcome.
func (m *model) send(t *tally, k Kind, n *domain.Notification, nk, dk dynamo.ItemKeys, user string, c domain.Channel) {
	batch := m.batch[k.Priority]
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
	// Claim (it creates the delivery, with its lease) and outcome, each with
	// its trail step; each is also a write of the recipient's history (the
	// delivery's entry in the inbox index, every attribute projected).
	t.w("table", dk.PK, dynamo.WriteUnits(dk.Size+40))
	t.w("table", dk.PK, dynamo.WriteUnits(dk.Size+60))
	m.historyWrites(t, dk, 40, 60)
	switch c {
	case domain.ChannelEmail:
		t.usage.Emails++
	case domain.ChannelSMS:
		t.usage.SMS++
	}
}

// trailStepBytes is one step of a delivery's trail as stored (a map of its
// time and state: {"t": "2026-…Z", "s": "sent"}).
const trailStepBytes = 45

// historyWrites adds, for each of a delivery's updates (its size grown by
// extra bytes), the write of its entry in the recipient's history (the
// inbox index's H#<caller>#<user> partition, every attribute projected).
func (m *model) historyWrites(t *tally, dk dynamo.ItemKeys, extra ...int) {
	pk := dk.Index[dynamo.IndexInbox]
	if pk == "" {
		return
	}
	for _, e := range extra {
		t.w(dynamo.IndexInbox, pk, dynamo.WriteUnits(dk.Sparse[dynamo.IndexInbox]+e))
	}
}

// release is the scheduler releasing one deferred delivery; perShard counts
// this second's releases per due partition, which the scheduler paces.
func (m *model) release(t *tally, k Kind, user string, due time.Time, perShard map[int]int, releasePerPartition int) error {
	id := m.id()
	for perShard[dynamo.DuePartitionOf(due, id, k.Channels[0]).Shard] >= releasePerPartition {
		id = m.id()
	}
	perShard[dynamo.DuePartitionOf(due, id, k.Channels[0]).Shard]++
	n := &domain.Notification{ID: id, Type: k.Type, Recipient: domain.Recipient{UserID: user}, Data: k.Data, Priority: k.Priority, CreatedAt: m.now}
	nk, err := m.notificationKeys("release", k, n)
	if err != nil {
		return err
	}
	for _, c := range k.Channels {
		d := domain.DeliveryOf(n, c)
		d.Status, d.DueAt, d.UpdatedAt = domain.StatusDeferred, due, m.now
		dk, err := m.deliveryKeys("release", k, d)
		if err != nil {
			return err
		}
		due := dk.Index[dynamo.IndexDue]
		t.r(dynamo.IndexDue, due, dynamo.ReadUnits(100*dk.Sparse[dynamo.IndexDue], false)/100) // pages of 100
		t.invoke("SchedulerFunction", 1.0/100, schedulerSecondsPerPage)
		t.w("table", dk.PK, dynamo.WriteUnits(dk.Size)) // deferred → planned (the due index untouched: not projected)
		t.usage.SQSRequests += 1.0 / sendsPerBatchCall
		t.w("table", dk.PK, dynamo.WriteUnits(dk.Size))                                                  // planned → queued
		m.historyWrites(t, dk, 0, 0)                                                                     // both, in the history
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
		t.api(routePutUser, 1)
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
		t.api(routeUpload, 1)
		t.invoke("ApiFunction", 1, apiSecondsPerRequest)
		t.w("table", marker.PK, 2*dynamo.WriteUnits(marker.Size))
		t.w("table", chunkIDs.PK, 2*dynamo.WriteUnits(chunkIDs.Size))
		t.w("table", upMeta.PK, 2*dynamo.WriteUnits(upMeta.Size))
	}
	return nil
}

// CostOf prices one notification of kind k with the channel mappings'
// batch sizes per priority (Limits.Batch) and the functions traced
// (Limits.Traced).
func CostOf(k Kind, p Prices, batch map[domain.Priority]float64, traced map[string]bool) (Usage, Cost, error) {
	m := newModel(batch)
	t := newTally()
	t.traced = traced
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
	scaleUsage(&u, n)
	return u, p.PerMillion(u), nil
}

// Peak is one second of a scenario.
type Peak struct {
	Scenario string `json:"scenario"`
	// Busiest partition key's units per second, by "table" or index.
	WriteUnits map[string]PartitionLoad `json:"writeUnits"`
	ReadUnits  map[string]PartitionLoad `json:"readUnits"`
	// Whole-table (and per index) units per second, against the per-table
	// quota and the warm throughput.
	TableWriteUnitsPerSecond float64            `json:"tableWriteUnitsPerSecond"`
	TableReadUnitsPerSecond  float64            `json:"tableReadUnitsPerSecond"`
	IndexWriteUnitsPerSecond map[string]float64 `json:"indexWriteUnitsPerSecond"`
	IndexReadUnitsPerSecond  map[string]float64 `json:"indexReadUnitsPerSecond"`
	// CampaignNotificationsPerSecond: the campaign's fan-out this second
	// (the profile's peak, paced to CampaignFanOutRate).
	CampaignNotificationsPerSecond float64 `json:"campaignNotificationsPerSecond"`
	// LambdaConcurrency by function (arrivals × duration, Little's law).
	LambdaConcurrency    map[string]float64 `json:"lambdaConcurrency"`
	SQSRequestsPerSecond float64            `json:"sqsRequestsPerSecond"`
	APIRequestsPerSecond float64            `json:"apiRequestsPerSecond"`
	// APIRequestsByRoute against each route's throttle.
	APIRequestsByRoute map[string]float64 `json:"apiRequestsByRoute"`
}

// PartitionLoad is the busiest key and its units per second.
type PartitionLoad struct {
	Key   string  `json:"key"`
	Units float64 `json:"units"`
}

// Check is one limit the model compares a figure with.
type Check struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Limit float64 `json:"limit"`
	// Max: Value must not exceed Limit (else at least Limit).
	Max bool `json:"max"`
	OK  bool `json:"pass"`
	// Figures are the figures a named check of the seed profile is made
	// of (seed.go); Value and Limit are then its binding pair, which
	// Detail names.
	Figures map[string]float64 `json:"figures,omitempty"`
	Detail  string             `json:"detail,omitempty"`
}

// Drain is a campaign's drain per channel.
type Drain struct {
	Recipients float64 `json:"recipients"`
	// PerSecond is what the low-priority pollers, the send quota and the
	// fan-out allow together; QuotaPerSecond the send quota alone: low's
	// effective rate, or what the whole effective rate leaves once the
	// day's high and normal traffic (SteadyPerSecond) is sent, whichever is
	// less. LowRate and WholeRate are the limiter's effective rates the
	// model used (policy.SendQuota.EffectiveRate: sendQuota checks them).
	PerSecond       float64 `json:"perSecond"`
	QuotaPerSecond  float64 `json:"quotaPerSecond"`
	LowRate         float64 `json:"lowRate"`
	WholeRate       float64 `json:"wholeRate"`
	SteadyPerSecond float64 `json:"steadyPerSecond"`
	Hours           float64 `json:"hours"`
	MinimumHours    float64 `json:"minimumHours"`
}

// Result is the model's answer.
type Result struct {
	Profile                         Profile `json:"profile"`
	Limits                          Limits  `json:"limits"`
	Peaks                           []Peak  `json:"seconds"`
	MaxPartitionWriteUnitsPerSecond float64 `json:"maxPartitionWriteUnitsPerSecond"`
	MaxPartitionReadUnitsPerSecond  float64 `json:"maxPartitionReadUnitsPerSecond"`
	TableWriteUnitsPerSecond        float64 `json:"tableWriteUnitsPerSecond"`
	TableReadUnitsPerSecond         float64 `json:"tableReadUnitsPerSecond"`
	// WriteUnitsPerCampaignNotification: the table's (and indexes') write
	// units one more campaign notification per second costs; a peak of P/s
	// unpaced needs P × this on top of the average second (README).
	WriteUnitsPerCampaignNotification float64 `json:"writeUnitsPerCampaignNotification"`
	// CampaignFixedWriteUnitsPerSecond: a running campaign's cost whatever
	// its pace (reconciles of every pending lot, uploads to a draft);
	// AverageWriteUnitsPerSecond the average second's (table and indexes).
	CampaignFixedWriteUnitsPerSecond float64          `json:"campaignFixedWriteUnitsPerSecond"`
	AverageWriteUnitsPerSecond       float64          `json:"averageWriteUnitsPerSecond"`
	CampaignDrainHours               float64          `json:"campaignDrainHours"`
	CampaignDrainMinimumHours        float64          `json:"campaignDrainMinimumHours"`
	CampaignDrain                    map[string]Drain `json:"campaignDrain"`
	// CampaignLotSeconds: how long one lot of 1,000 takes at its share of
	// the fan-out rate (against the campaign function's timeout).
	CampaignLotSeconds       float64            `json:"campaignLotSeconds"`
	Checks                   []Check            `json:"checks"`
	LimitsExceeded           []string           `json:"limitsExceeded"`
	CostPerMillionUSD        map[string]float64 `json:"costPerMillionUSD"`
	ProviderFeePerMillionUSD map[string]float64 `json:"providerFeePerMillionUSD"`
	// StoragePerMillionUSD is DynamoDB storage over the retention period,
	// beside the cost like the provider fee.
	StoragePerMillionUSD map[string]float64 `json:"storagePerMillionUSD"`
	Cost                 map[string]Cost    `json:"cost"`
	// EventsPerMillionUSD is what delivery events add per million
	// notifications of each kind, by DeliveryEvents mode (none, failures:
	// nothing on the nominal path, all); EventsPerMillionFailuresUSD what
	// failures add per million failed deliveries under failures or all.
	EventsPerMillionUSD         map[string]map[string]float64 `json:"eventsPerMillionUSD"`
	EventsPerMillionFailuresUSD float64                       `json:"eventsPerMillionFailuresUSD"`
	// Live is the live inbox's cost (WebSocket messages, connection
	// minutes, the poster's reads).
	Live LiveCost `json:"live"`
	// LiveBroadcast is one announcement's broadcast to the profile's
	// online users at LiveBroadcastRate.
	LiveBroadcast LiveBroadcast `json:"liveBroadcast"`
	// DeferredReconcile is a deferred campaign lot's reconciles per day.
	DeferredReconcile DeferredReconcile `json:"deferredReconcile"`
	// Failover is provider failover's breaker reads and writes, healthy and
	// in an outage, and the secondary's quota (failover.go).
	Failover FailoverCost `json:"failover"`
	// Topics are the topic sends of TopicSubscriberCounts, by subscriber
	// count (topics.go).
	Topics map[string]TopicSend `json:"topics"`
	// Seed is the figures of the seed profile's named checks (seed.go).
	Seed Seed `json:"seed"`
	// Peak is the peak fanned out unpaced (PeakRun; the CLI adds it).
	Peak   *PeakScenario `json:"peak20k,omitempty"`
	Prices Prices        `json:"prices"`
	// ReservedConcurrencyAdvice: what to reserve once the account's Lambda
	// quota is raised (reserve.go).
	ReservedConcurrencyAdvice ReservationAdvice `json:"reservedConcurrencyAdvice"`
}

// check records a check and, when it fails, the limit exceeded.
func (res *Result) check(name string, value, limit float64, max bool, msg string) {
	ok := value <= limit
	if !max {
		ok = value >= limit
	}
	res.Checks = append(res.Checks, Check{Name: name, Value: round2(value), Limit: round2(limit), Max: max, OK: ok})
	if !ok {
		res.LimitsExceeded = append(res.LimitsExceeded, msg)
	}
}

// checkPeak makes a simulated second's checks against the limits: each
// partition, the table and each index as a whole (the per-table quota and
// the warm throughput a new stack's table has), Lambda concurrency, each
// route's throttle and the account's. It reads only the second's figures, so
// a test checks other limits against one run's seconds without simulating
// them again.
func (res *Result) checkPeak(p Profile, l Limits, pk Peak) {
	name := pk.Scenario
	for where, u := range pk.WriteUnits {
		res.MaxPartitionWriteUnitsPerSecond = math.Max(res.MaxPartitionWriteUnitsPerSecond, u.Units)
		if u.Units > PartitionWriteUnitsPerSecond {
			res.LimitsExceeded = append(res.LimitsExceeded, fmt.Sprintf("%s: %s partition %s takes %.0f WCU/s > %d", name, where, u.Key, u.Units, PartitionWriteUnitsPerSecond))
		}
	}
	for where, u := range pk.ReadUnits {
		res.MaxPartitionReadUnitsPerSecond = math.Max(res.MaxPartitionReadUnitsPerSecond, u.Units)
		if u.Units > PartitionReadUnitsPerSecond {
			res.LimitsExceeded = append(res.LimitsExceeded, fmt.Sprintf("%s: %s partition %s takes %.0f RCU/s > %d", name, where, u.Key, u.Units, PartitionReadUnitsPerSecond))
		}
	}
	for _, write := range []bool{true, false} {
		units, kind := map[string]float64{"table": pk.TableReadUnitsPerSecond}, "read"
		maps.Copy(units, pk.IndexReadUnitsPerSecond)
		if write {
			units, kind = map[string]float64{"table": pk.TableWriteUnitsPerSecond}, "write"
			maps.Copy(units, pk.IndexWriteUnitsPerSecond)
		}
		for _, where := range slices.Sorted(maps.Keys(units)) {
			u := units[where]
			res.check(name+": "+where+" "+kind+" units/s vs per-table quota", u, l.tableQuota(write), true,
				fmt.Sprintf("%s: %s takes %.0f %s units/s > the per-table quota %.0f (raise the quota)", name, where, u, kind, l.tableQuota(write)))
			res.check(name+": "+where+" "+kind+" units/s vs warm throughput", u, l.warm(where, write), true,
				fmt.Sprintf("%s: %s takes %.0f %s units/s > its warm throughput %.0f (a new table throttles: set WarmThroughput)", name, where, u, kind, l.warm(where, write)))
		}
	}
	res.TableWriteUnitsPerSecond = math.Max(res.TableWriteUnitsPerSecond, pk.TableWriteUnitsPerSecond)
	res.TableReadUnitsPerSecond = math.Max(res.TableReadUnitsPerSecond, pk.TableReadUnitsPerSecond)
	total := 0.0
	for _, c := range pk.LambdaConcurrency {
		total += c
	}
	if total > float64(p.LambdaConcurrency) {
		res.LimitsExceeded = append(res.LimitsExceeded, fmt.Sprintf("%s: Lambda concurrency %.0f > account limit %d", name, total, p.LambdaConcurrency))
	}
	// API throttling: each route's demand with headroom under its
	// throttle; the whole API under the account's.
	for _, route := range slices.Sorted(maps.Keys(pk.APIRequestsByRoute)) {
		n := pk.APIRequestsByRoute[route]
		res.check(name+": "+route+" requests/s × headroom vs route throttle", n*apiHeadroom, l.routeLimit(route), true,
			fmt.Sprintf("%s: %s takes %.0f requests/s, its throttle %.0f/s leaves less than ×%.0f headroom (ApiThrottlingRateLimit)", name, route, n, l.routeLimit(route), apiHeadroom))
	}
	res.check(name+": HTTP API requests/s vs account throttle", pk.APIRequestsPerSecond, HTTPAPIRequestsPerSecond, true,
		fmt.Sprintf("%s: HTTP API %.0f requests/s > %d", name, pk.APIRequestsPerSecond, HTTPAPIRequestsPerSecond))
}

// Run runs the model with the template's limits: the cost of each kind, and
// three seconds of the profile (an average second; a second of the campaign,
// paced to the fan-out rate, with the day's deferrals landing in the due
// index; the 08:00 release at full speed while the average traffic
// continues), each simulated notification by notification through the real
// key and item builders; then the campaign's drain time and the limits that
// are not per second (reserved concurrency, retention, stream record age).
func Run(p Profile, l Limits) (Result, error) { return run(p, l, false) }

// run is Run; verifySizes builds every notification and delivery item in
// full and fails on one whose size is not its shape's (model.sized).
func run(p Profile, l Limits, verifySizes bool) (Result, error) {
	res := Result{Profile: p, Limits: l, CostPerMillionUSD: map[string]float64{}, ProviderFeePerMillionUSD: map[string]float64{}, StoragePerMillionUSD: map[string]float64{},
		Cost: map[string]Cost{}, Prices: ListPrices, LimitsExceeded: []string{}, Checks: []Check{}, CampaignDrain: map[string]Drain{},
		EventsPerMillionUSD: map[string]map[string]float64{}, EventsPerMillionFailuresUSD: EventCostPerMillionFailures(ListPrices),
		Live: LiveCosts(ListPrices, DefaultLiveProfile())}
	res.LiveBroadcast = LiveBroadcastCost(ListPrices, res.Live.Profile, float64(p.Users), l.LiveBroadcastRate)
	dr, err := DeferredReconcileCost(ListPrices, p)
	if err != nil {
		return res, err
	}
	res.DeferredReconcile = dr
	for _, k := range Kinds() {
		_, c, err := CostOf(k, ListPrices, l.Batch, l.Traced)
		if err != nil {
			return res, err
		}
		res.CostPerMillionUSD[k.Name] = round2(c.Total)
		res.ProviderFeePerMillionUSD[k.Name] = round2(c.ProviderFee)
		res.StoragePerMillionUSD[k.Name] = round2(c.Storage)
		res.Cost[k.Name] = c
		res.EventsPerMillionUSD[k.Name] = EventsPerMillion(k, ListPrices)
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
	m := newModel(l.Batch)
	m.verifySizes = verifySizes
	zipf := rand.NewZipf(m.rng, p.ZipfS, 1, uint64(p.Users-1))
	eight := time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC)
	// Release rate: every shard of the 08:00 bucket at the scheduler's pace
	// (its share of SchedulerReleaseRate).
	releasePerPartition := l.partitionReleaseRate()
	releasePerSecond := math.Min(float64(dynamo.DueShards*releasePerPartition), p.PerDay*p.DeferredShare)
	// The campaign's fan-out is paced to CampaignFanOutRate (batch intake is not).
	campaignRate := p.PeakPerSecond
	if p.BatchIntakeShare < 1 {
		campaignRate = math.Min(p.PeakPerSecond, p.PeakPerSecond*p.BatchIntakeShare+l.CampaignFanOutRate)
	}
	scenarios := []struct {
		name                   string
		campaign, releases     float64
		deferredShareOfCampain float64
	}{
		{name: "average second", campaign: 0},
		{name: fmt.Sprintf("campaign second (%.0f/s low, 30%% deferred to 08:00)", campaignRate), campaign: campaignRate, deferredShareOfCampain: p.DeferredShare},
		{name: "08:00 release of the deferred share", releases: releasePerSecond},
	}
	for _, sc := range scenarios {
		t := newTally()
		t.traced = l.Traced
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
			if err := m.release(t, mix(m.rng, true), fmt.Sprintf("r%d", i), eight, perShard, releasePerPartition); err != nil {
				return res, err
			}
		}
		pk := Peak{Scenario: sc.name, WriteUnits: busiest(t.write), ReadUnits: busiest(t.read), LambdaConcurrency: map[string]float64{},
			SQSRequestsPerSecond: round2(t.usage.SQSRequests), APIRequestsPerSecond: round2(t.usage.APIRequests),
			IndexWriteUnitsPerSecond: map[string]float64{}, IndexReadUnitsPerSecond: map[string]float64{}, APIRequestsByRoute: map[string]float64{},
			CampaignNotificationsPerSecond: sc.campaign}
		for fn, gbs := range t.usage.GBSeconds {
			pk.LambdaConcurrency[fn] = math.Ceil(gbs / apiMemoryGB)
		}
		for where, u := range t.usage.WriteUnits {
			if where == "table" {
				pk.TableWriteUnitsPerSecond = round2(u)
			} else {
				pk.IndexWriteUnitsPerSecond[where] = round2(u)
			}
		}
		for where, u := range t.usage.ReadUnits {
			if where == "table" {
				pk.TableReadUnitsPerSecond = round2(u)
			} else {
				pk.IndexReadUnitsPerSecond[where] = round2(u)
			}
		}
		for route, n := range t.routes {
			pk.APIRequestsByRoute[route] = round2(n)
		}
		res.checkPeak(p, l, pk)
		res.Peaks = append(res.Peaks, pk)
	}
	// What one more campaign notification per second costs the table and
	// its indexes (its items, deliveries, claims and outcomes, its lot's
	// share), and what a running campaign costs whatever its pace (every
	// pending lot's reconciles, uploads to a draft).
	one := newTally()
	one.traced = l.Traced
	for i := range domain.MaxChunkRecipients {
		var due time.Time
		if m.rng.Float64() < p.DeferredShare {
			due = eight
		}
		k := mix(m.rng, true)
		k.Batch, k.Campaign = false, peakCampaign
		if err := m.notify(one, k, fmt.Sprintf("one%d", i), due); err != nil {
			return res, err
		}
	}
	lotOnly := p
	lotOnly.CampaignUsers, lotOnly.CampaignChunkUploadsPerSecond = 0, 0
	if err := m.campaignFanOut(one, lotOnly, domain.MaxChunkRecipients); err != nil {
		return res, err
	}
	sum := func(m map[string]float64) float64 {
		s := 0.0
		for _, u := range m {
			s += u
		}
		return s
	}
	res.WriteUnitsPerCampaignNotification = round2(sum(one.usage.WriteUnits) / domain.MaxChunkRecipients)
	if len(res.Peaks) > 1 {
		all := func(pk Peak) float64 { return pk.TableWriteUnitsPerSecond + sum(pk.IndexWriteUnitsPerSecond) }
		res.CampaignFixedWriteUnitsPerSecond = round2(all(res.Peaks[1]) - all(res.Peaks[0]) - campaignRate*res.WriteUnitsPerCampaignNotification)
		res.AverageWriteUnitsPerSecond = round2(all(res.Peaks[0]))
	}
	res.checkLimits(p, l)
	busiest := res.Peaks[0]
	for _, pk := range res.Peaks {
		if pk.TableWriteUnitsPerSecond > busiest.TableWriteUnitsPerSecond {
			busiest = pk
		}
	}
	res.checkSeed(p, l, busiest, domain.CampaignPriority)
	fo, err := FailoverCosts(p, l, failover.DefaultRules, ListPrices)
	if err != nil {
		return res, err
	}
	res.Failover = fo
	res.checkFailover(fo)
	if res.Topics, err = topicSends(p, l, res.Peaks[0]); err != nil {
		return res, err
	}
	res.checkTopics(l)
	advice, err := adviseReservations(p, l, res.Peaks)
	res.ReservedConcurrencyAdvice = advice
	return res, err
}

// checkLimits: the unsubscribe routes' low throttle, the campaign's drain and
// lot time, the work queues' retention against the drain, reserved
// concurrency, and the stream mappings' record age.
func (res *Result) checkLimits(p Profile, l Limits) {
	for _, route := range []string{routeUnsubGet, "POST /v1/unsubscribe"} {
		res.check(route+" throttle stays below the default route throttle", l.routeLimit(route), l.RouteRateLimit, true,
			fmt.Sprintf("%s: throttle %.0f/s is not below the API's %.0f/s: it protects nothing", route, l.routeLimit(route), l.RouteRateLimit))
	}
	res.check("route burst vs account burst", l.RouteBurstLimit, HTTPAPIBurst, true,
		fmt.Sprintf("route burst %.0f > the account's %d", l.RouteBurstLimit, HTTPAPIBurst))
	res.checkLive(l)

	// Drain: per channel, the campaign's recipients over what the low
	// pollers, the send quota (with the day's own traffic sent first) and
	// the fan-out let through; channels drain in parallel. The minimum is
	// the send quota alone.
	res.CampaignDrain = campaignDrain(p, l, effectiveRates(l))
	for _, d := range res.CampaignDrain {
		res.CampaignDrainHours = math.Max(res.CampaignDrainHours, d.Hours)
		res.CampaignDrainMinimumHours = math.Max(res.CampaignDrainMinimumHours, d.MinimumHours)
	}
	res.check("campaignDrainHours within 10% of the quota-bound minimum", res.CampaignDrainHours, res.CampaignDrainMinimumHours*drainTolerance, true,
		fmt.Sprintf("a %d-recipient campaign drains in %.1f h, more than 10%% over the %.1f h the send quota leaves it (raise LowBatchSize / LowMaximumConcurrency / CampaignFanOutRate)",
			p.CampaignUsers, res.CampaignDrainHours, res.CampaignDrainMinimumHours))
	// A lot paces its 1,000 notifications to its share of the fan-out
	// rate (CampaignMaximumConcurrency invocations × their parallel
	// messages): it must finish well within the function's timeout.
	perLot := l.CampaignFanOutRate / (l.CampaignMaxConcurrency * campaign.ParallelMessages)
	res.CampaignLotSeconds = round2(domain.MaxChunkRecipients / perLot)
	res.check("campaign lot seconds vs half the campaign function's timeout", res.CampaignLotSeconds, l.CampaignTimeoutSeconds/2, true,
		fmt.Sprintf("a lot takes %.0f s at %.1f notifications/s, over half the campaign function's %.0f s timeout (raise CampaignFanOutRate or lower CampaignMaximumConcurrency)",
			res.CampaignLotSeconds, perLot, l.CampaignTimeoutSeconds))
	// Work queues keep a message longer than the longest planned backlog.
	for _, q := range slices.Sorted(maps.Keys(l.QueueRetention)) {
		res.check(q+" retention vs twice the campaign's drain", l.QueueRetention[q], res.CampaignDrainHours*3600*retentionOverDrain, false,
			fmt.Sprintf("%s keeps messages %.0f h, less than twice the campaign's %.1f h drain: a backlog would expire unseen", q, l.QueueRetention[q]/3600, res.CampaignDrainHours))
		res.check(q+" retention vs the SQS maximum", l.QueueRetention[q], SQSMaxRetentionSeconds, true,
			fmt.Sprintf("%s: retention %.0f s > SQS's %d", q, l.QueueRetention[q], SQSMaxRetentionSeconds))
	}
	// Reserved concurrency: every function with mappings gets at least
	// their MaximumConcurrency, and the sum leaves Lambda's 100 unreserved.
	sum := 0.0
	for _, fn := range slices.Sorted(maps.Keys(l.Reserved)) {
		sum += l.Reserved[fn]
		if need, ok := l.MappingConcurrency[fn]; ok {
			res.check(fn+" reserved concurrency vs its mappings' MaximumConcurrency", l.Reserved[fn], need, false,
				fmt.Sprintf("%s: reserved concurrency %.0f < its mappings' MaximumConcurrency %.0f: its pollers would be throttled", fn, l.Reserved[fn], need))
		}
	}
	res.check("reserved concurrency sum vs the account's pool less 100 unreserved", sum, float64(p.LambdaConcurrency-LambdaUnreservedConcurrencyMinimum), true,
		fmt.Sprintf("reserved concurrency %.0f leaves fewer than %d of the account's %d unreserved", sum, LambdaUnreservedConcurrencyMinimum, p.LambdaConcurrency))
	// Stream records: never discarded for their age.
	for _, id := range slices.Sorted(maps.Keys(l.StreamRecordAge)) {
		res.check(id+" MaximumRecordAgeInSeconds is -1 (a backlog is relayed late, never discarded)", l.StreamRecordAge[id], -1, true,
			fmt.Sprintf("%s: MaximumRecordAgeInSeconds %.0f discards every record of a longer lag to the DLQ", id, l.StreamRecordAge[id]))
	}
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
