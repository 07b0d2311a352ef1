// Package relay turns new notifications (DynamoDB stream INSERTs) into
// per-channel deliveries: it applies the delivery policy (preferences,
// contacts, expiry, sendAt, quiet hours, rate limits, digests), records each
// delivery's first state with a conditional write and puts ids-only work
// messages on the channel queues.
//
// Idempotence rule: a channel sent at once gets no item here: its work
// message goes out and the worker's claim creates the delivery (GET derives
// `queued` from the notification's plan meanwhile). A skipped, dropped or
// deferred (or digested) delivery is created once, with a conditional put,
// in its state. A retried stream record sends the message of a channel sent
// at once again (the worker's claim lets only one of two messages through
// and a duplicate finds the delivery claimed or final), and finds any other
// delivery and writes nothing; it sends that one's message again only while
// it is still queued (or planned) and unclaimed (awaitsMessage), as after a
// release by the scheduler. The table lookups that precede
// the delivery's creation are idempotent per notification too: the rate-limit
// counter remembers which notifications it counted, and a digest remembers its
// leader and members (see internal/dynamo), so a retry neither counts twice
// nor changes its digest role.
//
// Reads: one batch read (BatchGetItem, 100 keys a call) for the existing
// deliveries of every record (a retried record skips what is past planning
// without writing) and the profiles of the users whose decisions need one but
// not their push subscriptions; a user whose push channel needs a decision
// has their partition queried once per batch instead (subscriptions are a
// range of items a batch read cannot name). Records of the same user are
// planned in stream order (the first of a burst opens the digest and the rate
// limit skips the last ones), different users in parallel. All work messages
// of the batch then go out together: SendMessageBatch grouped per queue, ten
// per call, the calls in parallel.
package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/live"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/policy"
	"github.com/heraldhq/herald/internal/recovery"
)

// Store is what the relay needs from the table.
type Store interface {
	// ReadPlanning reads which of the deliveries exist and the profiles of
	// users, without their push subscriptions (a user with no profile gets an
	// empty one).
	ReadPlanning(ctx context.Context, deliveries []domain.DeliveryKey, users []string) (map[domain.DeliveryKey]domain.Delivery, map[string]*domain.RecipientProfile, error)
	// GetRecipientProfile reads a user's profile with the push subscriptions.
	GetRecipientProfile(ctx context.Context, userID string) (*domain.RecipientProfile, error)
	CreateDelivery(ctx context.Context, d *domain.Delivery) (*domain.Delivery, error)
	Transition(ctx context.Context, id string, ch domain.Channel, c domain.Change) (*domain.Delivery, error)
	// CountDelivery counts a notification against a user's limit on a channel
	// in one fixed window and reports whether it is within the limit. Counting
	// the same notification again reports the first answer without counting.
	CountDelivery(ctx context.Context, userID string, c domain.Channel, windowStart time.Time, window time.Duration, limit int, notificationID string) (bool, error)
	// JoinDigest opens or joins the digest of a key; asking again for the same
	// notification gives the same role.
	JoinDigest(ctx context.Context, req domain.DigestRequest) (domain.DigestOutcome, error)
	// ArmWatch records an in-flight watch (recovery.Watch) over deliveries
	// whose messages are about to go out.
	ArmWatch(ctx context.Context, w recovery.Watch) error
	// NoteRelayFailure records what a redrive needs of a record reported
	// for retry (Failure); writing it again overwrites it.
	NoteRelayFailure(ctx context.Context, f recovery.RelayFailure) error
	BudgetStore
}

// BudgetStore counts notifications against users' budgets (dynamo.Budgets).
type BudgetStore interface {
	// CountBudget counts a notification accepted at `accepted` against the
	// user's budget, remembering the last `slots` counted, and reports
	// whether it is within; counting the same notification again reports
	// the first answer without counting. Over budget, the answer carries the
	// history (policy.BudgetFreesAt).
	CountBudget(ctx context.Context, userID, notificationID string, accepted time.Time, b domain.Budget, slots int) (domain.BudgetCount, error)
}

