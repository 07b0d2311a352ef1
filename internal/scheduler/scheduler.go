// Package scheduler releases deferred deliveries whose due time has come.
// Deferral is stored in the table (a sparse due-time index sharded by time
// bucket × shard), so it survives restarts and never burns SQS receive
// counts. The release runs in two steps:
//
//   - Tick, every minute: probe every partition of the index from the
//     watermark (or an hour ago) to now with a one-item query and put one
//     release message per partition holding due entries on the release queue;
//   - Release, one invocation per message (the release queue's event source
//     mapping runs them in parallel): release that partition page by page.
//
// Release throughput therefore grows with the number of due partitions, and a
// release that was interrupted leaves its entries in the index, where the next
// tick finds them again.
package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/recovery"
)

// Store is what the scheduler needs from the table.
type Store interface {
	// DuePartitions lists the index partitions of the buckets from the one
	// holding from to the one holding to, oldest bucket first.
	DuePartitions(from, to time.Time) []recovery.DuePartition
	HasDue(ctx context.Context, p recovery.DuePartition, now time.Time) (bool, error)
	// ListDue lists the partition's due entries: deferred deliveries and
	// in-flight watches.
	ListDue(ctx context.Context, p recovery.DuePartition, now time.Time, limit int32) ([]domain.Delivery, []recovery.Watch, error)
	WatchStore
	Transition(ctx context.Context, id string, ch domain.Channel, c domain.Change) (*domain.Delivery, error)
	ReleaseWatermark(ctx context.Context) (time.Time, error)
	AdvanceReleaseWatermark(ctx context.Context, t time.Time) error
}

// Publisher sends work messages; one error slot per item.
type Publisher interface {
	Publish(ctx context.Context, items []domain.WorkItem) []error
}

// ReleaseQueue takes one release message per due partition.
type ReleaseQueue interface {
	EnqueueReleases(ctx context.Context, parts []recovery.DuePartition) error
}

// Visibility changes when a received release message is next visible.
type Visibility interface {
	SetVisibility(ctx context.Context, queueARN, receiptHandle string, timeout time.Duration) error
}

// Handler is the scheduler Lambda handler (both triggers).
type Handler struct {
	store      Store
	pub        Publisher
	releases   ReleaseQueue
	visibility Visibility
	now        func() time.Time
	log        *slog.Logger
	// pageSize bounds one query; a release drains pages until nothing is
	// due, its time budget ends, or a page holds only stale entries.
	pageSize int32
	// concurrency bounds the conditional writes (and probes) in flight.
	concurrency int
	// maxRate bounds the deliveries one release invocation releases per
	// second: each release deletes one index entry, and a partition takes at
	// most 1,000 writes/s (with the relay's deferrals into it).
	maxRate float64
	// grace is how far back a tick always probes: a delivery deferred to a
	// due time that has just passed (written moments late) is still found.
	grace time.Duration
	// maxScan bounds the buckets one tick probes after an outage.
	maxScan time.Duration
	// budget is kept free before the invocation's deadline.
	budget  time.Duration
	metrics metrics.Recorder
	// announcements: see Deps.Announcements.
	announcements Announcements
	// sweptAt is when this handler last swept behind the watermark.
	sweepMu sync.Mutex
	sweptAt time.Time
}

// Deps are the scheduler's collaborators. Store, Publisher, Releases,
// Visibility, Now and Log are required.
type Deps struct {
	Store     Store
	Publisher Publisher
	// Releases takes the tick's release messages (the release queue).
	Releases ReleaseQueue
	// Visibility makes a malformed release message visible again at once.
	Visibility Visibility
	Now        func() time.Time
	Log        *slog.Logger
	// Metrics counts released deliveries as Enqueued (by channel and
	// priority), flushed once per invocation; nil records nothing.
	Metrics metrics.Recorder
	// PartitionReleaseRate is one release invocation's (one due
	// partition's) share of the release's write budget, in deliveries per
	// second (the template's SchedulerReleaseRate / the due shards); 0 or
	// more than MaxPartitionReleaseRate means MaxPartitionReleaseRate.
	PartitionReleaseRate float64
	// Announcements starts the live broadcast of announcements that became
	// active (live.Announcer), every tick; nil starts none.
	Announcements Announcements
}