// Publisher sends work messages; one error slot per item.
type Publisher interface {
	Publish(ctx context.Context, items []domain.WorkItem) []error
}

// EventSink publishes the events of the records that are not new
// notifications (delivery and campaign state changes); it returns the
// indexes (into its argument) of the records to retry, which it reports only
// when their events could neither be published nor parked.
type EventSink interface {
	Handle(ctx context.Context, recs []events.DynamoDBEventRecord) []int
}

// DecodeFunc turns a stream image into a notification, or nil when the item is
// not a notification.
type DecodeFunc func(map[string]events.DynamoDBAttributeValue) (*domain.Notification, error)

// Handler is the relay Lambda handler.
type Handler struct {
	store       Store
	pub         Publisher
	decode      DecodeFunc
	catalog     *catalog.Catalog
	now         func() time.Time
	log         *slog.Logger
	limits      policy.Limits
	concurrency int
	metrics     metrics.Recorder
	events      EventSink
	live        live.Notifier
}

// Deps are the relay's collaborators and settings. Store, Publisher, Decode,
// Catalog, Now and Log are required; the others have documented zero values.
type Deps struct {
	Store     Store
	Publisher Publisher
	Decode    DecodeFunc
	Catalog   *catalog.Catalog
	Now       func() time.Time
	Log       *slog.Logger
	// Limits are the per-user channel rate limits; the zero value (no
	// Window) means policy.DefaultLimits.
	Limits policy.Limits
	// Concurrency bounds how many users' records, and how many queued
	// transitions, are processed at once; 0 means 16.
	Concurrency int
	// Metrics counts planned outcomes (Enqueued, Deferred, Skipped, Dropped
	// by channel, priority and reason), flushed once per invocation; nil
	// records nothing.
	Metrics metrics.Recorder
	// Events receives every record that is not a new notification (the
	// bulk mapping's filter lets delivery and campaign state changes
	// through); nil ignores them.
	Events EventSink
	// Live hears of every new notification (an inbox item created): one
	// call per batch, alongside the relay's work and never failing it; nil
	// notifies nothing.
	Live live.Notifier
}

// New wires a relay handler.
func New(d Deps) *Handler {
	h := &Handler{store: d.Store, pub: d.Publisher, decode: d.Decode, catalog: d.Catalog, now: d.Now, log: d.Log,
		limits: d.Limits, concurrency: d.Concurrency, metrics: d.Metrics, events: d.Events, live: d.Live}
	if h.live == nil {
		h.live = live.NopNotifier{}
	}
	if h.limits.Window == 0 {
		h.limits = policy.DefaultLimits()
	}
	if h.concurrency <= 0 {
		h.concurrency = 16
	}
	if h.metrics == nil {
		h.metrics = metrics.Nop{}
	}
	return h
}

// job is one notification record of the batch.
type job struct {
	record       int
	n            *domain.Notification
	typ          *catalog.Type
	needsProfile bool // policy.NeedsProfile, decided once
}

// pending is a planned delivery waiting for its work message.
type pending struct {
	record int
	item   domain.WorkItem
}

// Handle processes a batch of stream records and reports the sequence numbers
// of the records that must be retried. It never fails the whole batch.
func (h *Handler) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	defer h.metrics.Flush(ctx)
	recs := ev.Records
	failed := make([]atomic.Bool, len(recs))

	// Decode, and group the notifications by recipient in stream order.
	var groups [][]job
	groupOf := map[string]int{}
	var others []int                             // records that are not new notifications: events
	notificationIDs := make([]string, len(recs)) // for the failure notes
	var created []live.Event
	for i, rec := range recs {
		n, err := h.decodeRecord(rec)
		if err != nil {
			h.recordFailed(ctx, rec, nil, "decode", err)
			failed[i].Store(true)
			continue
		}
		if n == nil {
			others = append(others, i)
			continue
		}
		notificationIDs[i] = n.ID
		created = append(created, live.Event{UserID: n.Recipient.UserID, Kind: live.KindCreated, ID: n.ID})
		typ, ok := h.catalog.Lookup(n.Type)
		if !ok {
			// Intake validated the type; a type removed since cannot be delivered.
			h.log.WarnContext(ctx, "notification type no longer in catalog", "notificationId", n.ID, "type", n.Type)
			continue
		}
		g, ok := groupOf[n.Recipient.UserID]
		if !ok {
			g = len(groups)
			groupOf[n.Recipient.UserID] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], job{record: i, n: n, typ: typ, needsProfile: policy.NeedsProfile(n, typ)})
	}

	// Events are published alongside the relay's work, never in its way.
	eventsDone := make(chan struct{})
	go func() {
		defer close(eventsDone)
		if h.events == nil || len(others) == 0 {
			return
		}
		sub := make([]events.DynamoDBEventRecord, len(others))
		for k, i := range others {
			sub[k] = recs[i]
		}
		for _, k := range h.events.Handle(ctx, sub) {
			failed[others[k]].Store(true)
		}
	}()

	// The live inbox hears of the batch's new inbox items, alongside the
	// relay's work; its failure is logged and dropped (the inbox stays
	// the truth).
	liveDone := make(chan struct{})
	go func() {
		defer close(liveDone)
		if len(created) == 0 {
			return
		}
		if err := h.live.Notify(ctx, created); err != nil {
			h.log.WarnContext(ctx, "live notify failed; dropped", "notifications", len(created), "error", err)
		}
	}()

	st, err := h.readBatch(ctx, groups)
	if err != nil {
		for _, g := range groups {
			for _, j := range g {
				h.recordFailed(ctx, recs[j.record], j.n, "read", err)
				failed[j.record].Store(true)
			}
		}
		groups = nil
	}

	// Plan: one user's records in order, users in parallel.
	planned := make([][]pending, len(recs))
	h.parallel(len(groups), func(g int) {
		profiles := profileOnce{store: h.store, userID: groups[g][0].n.Recipient.UserID, profile: st.profiles[groups[g][0].n.Recipient.UserID]}
		for _, j := range groups[g] {
			var err error
			if planned[j.record], err = h.plan(ctx, j, &profiles, st.existing); err != nil {
				h.recordFailed(ctx, recs[j.record], j.n, "plan", err)
				failed[j.record].Store(true)
			}
		}
	})

	// Send every work message of the batch at once, then record queued.
	var toSend []pending
	for _, p := range planned {
		toSend = append(toSend, p...)
	}
	// The watches first (one per priority): whatever becomes of a message
	// (a purged queue, a crash), the scheduler finds its delivery. A record
	// whose watch is not recorded sends nothing and is retried.
	toSend = h.armWatches(ctx, recs, toSend, failed)
	if len(toSend) > 0 {
		items := make([]domain.WorkItem, len(toSend))
		for i, p := range toSend {
			items[i] = p.item
		}
		errs := h.pub.Publish(ctx, items)
		h.parallel(len(toSend), func(i int) {
			p := toSend[i]
			m := p.item.Message
			if errs[i] != nil {
				h.log.ErrorContext(ctx, "enqueue failed", "notificationId", m.NotificationID, "channel", m.Channel, "priority", p.item.Priority,
					"sequenceNumber", recs[p.record].Change.SequenceNumber, "error", errs[i])
				failed[p.record].Store(true)
				return
			}
			// Debug: the worker logs every delivery's outcome; one line per
			// queued delivery here was a third of the bytes logged per email.
			h.log.DebugContext(ctx, "delivery planned", "notificationId", m.NotificationID, "channel", m.Channel, "priority", p.item.Priority, "outcome", domain.StatusQueued)
			h.metrics.Add(ctx, metrics.Enqueued, metrics.Dims{Channel: m.Channel, Priority: p.item.Priority}, 1)
		})
	}

	<-eventsDone
	<-liveDone
	var resp events.DynamoDBEventResponse
	var retry []int
	for i := range failed {
		if failed[i].Load() {
			retry = append(retry, i)
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: recs[i].Change.SequenceNumber})
		}
	}
	h.noteFailures(ctx, recs, retry, notificationIDs)
	return resp, nil
}