// Announcements broadcasts the announcements that became active and were
// not broadcast yet; it bounds its own time.
type Announcements interface {
	AnnouncePending(ctx context.Context) (int, error)
}

// MaxPartitionReleaseRate is the most deliveries one release invocation
// releases per second: each release deletes one index entry, and a
// partition takes at most 1,000 writes/s (with the relay's deferrals into it).
const MaxPartitionReleaseRate = 800

// New wires a scheduler.
func New(d Deps) *Handler {
	h := &Handler{store: d.Store, pub: d.Publisher, releases: d.Releases, visibility: d.Visibility, now: d.Now, log: d.Log, pageSize: 100, concurrency: 32,
		maxRate: MaxPartitionReleaseRate, grace: time.Hour, maxScan: 48 * time.Hour, budget: 10 * time.Second, metrics: d.Metrics,
		announcements: d.Announcements}
	if d.PartitionReleaseRate > 0 {
		h.maxRate = min(d.PartitionReleaseRate, MaxPartitionReleaseRate)
	}
	if h.metrics == nil {
		h.metrics = metrics.Nop{}
	}
	return h
}

// ErrUnknownTrigger refuses an invocation that is neither of the
// scheduler's two triggers: it is not guessed to be the tick.
var ErrUnknownTrigger = errors.New("scheduler: event is neither a scheduled tick nor release queue messages")

// trigger is one of the scheduler's event sources.
type trigger int

const (
	triggerUnknown trigger = iota
	// triggerTick: the schedule's EventBridge "Scheduled Event".
	triggerTick
	// triggerRelease: a batch of release queue messages (an SQS event).
	triggerRelease
)

// eventShape holds the fields that tell the two triggers apart.
type eventShape struct {
	// Records is present in an SQS event (and in other services' events:
	// each record must come from SQS).
	Records *[]struct {
		EventSource string `json:"eventSource"`
	} `json:"Records"`
	// Source and DetailType identify an EventBridge event.
	Source     *string `json:"source"`
	DetailType *string `json:"detail-type"`
}

// classify tells the triggers apart by the event's shape: an EventBridge
// scheduled event (source aws.events, detail-type Scheduled Event, no
// records) or an SQS event (records only, each from aws:sqs). Anything else
// — another rule's event, a stream's records, a mix — is unknown.
func classify(raw json.RawMessage) (trigger, string) {
	var e eventShape
	if err := json.Unmarshal(raw, &e); err != nil {
		return triggerUnknown, "undecodable event"
	}
	switch {
	case e.Records != nil && e.Source == nil && e.DetailType == nil:
		if len(*e.Records) == 0 {
			return triggerUnknown, "no records"
		}
		for i, r := range *e.Records {
			if r.EventSource != "aws:sqs" {
				return triggerUnknown, fmt.Sprintf("record %d has eventSource %q", i, r.EventSource)
			}
		}
		return triggerRelease, ""
	case e.Records == nil && e.Source != nil && e.DetailType != nil:
		if *e.Source != "aws.events" || *e.DetailType != "Scheduled Event" {
			return triggerUnknown, fmt.Sprintf("EventBridge event %q from %q", *e.DetailType, *e.Source)
		}
		return triggerTick, ""
	}
	return triggerUnknown, "neither records alone nor an EventBridge source and detail-type"
}

// Invoke dispatches a raw Lambda event by its shape (classify): release
// queue messages to HandleRelease, the schedule's event to Handle; any other
// event is refused with ErrUnknownTrigger and nothing runs.
func (h *Handler) Invoke(ctx context.Context, raw json.RawMessage) (any, error) {
	kind, why := classify(raw)
	switch kind {
	case triggerRelease:
		var ev events.SQSEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnknownTrigger, err)
		}
		return h.HandleRelease(ctx, ev)
	case triggerTick:
		var ev events.EventBridgeEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnknownTrigger, err)
		}
		return h.Handle(ctx, ev)
	}
	h.log.ErrorContext(ctx, "scheduler invoked by an unknown event", "outcome", "refused", "shape", why)
	return nil, fmt.Errorf("%w: %s", ErrUnknownTrigger, why)
}