// noteFailures records a failure note (Failure) for each record
// reported for retry: should Lambda give up on it, its on-failure record
// names only the shard and sequence numbers, and `herald dlq redrive relay`
// finds the notifications from these notes instead of reading the stream
// (a third reader of its shards). A note that cannot be written is logged;
// the record is retried all the same, and the log line `relay record
// failed` names its notification.
func (h *Handler) noteFailures(ctx context.Context, recs []events.DynamoDBEventRecord, retry []int, notificationIDs []string) {
	h.parallel(len(retry), func(k int) {
		rec := recs[retry[k]]
		f := recovery.RelayFailure{SequenceNumber: rec.Change.SequenceNumber, At: rec.Change.ApproximateCreationDateTime.UTC(),
			PK: keyString(rec.Change.Keys, "pk"), SK: keyString(rec.Change.Keys, "sk"), NotificationID: notificationIDs[retry[k]]}
		if err := h.store.NoteRelayFailure(ctx, f); err != nil {
			h.log.ErrorContext(ctx, "relay failure note not recorded", "sequenceNumber", f.SequenceNumber, "notificationId", f.NotificationID, "error", err)
		}
	})
}

func keyString(keys map[string]events.DynamoDBAttributeValue, name string) string {
	if v, ok := keys[name]; ok && v.DataType() == events.DataTypeString {
		return v.String()
	}
	return ""
}

// armWatches arms the in-flight watches of the messages about to go out and
// returns those whose watch is recorded; the records of the others fail.
func (h *Handler) armWatches(ctx context.Context, recs []events.DynamoDBEventRecord, toSend []pending, failed []atomic.Bool) []pending {
	if len(toSend) == 0 {
		return nil
	}
	items := make([]domain.WorkItem, len(toSend))
	for i, p := range toSend {
		items[i] = p.item
	}
	bad := map[domain.Priority]bool{}
	for _, w := range recovery.NewWatches(items, h.now()) {
		if err := h.store.ArmWatch(ctx, w); err != nil {
			h.log.ErrorContext(ctx, "arm watch failed", "watch", w.ID, "priority", w.Priority, "error", err)
			bad[w.Priority] = true
		}
	}
	if len(bad) == 0 {
		return toSend
	}
	var out []pending
	for _, p := range toSend {
		if bad[p.item.Priority] {
			h.recordFailed(ctx, recs[p.record], nil, "watch", fmt.Errorf("watch not recorded"))
			failed[p.record].Store(true)
			continue
		}
		out = append(out, p)
	}
	return out
}

// batchState is what planning reads about the whole batch up front.
type batchState struct {
	existing map[domain.DeliveryKey]domain.Delivery
	profiles map[string]*domain.RecipientProfile // without push subscriptions
}

// readBatch reads, in one batch read, which deliveries of the batch exist
// and the profiles of the users whose decisions need one but not their push
// subscriptions (those users are queried while planning).
func (h *Handler) readBatch(ctx context.Context, groups [][]job) (batchState, error) {
	var keys []domain.DeliveryKey
	var users []string
	for _, g := range groups {
		needsProfile, needsSubscriptions := false, false
		for _, j := range g {
			channels := policy.Channels(j.n, j.typ)
			for _, c := range channels {
				keys = append(keys, domain.DeliveryKey{NotificationID: j.n.ID, Channel: c})
			}
			if j.needsProfile {
				needsProfile = true
				needsSubscriptions = needsSubscriptions || slices.Contains(channels, domain.ChannelPush)
			}
		}
		if needsProfile && !needsSubscriptions {
			users = append(users, g[0].n.Recipient.UserID)
		}
	}
	if len(keys) == 0 {
		return batchState{}, nil
	}
	existing, profiles, err := h.store.ReadPlanning(ctx, keys, users)
	if err != nil {
		return batchState{}, fmt.Errorf("read planning state: %w", err)
	}
	return batchState{existing: existing, profiles: profiles}, nil
}

// plannedMetric names the metric of a delivery recorded in a final or
// deferred state at planning time.
var plannedMetric = map[domain.Status]metrics.Name{
	domain.StatusDeferred: metrics.Deferred,
	domain.StatusSkipped:  metrics.Skipped,
	domain.StatusDropped:  metrics.Dropped,
}

func (h *Handler) countPlanned(ctx context.Context, d *domain.Delivery) {
	if name, ok := plannedMetric[d.Status]; ok {
		h.metrics.Add(ctx, name, metrics.Dims{Channel: d.Channel, Priority: d.Priority, Reason: d.Reason}, 1)
	}
}

// decodeRecord returns the notification of an INSERT record, or nil for
// anything else (even if the mapping's filter let it through).
func (h *Handler) decodeRecord(rec events.DynamoDBEventRecord) (*domain.Notification, error) {
	if rec.EventName != string(events.DynamoDBOperationTypeInsert) {
		return nil, nil
	}
	return h.decode(rec.Change.NewImage)
}

// recordFailed logs a record that will be reported for retry with what an
// operator needs to find it: the notification id (or the item key when the
// image did not decode), the stream sequence number and event id. A record
// that keeps failing reaches the relay DLQ as Lambda's on-failure record
// (shard id and sequence-number range, no payload), which the failure note
// (noteFailures) resolves.
func (h *Handler) recordFailed(ctx context.Context, rec events.DynamoDBEventRecord, n *domain.Notification, step string, err error) {
	attrs := []any{"step", step, "sequenceNumber", rec.Change.SequenceNumber, "eventId", rec.EventID, "error", err}
	if n != nil {
		attrs = append(attrs, "notificationId", n.ID)
	} else if pk, ok := rec.Change.Keys["pk"]; ok && pk.DataType() == events.DataTypeString {
		attrs = append(attrs, "key", pk.String())
	}
	h.log.ErrorContext(ctx, "relay record failed", attrs...)
}

// awaitsMessage reports whether a delivery found on a retried record may
// still lack its work message: it is queued (or planned, by the scheduler or
// an older relay) and no worker has claimed it. Sending again can only add a
// duplicate message, which the worker's claim discards.
func awaitsMessage(s domain.Status) bool {
	return s == domain.StatusQueued || s == domain.StatusPlanned
}

// plan records the deliveries of one notification and returns the work items
// still to send.
func (h *Handler) plan(ctx context.Context, j job, profiles *profileOnce, existing map[domain.DeliveryKey]domain.Delivery) ([]pending, error) {
	n := j.n
	profile := &domain.RecipientProfile{Preferences: domain.Preferences{}}
	if j.needsProfile {
		var err error
		if profile, err = profiles.get(ctx); err != nil {
			return nil, fmt.Errorf("notification %s: %w", n.ID, err)
		}
	}
	now := h.now()
	var out []pending
	var todo []plannedDelivery
	for _, d := range policy.Decide(policy.Input{Notification: n, Type: j.typ, Profile: profile, Now: now}) {
		item := domain.WorkItem{
			Message:  domain.WorkMessage{NotificationID: n.ID, Channel: d.Channel, UserID: n.Recipient.UserID, CampaignID: n.CampaignID},
			Priority: n.Priority,
		}
		if prev, ok := existing[domain.DeliveryKey{NotificationID: n.ID, Channel: d.Channel}]; ok {
			// A retried record: the delivery's state decides. Not yet
			// claimed: its message may not have gone out, send it (again).
			if awaitsMessage(prev.Status) {
				out = append(out, pending{record: j.record, item: item})
			}
			continue
		}
		del := domain.DeliveryOf(n, d.Channel)
		del.Status, del.Reason, del.DueAt, del.UpdatedAt = d.Status, d.Reason, d.DueAt, now
		if err := h.resolveDigest(ctx, n, d, del, now); err != nil {
			return nil, fmt.Errorf("notification %s %s: %w", n.ID, d.Channel, err)
		}
		todo = append(todo, plannedDelivery{decision: d, del: del, item: item})
	}
	if err := h.resolveBudget(ctx, n, j.typ, profile, todo, now); err != nil {
		return nil, fmt.Errorf("notification %s: %w", n.ID, err)
	}
	for _, p := range todo {
		d, del, item := p.decision, p.del, p.item
		if err := h.resolveRateLimit(ctx, n, d, del, now); err != nil {
			return nil, fmt.Errorf("notification %s %s: %w", n.ID, d.Channel, err)
		}
		if del.Status == domain.StatusQueued {
			// Sent at once: no item, the worker's claim creates the
			// delivery (docs/decisions.md); GET shows it queued meanwhile.
			out = append(out, pending{record: j.record, item: item})
			continue
		}
		// Skipped, dropped, deferred or digested: recorded here, in its state.
		current, err := h.store.CreateDelivery(ctx, del)
		switch {
		case errors.Is(err, domain.ErrConflict):
			if current != nil && awaitsMessage(current.Status) {
				out = append(out, pending{record: j.record, item: item})
			}
			continue // recorded meanwhile: its state decides
		case err != nil:
			return nil, fmt.Errorf("notification %s: %w", n.ID, err)
		}
		h.log.InfoContext(ctx, "delivery planned", "notificationId", n.ID, "channel", d.Channel, "priority", n.Priority,
			"outcome", del.Status, "reason", del.Reason, "dueAt", del.DueAt, "digestId", del.DigestID)
		h.countPlanned(ctx, del)
	}
	return out, nil
}