// Summary is the tick's invocation result.
type Summary struct {
	// Partitions is how many release messages the tick sent.
	Partitions int `json:"partitions"`
}

// Handle is the schedule's tick.
func (h *Handler) Handle(ctx context.Context, _ events.EventBridgeEvent) (Summary, error) {
	defer h.metrics.Flush(ctx)
	h.announce(ctx)
	n, err := h.Tick(ctx)
	return Summary{Partitions: n}, err
}

// announce starts the broadcasts of announcements that became active.
// Best effort: a failure is logged and the next tick tries again; it never
// fails the tick's releases.
func (h *Handler) announce(ctx context.Context) {
	if h.announcements == nil {
		return
	}
	n, err := h.announcements.AnnouncePending(ctx)
	if err != nil {
		h.log.WarnContext(ctx, "announcement broadcasts not started; next tick retries", "started", n, "error", err)
		return
	}
	if n > 0 {
		h.log.InfoContext(ctx, "announcement broadcasts started", "started", n)
	}
}

// Tick finds the due partitions and sends one release message for each. The
// watermark moves to the oldest bucket still holding due entries (never past
// an hour ago), so buckets a release left unfinished are probed again. A
// probe that fails fails only its partition: the partitions known due are
// released, the watermark stays at the failed one's bucket, and the tick
// returns the probes' errors.
func (h *Handler) Tick(ctx context.Context) (int, error) {
	now := h.now()
	wm, err := h.store.ReleaseWatermark(ctx)
	if err != nil {
		return 0, err
	}
	from := now.Add(-h.grace)
	if !wm.IsZero() && wm.Before(from) {
		from = wm
	}
	to := now
	if limit := from.Add(h.maxScan); to.After(limit) {
		to = limit
	}
	parts := h.store.DuePartitions(from, to)
	behind := h.sweepPartitions(from, now)
	probed := append(parts[:len(parts):len(parts)], behind...)
	has := make([]bool, len(probed))
	errs := make([]error, len(probed))
	h.parallel(len(probed), func(i int) { has[i], errs[i] = h.store.HasDue(ctx, probed[i], now) })
	var due []recovery.DuePartition
	if found := h.foundBehind(ctx, behind, has[len(parts):], errs[len(parts):]); len(found) > 0 {
		due = append(due, found...)
	}
	has, errs = has[:len(parts)], errs[:len(parts)]
	next := to // every bucket before next is known empty
	failed := 0
	for i, p := range parts {
		if errs[i] != nil {
			failed++
		}
		if (has[i] || errs[i] != nil) && p.Bucket.Before(next) {
			next = p.Bucket
		}
		if has[i] {
			due = append(due, p)
		}
	}
	if len(due) > 0 {
		if err := h.releases.EnqueueReleases(ctx, due); err != nil {
			return 0, fmt.Errorf("enqueue %d releases: %w", len(due), err)
		}
	}
	if g := now.Add(-h.grace); next.After(g) {
		next = g
	}
	if next.After(wm) {
		if err := h.store.AdvanceReleaseWatermark(ctx, next); err != nil {
			return len(due), err
		}
	}
	if failed > 0 {
		h.log.ErrorContext(ctx, "scheduler tick: due partitions not probed; the watermark waits for them", "probed", len(probed), "due", len(due), "failed", failed)
		return len(due), fmt.Errorf("probe %d of %d due partitions: %w", failed, len(parts), errors.Join(errs...))
	}
	h.log.InfoContext(ctx, "scheduler tick", "probed", len(probed), "due", len(due))
	return len(due), nil
}