// plannedDelivery is one delivery of a notification being planned: the pure
// decision, the delivery as the table's answers make it, its work message.
type plannedDelivery struct {
	decision policy.Decision
	del      *domain.Delivery
	item     domain.WorkItem
}

// resolveDigest applies the digest part of what the pure decision left to
// the table: a digest candidate opens or joins a digest (a leader is deferred
// to the window's end, a member is skipped: digested).
func (h *Handler) resolveDigest(ctx context.Context, n *domain.Notification, d policy.Decision, del *domain.Delivery, now time.Time) error {
	accepted := n.CreatedAt
	if accepted.IsZero() {
		accepted = now
	}
	if !d.DigestUntil.IsZero() {
		out, err := h.store.JoinDigest(ctx, domain.DigestRequest{
			Key:            domain.DigestKey{UserID: n.Recipient.UserID, Channel: d.Channel, BatchKey: n.BatchKey},
			NotificationID: n.ID, CreatedAt: accepted, WindowEnd: d.DigestUntil,
		})
		if err != nil {
			return fmt.Errorf("digest: %w", err)
		}
		switch out.Role {
		case domain.DigestLeader:
			// The window counts from acceptance; planned after it ended (a
			// stream backlog, a relay redrive), the leader is due now: a
			// past due time would land behind the scheduler's watermark.
			// Deferred rather than sent at once, so the rest of a backlog's
			// members still join before the release seals the digest.
			del.Status, del.Reason, del.DueAt, del.DigestID = domain.StatusDeferred, domain.ReasonDigest, domain.Latest(out.WindowEnd, now), n.ID
			return nil
		case domain.DigestJoined:
			del.Status, del.Reason, del.DueAt, del.DigestID = domain.StatusSkipped, domain.ReasonDigested, time.Time{}, out.DigestID
			return nil
		}
		// DigestAlone: the open digest is sent or full; go on our own.
	}
	return nil
}

// resolveRateLimit: a delivery that will still produce its own message
// counts against the channel's rate limit and, over it, is skipped:
// rate_limited.
func (h *Handler) resolveRateLimit(ctx context.Context, n *domain.Notification, d policy.Decision, del *domain.Delivery, now time.Time) error {
	accepted := n.CreatedAt
	if accepted.IsZero() {
		accepted = now
	}
	if d.Limited && ownMessage(del) {
		ok, err := h.store.CountDelivery(ctx, n.Recipient.UserID, d.Channel, h.limits.WindowStart(accepted), h.limits.Window, h.limits.For(d.Channel), n.ID)
		if err != nil {
			return fmt.Errorf("rate limit: %w", err)
		}
		if !ok {
			del.Status, del.Reason, del.DueAt = domain.StatusSkipped, domain.ReasonRateLimited, time.Time{}
		}
	}
	return nil
}