// SweepBack is how far behind the watermark the ticks look for due entries,
// one hour bucket a minute in turn (336 buckets: each once in about 5.6
// hours, for 32 more one-item queries a minute). No entry belongs there —
// every writer defers to now or later — but one planned with a past due
// time would lie in a bucket no tick probes, lost. 14 days: the RelayDLQ's
// retention, the latest a notification is planned (herald dlq redrive relay).
const SweepBack = 14 * 24 * time.Hour

// sweepPartitions returns the partitions of this minute's bucket behind
// from, or none when this handler swept less than a minute ago (the local
// stack ticks every second).
func (h *Handler) sweepPartitions(from, now time.Time) []recovery.DuePartition {
	h.sweepMu.Lock()
	defer h.sweepMu.Unlock()
	if d := now.Sub(h.sweptAt); !h.sweptAt.IsZero() && d >= 0 && d < time.Minute {
		return nil
	}
	h.sweptAt = now
	k := now.Unix() / 60 % int64(SweepBack/time.Hour)
	at := from.Add(-time.Duration(k+1) * time.Hour)
	return h.store.DuePartitions(at, at)
}

// foundBehind returns the swept partitions that hold due entries, counting
// them (DueBehindWatermark, alarmed: something planned a past due time). A
// failed sweep probe is only logged: the bucket comes round again.
func (h *Handler) foundBehind(ctx context.Context, parts []recovery.DuePartition, has []bool, errs []error) []recovery.DuePartition {
	var found []recovery.DuePartition
	for i, p := range parts {
		switch {
		case errs[i] != nil:
			h.log.WarnContext(ctx, "sweep behind the watermark: probe failed", "bucket", p.Bucket, "shard", p.Shard, "error", errs[i])
		case has[i]:
			found = append(found, p)
		}
	}
	if len(found) > 0 {
		h.metrics.Add(ctx, metrics.DueBehindWatermark, metrics.Dims{}, len(found))
		h.log.ErrorContext(ctx, "due entries behind the watermark; released", "partitions", len(found), "bucket", found[0].Bucket)
	}
	return found
}

// HandleRelease releases the partition named by each release message. A
// malformed message fails alone and is made visible again at once, so the
// queue's redrive parks it in the DLQ after maxReceiveCount quick receives; a
// store failure fails its message, which comes back after the visibility
// timeout (the next tick also finds the partition again).
func (h *Handler) HandleRelease(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	defer h.metrics.Flush(ctx)
	var resp events.SQSEventResponse
	for _, rec := range ev.Records {
		if err := h.releaseOne(ctx, rec); err != nil {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
		}
	}
	return resp, nil
}

func (h *Handler) releaseOne(ctx context.Context, rec events.SQSMessage) error {
	p, err := recovery.DecodeReleaseMessage(rec.Body)
	if err != nil {
		// Visible again at once: the redrive parks it in the DLQ after
		// maxReceiveCount receives instead of as many visibility timeouts.
		h.log.ErrorContext(ctx, "malformed release message", "messageId", rec.MessageId, "outcome", "malformed", "error", err)
		if verr := h.visibility.SetVisibility(ctx, rec.EventSourceARN, rec.ReceiptHandle, 0); verr != nil {
			h.log.WarnContext(ctx, "change visibility failed", "messageId", rec.MessageId, "error", verr)
		}
		return err
	}
	if _, err := h.Release(ctx, p); err != nil {
		h.log.ErrorContext(ctx, "release failed", "messageId", rec.MessageId, "error", err)
		return err
	}
	return nil
}

// Release releases partition p: deferred → planned (kept in the due index)
// → work message → queued (leaves the index), page by page, each page's
// conditional writes in parallel, at most maxRate deliveries a second, until
// nothing is due or the invocation's time is nearly up. Each step is
// conditional, so overlapping releases send at most a duplicate message,
// which the worker's claim absorbs.
func (h *Handler) Release(ctx context.Context, p recovery.DuePartition) (int, error) {
	start := time.Now()
	released := 0
	for ctx.Err() == nil {
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < h.budget {
			return released, nil // the next tick finds what is left
		}
		if ahead := time.Duration(float64(released)/h.maxRate*float64(time.Second)) - time.Since(start); ahead > 0 {
			select {
			case <-ctx.Done():
				return released, ctx.Err()
			case <-time.After(ahead):
			}
		}
		due, watches, err := h.store.ListDue(ctx, p, h.now(), h.pageSize)
		if err != nil {
			return released, err
		}
		if len(due) == 0 && len(watches) == 0 {
			return released, nil
		}
		checked, err := h.checkWatches(ctx, watches)
		if err != nil {
			return released, err
		}
		n := 0
		if len(due) > 0 {
			n, err = h.releasePage(ctx, due)
			released += n
		}
		if err != nil || n+checked == 0 {
			return released, err
		}
	}
	return released, ctx.Err()
}

// releasePage releases one page. It returns 0 without error when the page
// held only entries the index has not caught up with (already released or
// cancelled): querying again would return them again.
func (h *Handler) releasePage(ctx context.Context, due []domain.Delivery) (int, error) {
	ready := make([]bool, len(due))
	errs := make([]error, len(due))
	h.parallel(len(due), func(i int) {
		d := due[i]
		// The index does not project the status (a listed one is not the
		// item's): the conditional transition decides, and a conflict
		// returns the current state.
		cur, err := h.store.Transition(ctx, d.NotificationID, d.Channel, domain.Change{
			To: domain.StatusPlanned, From: []domain.Status{domain.StatusDeferred}, KeepDue: true,
		})
		switch {
		case errors.Is(err, domain.ErrConflict):
			// planned: an earlier release stopped before queued; anything
			// else: cancelled, or released by another run (the index lags).
			ready[i] = cur != nil && cur.Status == domain.StatusPlanned
		case err != nil:
			errs[i] = fmt.Errorf("release %s/%s: %w", d.NotificationID, d.Channel, err)
		default:
			ready[i] = true
		}
	})
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	var items []domain.WorkItem
	for i, d := range due {
		if ready[i] {
			items = append(items, domain.WorkItem{Message: domain.WorkMessage{NotificationID: d.NotificationID, Channel: d.Channel, UserID: d.UserID}, Priority: d.Priority})
		}
	}
	if len(items) == 0 {
		return 0, nil
	}
	// The watch first: a crash after the send leaves a watch that finds
	// the delivery if its message is lost.
	if items = h.armWatches(ctx, items); len(items) == 0 {
		return 0, fmt.Errorf("no due delivery could be watched")
	}
	sendErrs := h.pub.Publish(ctx, items)
	var queued atomic.Int64
	h.parallel(len(items), func(i int) {
		it := items[i]
		if sendErrs[i] != nil {
			h.log.ErrorContext(ctx, "release enqueue failed", "notificationId", it.Message.NotificationID, "channel", it.Message.Channel, "error", sendErrs[i])
			return
		}
		_, err := h.store.Transition(ctx, it.Message.NotificationID, it.Message.Channel, domain.Change{
			To: domain.StatusQueued, From: []domain.Status{domain.StatusPlanned},
		})
		if err != nil && !errors.Is(err, domain.ErrConflict) {
			h.log.ErrorContext(ctx, "release record failed", "notificationId", it.Message.NotificationID, "channel", it.Message.Channel, "error", err)
			return
		}
		queued.Add(1)
		h.metrics.Add(ctx, metrics.Enqueued, metrics.Dims{Channel: it.Message.Channel, Priority: it.Priority}, 1)
	})
	if queued.Load() == 0 {
		return 0, fmt.Errorf("no due delivery could be released")
	}

	h.log.InfoContext(ctx, "deliveries released", "count", queued.Load())
	return int(queued.Load()), nil
}

// parallel calls fn(0..n-1) on at most h.concurrency goroutines.
func (h *Handler) parallel(n int, fn func(i int)) {
	sem := make(chan struct{}, h.concurrency)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(i)
		})
	}
	wg.Wait()
}