// ownMessage reports whether a planned delivery will produce a message of
// its own: sent now or deferred, and neither a digest's leader nor member.
func ownMessage(del *domain.Delivery) bool {
	return (del.Status == domain.StatusQueued || del.Status == domain.StatusDeferred) && del.DigestID == ""
}

// resolveBudget counts a notification against its recipient's budget —
// once, and only when one of its channels will produce a message of its own
// (policy.BudgetOf: never high priority or mandatory) — and, over budget,
// folds those channels into the user's budget digest of each: the first
// opens it (deferred: budget until the budget frees, at the earliest the
// digest window's end), the later ones join it (deferred: budget until the
// digest goes out, when the worker records them skipped: digested). A
// channel whose own digest was sealed (a digest candidate going alone) is
// not folded, so a delivery belongs to one digest at most; one that cannot
// go out before the notification expires is dropped: expired. The inbox
// item is untouched: it exists already.
func (h *Handler) resolveBudget(ctx context.Context, n *domain.Notification, typ *catalog.Type, profile *domain.RecipientProfile, todo []plannedDelivery, now time.Time) error {
	b, held := policy.BudgetOf(typ, n.Priority, profile.Budget)
	if !held {
		return nil
	}
	var own []plannedDelivery
	for _, p := range todo {
		if ownMessage(p.del) {
			own = append(own, p)
		}
	}
	if len(own) == 0 {
		return nil
	}
	accepted := n.CreatedAt
	if accepted.IsZero() {
		accepted = now
	}
	count, err := h.store.CountBudget(ctx, n.Recipient.UserID, n.ID, accepted, b, policy.BudgetSlots)
	if err != nil {
		return fmt.Errorf("budget: %w", err)
	}
	if count.Within {
		return nil
	}
	due := policy.BudgetDigestDue(profile.User, accepted, policy.BudgetFreesAt(b, count.History, accepted))
	for _, p := range own {
		if !p.decision.DigestUntil.IsZero() {
			continue // its own digest is sealed: it goes alone
		}
		del := p.del
		if !n.ExpiresAt.IsZero() && !due.Before(n.ExpiresAt) {
			del.Status, del.Reason, del.DueAt = domain.StatusDropped, domain.ReasonExpired, time.Time{}
			continue
		}
		out, err := h.store.JoinDigest(ctx, domain.DigestRequest{
			Key: domain.BudgetDigestKey(n.Recipient.UserID, del.Channel), NotificationID: n.ID, CreatedAt: accepted, WindowEnd: due,
		})
		if err != nil {
			return fmt.Errorf("budget digest %s: %w", del.Channel, err)
		}
		switch out.Role {
		case domain.DigestLeader:
			del.Status, del.Reason, del.DueAt, del.DigestID = domain.StatusDeferred, domain.ReasonBudget, domain.Latest(out.WindowEnd, now), n.ID
		case domain.DigestJoined:
			// Not in the due index: the leader's send records it digested.
			del.Status, del.Reason, del.DueAt, del.DigestID = domain.StatusDeferred, domain.ReasonBudget, time.Time{}, out.DigestID
		default:
			continue // the budget digest is sent or full: it goes alone
		}
		del.BudgetDigest = true
	}
	return nil
}

// profileOnce holds one user's profile for the batch: from the batch read,
// or queried at most once when a record needs it (a failed query is retried
// by the next record).
type profileOnce struct {
	store   Store
	userID  string
	profile *domain.RecipientProfile
}

func (p *profileOnce) get(ctx context.Context) (*domain.RecipientProfile, error) {
	if p.profile == nil {
		profile, err := p.store.GetRecipientProfile(ctx, p.userID)
		if err != nil {
			return nil, fmt.Errorf("read profile: %w", err)
		}
		p.profile = profile
	}
	return p.profile, nil
}

// parallel calls fn(0..n-1) on at most h.concurrency goroutines.
func (h *Handler) parallel(n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(h.concurrency, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}
