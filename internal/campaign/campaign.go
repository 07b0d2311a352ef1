// Package campaign is the campaign function: the fan-out of a started
// campaign to its recipients, in three kinds of campaign-queue messages.
//
//   - plan: pages through the campaign's chunks and sends one lot message per
//     chunk; near the invocation's deadline it sends a continuation (after
//     the last chunk sent) instead of running long, so a 10,000-chunk
//     campaign is many short invocations.
//   - lot: one chunk of ≤ 1,000 recipients. It reads the campaign (a
//     cancelled one creates nothing: the lot's recipients are dropped), reads
//     which recipients have a profile (none: skipped), and creates each
//     one's notification with an id derived from (campaign, user) by a
//     conditional put, bounded in parallel: an ordinary notification that the
//     relay and workers then plan and send with preferences, quiet hours,
//     rate limits and the recheck. A lot processed twice creates nothing
//     twice. It records the lot's result (counts and the recipients still
//     pending) and adds its counts to the campaign in one transaction, then
//     sends a delayed reconcile.
//   - scan (segment "all"): the plan sends one scan message per parallel
//     scan segment of the profiles index; each reads one page of ≤ 1,000
//     user ids of its segment, stores it as a chunk (with where the segment
//     continues, so a retry reads the same page back instead of scanning
//     again) and sends that chunk's lot and the segment's next page. The
//     campaign is done once every segment stored its last page and every
//     lot settled.
//   - reconcile: reads the pending recipients' deliveries, moves those whose
//     every channel is final to their outcome and writes the lot's next
//     version with the campaign's delta in one transaction conditioned on the
//     version it read, so a retry never counts twice; it sends itself again,
//     delayed, until the lot is settled. The last lot to settle finishes the
//     campaign (done, or cancelled with finishedAt).
//
// Every step is idempotent; a failed message is retried by SQS (partial
// batch responses) and a malformed one goes to the campaign DLQ.
package campaign

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
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/policy"
)

// Store is what the fan-out needs from the table.
type Store interface {
	// GetCampaign reads the campaign without its Data.
	GetCampaign(ctx context.Context, id string) (*domain.Campaign, error)
	GetCampaignData(ctx context.Context, id string) (map[string]any, error)
	// ListChunks returns up to limit chunk keys after the key after, in
	// order, and whether more may follow.
	ListChunks(ctx context.Context, id, after string, limit int) ([]string, bool, error)
	GetChunk(ctx context.Context, id, chunk string) ([]string, error)
	// GetLot is domain.ErrNotFound before the lot's first result.
	GetLot(ctx context.Context, id, chunk string) (*domain.CampaignLot, error)
	ExistingProfiles(ctx context.Context, users []string) (map[string]bool, error)
	// CreateNotification is a conditional put: an existing one is returned
	// with domain.ErrConflict.
	CreateNotification(ctx context.Context, n *domain.Notification) (*domain.Notification, error)
	// RecordLot writes a lot's first result with the campaign's counts;
	// domain.ErrConflict when it has one.
	RecordLot(ctx context.Context, id string, lot *domain.CampaignLot) error
	// ReconcileLot replaces prev by next with the campaign's delta;
	// domain.ErrConflict when the lot is no longer at prev's version.
	ReconcileLot(ctx context.Context, id string, prev, next *domain.CampaignLot) error
	// ReadPlanning reads which deliveries exist (users nil: no profiles).
	ReadPlanning(ctx context.Context, deliveries []domain.DeliveryKey, users []string) (map[domain.DeliveryKey]domain.Delivery, map[string]*domain.RecipientProfile, error)
	// FinishCampaign finishes a campaign whose lots are all settled.
	FinishCampaign(ctx context.Context, id string) (bool, error)
	// SetScanSegments records a segment campaign's scan segments unless
	// recorded already, and returns the recorded number.
	SetScanSegments(ctx context.Context, id string, n int) (int, error)
	// ScanProfiles reads a page of a scan segment of the profiles; next is
	// where the segment continues ("" at its end).
	ScanProfiles(ctx context.Context, seg, total int, after string, limit int) (ids []string, next string, err error)
	// GetScanPage reads a stored page's continuation; ok false if none.
	GetScanPage(ctx context.Context, id, chunk string) (next string, ok bool, err error)
	// ScanSubscribers reads a page of one shard of a topic's subscribers;
	// next is where the shard continues ("" at its end).
	ScanSubscribers(ctx context.Context, topic string, shard int, after string, limit int) (ids []string, next string, err error)
	// MutedSubscribers reports which of users muted topic.
	MutedSubscribers(ctx context.Context, topic string, users []string) (map[string]bool, error)
	// GetNotification reads a notification; domain.ErrNotFound when gone.
	GetNotification(ctx context.Context, id string) (*domain.Notification, error)
	// Transition applies a conditional change to a delivery (the worker's
	// own write): on domain.ErrConflict it returns the delivery as it is
	// (nil when there is none).
	Transition(ctx context.Context, id string, ch domain.Channel, c domain.Change) (*domain.Delivery, error)
	// RecordScanPage stores a page as a chunk (domain.ErrConflict when it
	// is stored already); next "" marks the segment scanned.
	RecordScanPage(ctx context.Context, c *domain.Campaign, chunk string, seg int, ids []string, next string) error
}

// Queue sends campaign messages, delayed.
type Queue interface {
	SendCampaign(ctx context.Context, msgs []domain.CampaignMessage, delay time.Duration) error
}

// Visibility delays a message's next receive.
type Visibility interface {
	SetVisibility(ctx context.Context, queueARN, receiptHandle string, timeout time.Duration) error
}

// Deps are the fan-out's collaborators. Store, Queue, Visibility, Catalog,
// Now and Log are required; the rest have documented zero values.
type Deps struct {
	Store      Store
	Queue      Queue
	Visibility Visibility
	Catalog    *catalog.Catalog
	Now        func() time.Time
	Log        *slog.Logger
	// Metrics records lots, recipients and reconciles (EMF; nil: none).
	Metrics metrics.Recorder
	// ReconcileDelay is how long a reconcile waits before counting a lot's
	// outcomes again; 0 means DefaultReconcileDelay.
	ReconcileDelay time.Duration
	// Concurrency bounds the notifications a lot creates at once; 0 means 16.
	Concurrency int
	// FanOutRate is the write budget of the campaign fan-out: notifications
	// per second all lots together may create (the template's
	// CampaignFanOutRate). With MaxConcurrency (the campaign mapping's
	// MaximumConcurrency) each lot paces its creations to its share,
	// FanOutRate / (MaxConcurrency × ParallelMessages): however many lots run
	// at once, the sum stays within the budget. 0 means unpaced.
	FanOutRate     float64
	MaxConcurrency int
	// Sleep waits d or until ctx ends (nil: a timer).
	Sleep func(ctx context.Context, d time.Duration) error
	// PlanPage is how many chunks a plan step reads per query; 0 means 100.
	PlanPage int
	// ScanSegments is how many parallel scan segments a segment-"all"
	// campaign reads the profiles in; 0 means DefaultScanSegments.
	ScanSegments int
	// PendingLimit is how long after the campaign's start (or sendAt, when
	// later) a recipient may stay pending before it is counted failed (its
	// notification was never planned: a relay record parked in its DLQ);
	// 0 means DefaultPendingLimit.
	PendingLimit time.Duration
}

const (
	// DefaultReconcileDelay spaces a lot's reconciles while its deliveries
	// move (NextReconcile).
	DefaultReconcileDelay = 30 * time.Second
	// MaxQueueDelay is the longest delay a campaign queue message can
	// have (SQS DelaySeconds).
	MaxQueueDelay = 15 * time.Minute
	// waitStepsPerDelay: a reconcile waiting for a due time looks at the
	// clock again every 30 reconcile delays at most (MaxQueueDelay at the
	// default 30 s), so a clock that jumps (the local runner's) is noticed
	// within a minute locally.
	waitStepsPerDelay = 30
	// reconcileBackoffSteps bounds the doubling of an idle lot's reconcile
	// delay: at most 2^3 = 8 × the delay (4 minutes at 30 s).
	reconcileBackoffSteps = 3
	// DefaultPendingLimit bounds how long a recipient may stay pending.
	DefaultPendingLimit = 48 * time.Hour
	// DefaultScanSegments: 16 segments page through 10 M profiles in
	// 625 pages each.
	DefaultScanSegments = 16
	// planReserve is the time a plan step keeps back before its deadline to
	// send its continuation.
	planReserve = 10 * time.Second
	// ParallelMessages bounds the messages of one batch handled at once.
	ParallelMessages = 4
	// defaultCancelCheck is how often a paced lot reads its campaign's status
	// while it creates notifications: a cancel stops it within this much
	// (1 strongly consistent read of META a second per running lot).
	defaultCancelCheck = time.Second
)

// Handler is the campaign Lambda handler.
type Handler struct {
	store        Store
	queue        Queue
	visibility   Visibility
	catalog      *catalog.Catalog
	now          func() time.Time
	log          *slog.Logger
	metrics      metrics.Recorder
	delay        time.Duration
	concurrency  int
	planPage     int
	scanSegments int
	pendingLimit time.Duration
	// lotRate is notifications per second one lot may create (0: unpaced).
	lotRate float64
	sleep   func(ctx context.Context, d time.Duration) error
	// cancelCheck: how often a paced lot reads its campaign's status.
	cancelCheck time.Duration
}

// New wires the campaign handler.
func New(d Deps) *Handler {
	h := &Handler{store: d.Store, queue: d.Queue, visibility: d.Visibility, catalog: d.Catalog, now: d.Now, log: d.Log, metrics: d.Metrics,
		delay: d.ReconcileDelay, concurrency: d.Concurrency, planPage: d.PlanPage, scanSegments: d.ScanSegments, pendingLimit: d.PendingLimit}
	if h.delay <= 0 {
		h.delay = DefaultReconcileDelay
	}
	if h.metrics == nil {
		h.metrics = metrics.Nop{}
	}
	if h.concurrency <= 0 {
		h.concurrency = 16
	}
	if h.planPage <= 0 {
		h.planPage = 100
	}
	if h.pendingLimit <= 0 {
		h.pendingLimit = DefaultPendingLimit
	}
	if h.scanSegments <= 0 || h.scanSegments > domain.MaxScanSegments {
		h.scanSegments = DefaultScanSegments
	}
	if d.FanOutRate > 0 && d.MaxConcurrency > 0 {
		h.lotRate = d.FanOutRate / float64(d.MaxConcurrency*ParallelMessages)
	}
	h.cancelCheck = defaultCancelCheck
	h.sleep = d.Sleep
	if h.sleep == nil {
		h.sleep = sleepCtx
	}
	return h
}

// errMalformed marks a message that can never be processed.
var errMalformed = errors.New("malformed campaign message")

// Handle processes a batch; failed items are retried by SQS, the rest
// deleted. A panic fails only its own message.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	defer h.metrics.Flush(ctx)
	failed := make([]bool, len(ev.Records))
	sem := make(chan struct{}, ParallelMessages)
	var wg sync.WaitGroup
	for i, msg := range ev.Records {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					h.log.ErrorContext(ctx, "campaign step panic", "messageId", msg.MessageId, "panic", fmt.Sprint(r))
					failed[i] = true
				}
				<-sem
			}()
			failed[i] = h.handleOne(ctx, msg) != nil
		})
	}
	wg.Wait()
	var resp events.SQSEventResponse
	for i, f := range failed {
		if f {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: ev.Records[i].MessageId})
		}
	}
	return resp, nil
}

func (h *Handler) handleOne(ctx context.Context, msg events.SQSMessage) error {
	m, err := domain.DecodeCampaignMessage(msg.Body)
	log := h.log.With("messageId", msg.MessageId, "campaignId", m.CampaignID, "step", m.Kind, "chunk", m.Chunk)
	if err != nil {
		// Visible again at once: the redrive parks it in the DLQ after
		// maxReceiveCount receives instead of as many visibility timeouts.
		log.ErrorContext(ctx, "malformed campaign message", "outcome", "malformed")
		if verr := h.visibility.SetVisibility(ctx, msg.EventSourceARN, msg.ReceiptHandle, 0); verr != nil {
			log.WarnContext(ctx, "change visibility failed", "error", verr)
		}
		return errMalformed
	}
	switch m.Kind {
	case domain.CampaignPlan:
		err = h.plan(ctx, log, m)
	case domain.CampaignLotStep:
		err = h.lot(ctx, log, m)
	case domain.CampaignReconcile:
		err = h.reconcile(ctx, log, m)
	case domain.CampaignScan:
		err = h.scan(ctx, log, m)
	}
	if errors.Is(err, domain.ErrNotFound) {
		log.WarnContext(ctx, "campaign gone", "outcome", "discarded", "error", err)
		return nil
	}
	if err != nil {
		log.ErrorContext(ctx, "campaign step failed", "error", err)
	}
	return err
}

// plan sends one lot message per chunk from m.After on, and a continuation
// when the invocation nears its deadline.
func (h *Handler) plan(ctx context.Context, log *slog.Logger, m domain.CampaignMessage) error {
	c, err := h.store.GetCampaign(ctx, m.CampaignID)
	if err != nil {
		return err
	}
	switch c.Status {
	case domain.CampaignDraft:
		return fmt.Errorf("campaign %s is still a draft", c.ID) // its start is being written: retry
	case domain.CampaignDone:
		return nil
	}
	if c.Scanned() {
		return h.planScan(ctx, log, c)
	}
	after, sent := m.After, 0
	for {
		chunks, more, err := h.store.ListChunks(ctx, c.ID, after, h.planPage)
		if err != nil {
			return err
		}
		lots := make([]domain.CampaignMessage, len(chunks))
		for i, k := range chunks {
			lots[i] = domain.CampaignMessage{Kind: domain.CampaignLotStep, CampaignID: c.ID, Chunk: k}
		}
		if len(lots) > 0 {
			if err := h.queue.SendCampaign(ctx, lots, 0); err != nil {
				return err
			}
			after, sent = chunks[len(chunks)-1], sent+len(lots)
		}
		if !more || len(chunks) == 0 {
			break
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < planReserve {
			log.InfoContext(ctx, "campaign planning continues", "lots", sent, "outcome", "continued")
			return h.queue.SendCampaign(ctx, []domain.CampaignMessage{{Kind: domain.CampaignPlan, CampaignID: c.ID, After: after}}, 0)
		}
	}
	log.InfoContext(ctx, "campaign planned", "lots", sent, "outcome", "planned")
	if c.Chunks == 0 { // nothing to fan out: finished now
		err = h.finish(ctx, log, c.ID)
	}
	return err
}

// planScan sends the first page of every scan segment of the profiles, or
// of every shard of a topic's subscribers.
func (h *Handler) planScan(ctx context.Context, log *slog.Logger, c *domain.Campaign) error {
	segments := h.scanSegments
	if c.Topic != "" {
		segments = domain.TopicShards
	}
	n, err := h.store.SetScanSegments(ctx, c.ID, segments)
	if err != nil {
		return err
	}
	msgs := make([]domain.CampaignMessage, n)
	for seg := range n {
		msgs[seg] = domain.CampaignMessage{Kind: domain.CampaignScan, CampaignID: c.ID, Segment: seg, Segments: n}
	}
	if err := h.queue.SendCampaign(ctx, msgs, 0); err != nil {
		return err
	}
	log.InfoContext(ctx, "campaign scan planned", "segments", n, "outcome", "planned")
	return nil
}

// scan stores one page of one scan segment as a chunk and sends its lot and
// the segment's next page. A cancelled campaign reads no more: the segment
// ends where it is (pages already stored keep their lots, which drop their
// recipients), so its recipients are the profiles read before the cancel.
func (h *Handler) scan(ctx context.Context, log *slog.Logger, m domain.CampaignMessage) error {
	c, err := h.store.GetCampaign(ctx, m.CampaignID)
	if err != nil {
		return err
	}
	if !c.Scanned() {
		return fmt.Errorf("campaign %s has no segment to scan: %w", c.ID, errMalformed)
	}
	chunk := domain.ScanChunkKey(m.Segment, m.Page)
	next, stored, err := h.store.GetScanPage(ctx, c.ID, chunk)
	if err != nil {
		return err
	}
	var ids []string
	if !stored && c.Status == domain.CampaignCancelled {
		if err := h.store.RecordScanPage(ctx, c, chunk, m.Segment, nil, ""); err != nil {
			return err
		}
		log.InfoContext(ctx, "campaign scan stopped", "segment", m.Segment, "page", m.Page, "outcome", "cancelled")
		err = h.finish(ctx, log, c.ID)
		return err
	}
	if !stored {
		if ids, next, err = h.readPage(ctx, c, m); err != nil {
			return err
		}
		err = h.store.RecordScanPage(ctx, c, chunk, m.Segment, ids, next)
		if errors.Is(err, domain.ErrConflict) { // a concurrent copy stored it: follow the stored page
			next, stored, err = h.store.GetScanPage(ctx, c.ID, chunk)
			if err == nil && !stored {
				err = fmt.Errorf("scan page %s of campaign %s: conflict but not stored", chunk, c.ID)
			}
		}
		if err != nil {
			return err
		}
	}
	if !stored && len(ids) > 0 {
		h.metrics.Add(ctx, metrics.CampaignScanPages, metrics.Dims{Priority: c.Priority}, 1)
	}
	var msgs []domain.CampaignMessage
	if stored || len(ids) > 0 {
		msgs = append(msgs, domain.CampaignMessage{Kind: domain.CampaignLotStep, CampaignID: c.ID, Chunk: chunk})
	}
	if next != "" {
		msgs = append(msgs, domain.CampaignMessage{Kind: domain.CampaignScan, CampaignID: c.ID, Segment: m.Segment, Segments: m.Segments, Page: m.Page + 1, After: next})
	}
	if len(msgs) > 0 {
		if err := h.queue.SendCampaign(ctx, msgs, 0); err != nil {
			return err
		}
	}
	log.InfoContext(ctx, "campaign scan page", "segment", m.Segment, "page", m.Page, "recipients", len(ids), "last", next == "", "outcome", "scanned")
	if next == "" { // the segment's end: the campaign may be finished (no profiles, or every lot settled)
		err = h.finish(ctx, log, c.ID)
	}
	return err
}

// readPage reads the next page of a scan: profiles of a segment, or
// subscribers of a topic's shard less the users the send excludes.
func (h *Handler) readPage(ctx context.Context, c *domain.Campaign, m domain.CampaignMessage) ([]string, string, error) {
	if c.Topic == "" {
		return h.store.ScanProfiles(ctx, m.Segment, m.Segments, m.After, domain.MaxChunkRecipients)
	}
	ids, next, err := h.store.ScanSubscribers(ctx, c.Topic, m.Segment, m.After, domain.MaxChunkRecipients)
	if err != nil || len(c.Exclude) == 0 {
		return ids, next, err
	}
	kept := ids[:0]
	for _, id := range ids {
		if !slices.Contains(c.Exclude, id) {
			kept = append(kept, id)
		}
	}
	return kept, next, nil
}

// lot creates the notifications of one chunk and records the lot's result.
func (h *Handler) lot(ctx context.Context, log *slog.Logger, m domain.CampaignMessage) error {
	if lot, err := h.store.GetLot(ctx, m.CampaignID, m.Chunk); err == nil {
		// Recorded already (a duplicate message, or a retry after the
		// record): carry on from the reconcile.
		return h.afterRecord(ctx, log, m, lot)
	} else if !errors.Is(err, domain.ErrNotFound) {
		return err
	}
	c, err := h.store.GetCampaign(ctx, m.CampaignID)
	if err != nil {
		return err
	}
	ids, err := h.store.GetChunk(ctx, c.ID, m.Chunk)
	if err != nil {
		return err
	}
	lot := &domain.CampaignLot{Chunk: m.Chunk, Total: len(ids), RetainFrom: c.RetainFrom()}
	if c.Status == domain.CampaignCancelled {
		lot.Counts.Dropped = len(ids)
	} else {
		typ, ok := h.catalog.Lookup(c.Type)
		if !ok {
			return fmt.Errorf("campaign %s: type %s is no longer in the catalog", c.ID, c.Type)
		}
		if c.Data, err = h.store.GetCampaignData(ctx, c.ID); err != nil {
			return err
		}
		if err := h.createNotifications(ctx, c, typ, m.Chunk, ids, lot); err != nil {
			return err
		}
	}
	err = h.store.RecordLot(ctx, c.ID, lot)
	if errors.Is(err, domain.ErrConflict) { // a concurrent copy recorded it
		return nil
	}
	if err != nil {
		return err
	}
	dims := metrics.Dims{Priority: c.Priority}
	h.metrics.Add(ctx, metrics.CampaignLots, dims, 1)
	h.metrics.Add(ctx, metrics.CampaignNotified, dims, lot.Counts.Notified)
	h.metrics.Add(ctx, metrics.CampaignSkipped, dims, lot.Counts.Skipped)
	h.metrics.Add(ctx, metrics.CampaignDropped, dims, lot.Counts.Dropped)
	log.InfoContext(ctx, "campaign lot created", "recipients", lot.Total, "notified", lot.Counts.Notified,
		"skipped", lot.Counts.Skipped, "dropped", lot.Counts.Dropped, "outcome", "recorded")
	return h.afterRecord(ctx, log, m, lot)
}

// finish finishes the campaign if every lot is settled and, when this call
// did, logs how far its estimate at start was from its real drain (no
// recipient named): the estimate's error at completion.
func (h *Handler) finish(ctx context.Context, log *slog.Logger, id string) error {
	finished, err := h.store.FinishCampaign(ctx, id)
	if err != nil || !finished {
		return err
	}
	c, err := h.store.GetCampaign(ctx, id)
	if err != nil {
		log.WarnContext(ctx, "campaign finished; its estimate's error unknown", "error", err, "outcome", "finished")
		return nil // finished: a retry would find nothing to finish
	}
	attrs := []any{"status", c.Status, "recipients", c.Recipients, "sent", c.Counts.Sent, "outcome", "finished"}
	if est, ok := c.StartEstimate(); ok {
		begin := domain.Latest(c.StartedAt, c.SendAt)
		drain, estimated := c.FinishedAt.Sub(begin), est.Sub(begin)
		attrs = append(attrs, "recipientsPerSecond", c.Pace.RecipientsPerSecond, "estimatedSeconds", estimated.Seconds(),
			"drainSeconds", drain.Seconds(), "estimateErrorSeconds", c.FinishedAt.Sub(est).Seconds())
		if estimated > 0 {
			attrs = append(attrs, "estimateErrorRatio", float64(drain-estimated)/float64(estimated))
		}
	}
	log.InfoContext(ctx, "campaign finished", attrs...)
	return nil
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// LotSeconds is how long a lot of n notifications takes at least at its
// share of the fan-out rate (0 when unpaced).
func (h *Handler) LotSeconds(n int) float64 {
	if h.lotRate <= 0 {
		return 0
	}
	return float64(n) / h.lotRate
}

// createNotifications creates the notification of every recipient of ids
// that has a profile, at most h.concurrency at once, the k-th no earlier
// than k / lotRate seconds after the first (the fan-out's write budget),
// and fills lot: the
// notified recipients are pending, the others skipped (no profile, or listed
// in another chunk whose lot created theirs).
func (h *Handler) createNotifications(ctx context.Context, c *domain.Campaign, typ *catalog.Type, chunk string, ids []string, lot *domain.CampaignLot) error {
	profiles, err := h.store.ExistingProfiles(ctx, ids)
	if err != nil {
		return err
	}
	var muted map[string]bool // read as the send reaches them: a mute takes effect on the next send
	if c.Topic != "" && !typ.Mandatory {
		if muted, err = h.store.MutedSubscribers(ctx, c.Topic, ids); err != nil {
			return err
		}
	}
	now := h.now()
	notified, dropped := make([]bool, len(ids)), make([]bool, len(ids))
	var firstErr atomic.Pointer[error]
	var next, paced atomic.Int64
	var cancelled atomic.Bool
	start := time.Now()
	stopWatch := h.watchCancel(ctx, c.ID, &cancelled)
	defer stopWatch()
	var wg sync.WaitGroup
	for range min(h.concurrency, len(ids)) {
		wg.Go(func() {
			for {
				if firstErr.Load() != nil || cancelled.Load() {
					return
				}
				i := int(next.Add(1) - 1)
				if i >= len(ids) {
					return
				}
				if !profiles[ids[i]] {
					continue
				}
				if h.lotRate > 0 {
					k := paced.Add(1) - 1
					due := time.Duration(float64(k) / h.lotRate * float64(time.Second))
					if wait := due - time.Since(start); wait > 0 {
						if err := h.sleep(ctx, wait); err != nil {
							firstErr.CompareAndSwap(nil, &err)
							return
						}
					}
					if cancelled.Load() { // cancelled while it waited its turn
						dropped[i] = true
						return
					}
				}
				n := NotificationFor(c, typ, chunk, ids[i], now)
				n.Muted = muted[ids[i]]
				stored, err := h.store.CreateNotification(ctx, n)
				switch {
				case err == nil:
					notified[i] = true
				case errors.Is(err, domain.ErrConflict) && stored != nil:
					// Ours from an earlier try of this lot, or the same
					// user in another chunk (counted there).
					notified[i] = stored.CampaignID == c.ID && stored.CampaignChunk == chunk
				default:
					err = fmt.Errorf("create notification: %w", err)
					firstErr.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	if p := firstErr.Load(); p != nil {
		return *p
	}
	// Indices from reached on were never taken: the cancel dropped them.
	reached := min(int(next.Load()), len(ids))
	for i, id := range ids {
		switch {
		case notified[i]:
			lot.Pending = append(lot.Pending, id)
			lot.Counts.Notified++
		case dropped[i] || i >= reached && profiles[id]:
			lot.Counts.Dropped++
		default:
			lot.Counts.Skipped++
		}
	}
	return nil
}

// watchCancel reads the campaign's status every h.cancelCheck while a paced
// lot creates its notifications and sets cancelled when it is cancelled, so
// the lot stops creating and counts the rest dropped at once instead of
// creating them for the workers to drop one by one. An unpaced lot is over
// in well under a check. It returns the function that stops the watch.
func (h *Handler) watchCancel(ctx context.Context, id string, cancelled *atomic.Bool) func() {
	if h.lotRate <= 0 {
		return func() {}
	}
	ctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for sleepCtx(ctx, h.cancelCheck) == nil {
			c, err := h.store.GetCampaign(ctx, id)
			if err == nil && c.Status == domain.CampaignCancelled {
				cancelled.Store(true)
				return
			}
		}
	}()
	return func() { stop(); <-done }
}

// NotificationFor is the notification a campaign creates for one user: the
// campaign's content, an id derived from (campaign, user), the campaign's
// caller (who may read it), without a requested expiry the type's default
// counted from now (or sendAt when later), and its latest due time.
func NotificationFor(c *domain.Campaign, typ *catalog.Type, chunk, userID string, now time.Time) *domain.Notification {
	n := &domain.Notification{
		ID: domain.CampaignNotificationID(c.ID, userID), Caller: c.Caller, Type: c.Type,
		Recipient: domain.Recipient{UserID: userID}, Data: c.Data, Priority: c.Priority, Channels: c.Channels,
		SendAt: c.SendAt, ExpiresAt: c.ExpiresAt, CreatedAt: now, Status: domain.NotificationAccepted,
		CampaignID: c.ID, CampaignChunk: chunk, Topic: c.Topic,
	}
	if n.ExpiresAt.IsZero() && typ.DefaultExpiry > 0 {
		start := now
		if c.SendAt.After(now) {
			start = c.SendAt
		}
		n.ExpiresAt = start.Add(typ.DefaultExpiry)
	}
	n.LastDue = policy.LatestDue(n, typ) // kept until then plus the retention
	return n
}

// afterRecord continues a recorded lot: a settled one may finish the
// campaign, a pending one is reconciled later.
func (h *Handler) afterRecord(ctx context.Context, log *slog.Logger, m domain.CampaignMessage, lot *domain.CampaignLot) error {
	if lot.Settled() {
		err := h.finish(ctx, log, m.CampaignID)
		return err
	}
	return h.queue.SendCampaign(ctx, []domain.CampaignMessage{{Kind: domain.CampaignReconcile, CampaignID: m.CampaignID, Chunk: m.Chunk}}, h.delay)
}

// reconcile recounts a lot's pending recipients from their deliveries, and
// sends itself again for the time NextReconcile gives. Received before its
// NotBefore, it only waits on (no read).
func (h *Handler) reconcile(ctx context.Context, log *slog.Logger, m domain.CampaignMessage) error {
	if wait := m.NotBefore.Sub(h.now()); wait > 0 {
		return h.queue.SendCampaign(ctx, []domain.CampaignMessage{m}, min(wait, ReconcileWaitStep(h.delay)))
	}
	lot, err := h.store.GetLot(ctx, m.CampaignID, m.Chunk)
	if err != nil {
		return err
	}
	if lot.Settled() {
		err := h.finish(ctx, log, m.CampaignID)
		return err
	}
	c, err := h.store.GetCampaign(ctx, m.CampaignID)
	if err != nil {
		return err
	}
	typ, ok := h.catalog.Lookup(c.Type)
	if !ok {
		return fmt.Errorf("campaign %s: type %s is no longer in the catalog", c.ID, c.Type)
	}
	channels := policy.Channels(&domain.Notification{Channels: c.Channels}, typ)
	keys := make([]domain.DeliveryKey, 0, len(lot.Pending)*len(channels))
	for _, u := range lot.Pending {
		for _, ch := range channels {
			keys = append(keys, domain.DeliveryKey{NotificationID: domain.CampaignNotificationID(c.ID, u), Channel: ch})
		}
	}
	existing, _, err := h.store.ReadPlanning(ctx, keys, nil)
	if err != nil {
		return err
	}
	if c.Status == domain.CampaignCancelled {
		if err := h.dropUnsent(ctx, c, lot.Pending, channels, existing); err != nil {
			return err
		}
	}
	now := h.now()
	next := Recount(lot, c, channels, existing, now, h.pendingLimit)
	if len(next.Pending) == len(lot.Pending) { // nothing final yet: later, backing off
		return h.recountAt(ctx, m, NextReconcile(lot.Pending, c, channels, existing, now, h.delay, m.Idle+1, h.pendingLimit), m.Idle+1)
	}
	err = h.store.ReconcileLot(ctx, c.ID, lot, next)
	if errors.Is(err, domain.ErrConflict) {
		return nil // another copy of this reconcile counted it and carries on
	}
	if err != nil {
		return err
	}
	h.metrics.Add(ctx, metrics.CampaignReconciles, metrics.Dims{Priority: c.Priority}, 1)
	log.InfoContext(ctx, "campaign lot reconciled", "pending", len(next.Pending), "sent", next.Counts.Sent,
		"skipped", next.Counts.Skipped, "failed", next.Counts.Failed, "dropped", next.Counts.Dropped, "outcome", "reconciled")
	if next.Settled() {
		err := h.finish(ctx, log, m.CampaignID)
		return err
	}
	return h.recountAt(ctx, m, NextReconcile(next.Pending, c, channels, existing, now, h.delay, 0, h.pendingLimit), 0)
}

// dropUnsent ends every delivery of a cancelled campaign's pending
// recipients that no worker holds — absent (its work message still
// queued), planned, queued, retrying, deferred, or sending under an ended
// lease — dropped: cancelled, with the worker's own conditional write
// (creating the item of a channel sent at once), at most h.concurrency at
// once, and records the outcomes in existing. A lot's pending recipients
// settle in one reconcile instead of one worker message at a time; a worker
// that receives one later finds it final and sends nothing, and one sending
// now keeps its claim and is counted when it ends.
func (h *Handler) dropUnsent(ctx context.Context, c *domain.Campaign, pending []string, channels []domain.Channel, existing map[domain.DeliveryKey]domain.Delivery) error {
	var mu sync.Mutex
	var firstErr atomic.Pointer[error]
	var next atomic.Int64
	now := h.now()
	from := []domain.Status{domain.StatusPlanned, domain.StatusQueued, domain.StatusRetrying, domain.StatusDeferred}
	var wg sync.WaitGroup
	for range min(h.concurrency, len(pending)) {
		wg.Go(func() {
			for firstErr.Load() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(pending) {
					return
				}
				id := domain.CampaignNotificationID(c.ID, pending[i])
				var n *domain.Notification
				for _, ch := range channels {
					k := domain.DeliveryKey{NotificationID: id, Channel: ch}
					mu.Lock()
					d, ok := existing[k]
					mu.Unlock()
					if ok && (d.Status.Terminal() || d.Status == domain.StatusSending && d.LeaseUntil.After(now)) {
						continue
					}
					if n == nil {
						var err error
						if n, err = h.store.GetNotification(ctx, id); errors.Is(err, domain.ErrNotFound) {
							break // gone with its deliveries: the pending limit counts it
						} else if err != nil {
							firstErr.CompareAndSwap(nil, &err)
							return
						}
					}
					got, err := h.store.Transition(ctx, id, ch, domain.Change{To: domain.StatusDropped, From: from, Reason: domain.ReasonCancelled,
						ReclaimExpiredLease: now, Create: domain.DeliveryOf(n, ch), Note: "campaign cancelled"})
					if err != nil && !errors.Is(err, domain.ErrConflict) {
						err = fmt.Errorf("drop delivery of a cancelled campaign: %w", err)
						firstErr.CompareAndSwap(nil, &err)
						return
					}
					if got != nil {
						mu.Lock()
						existing[k] = *got
						mu.Unlock()
					}
				}
			}
		})
	}
	wg.Wait()
	if p := firstErr.Load(); p != nil {
		return *p
	}
	return nil
}

// recountAt sends the lot's next reconcile, due at `at`: delayed by at
// most ReconcileWaitStep, holding NotBefore when that is not far enough.
func (h *Handler) recountAt(ctx context.Context, m domain.CampaignMessage, at time.Time, idle int) error {
	wait, step := at.Sub(h.now()), ReconcileWaitStep(h.delay)
	msg := domain.CampaignMessage{Kind: domain.CampaignReconcile, CampaignID: m.CampaignID, Chunk: m.Chunk, Idle: idle}
	if wait > step {
		msg.NotBefore = at
	}
	return h.queue.SendCampaign(ctx, []domain.CampaignMessage{msg}, min(wait, step))
}

// ReconcileWaitStep is the longest one reconcile message is delayed: SQS's
// 15 minutes, or 30 reconcile delays when shorter. A longer wait is a chain
// of such messages that read nothing.
func ReconcileWaitStep(delay time.Duration) time.Duration {
	return min(MaxQueueDelay, waitStepsPerDelay*delay)
}

// MaxReconcileBackoff is the longest an idle lot's recounts are apart:
// 2^reconcileBackoffSteps × the reconcile delay.
func MaxReconcileBackoff(delay time.Duration) time.Duration { return delay << reconcileBackoffSteps }

// NextReconcile is when a lot with pending recipients is recounted next.
// While a pending recipient has a channel in flight — planned, queued,
// sending, retrying, or no item yet (not planned, or sent at once and not
// claimed) — after delay, doubled for each idle recount before (at most
// MaxReconcileBackoff). When every pending channel is deferred, nothing can
// change before the earliest due time: after it (plus delay, for the
// release). Never after the pending limit, where Recount counts the rest
// failed.
func NextReconcile(pending []string, c *domain.Campaign, channels []domain.Channel, existing map[domain.DeliveryKey]domain.Delivery,
	now time.Time, delay time.Duration, idle int, pendingLimit time.Duration) time.Time {
	var due time.Time // the earliest due time of the deferred channels
	inFlight := false
	for _, u := range pending {
		id := domain.CampaignNotificationID(c.ID, u)
		for _, ch := range channels {
			d, ok := existing[domain.DeliveryKey{NotificationID: id, Channel: ch}]
			switch {
			case ok && d.Status.Terminal():
			case ok && d.Status == domain.StatusDeferred && d.DueAt.After(now):
				if due.IsZero() || d.DueAt.Before(due) {
					due = d.DueAt
				}
			default:
				inFlight = true
			}
		}
	}
	at := due.Add(delay)
	if inFlight || due.IsZero() {
		at = now.Add(min(delay<<min(max(idle, 0), reconcileBackoffSteps), MaxReconcileBackoff(delay)))
	}
	if limit := pendingSince(c).Add(pendingLimit + delay); !pendingSince(c).IsZero() && limit.After(now) && at.After(limit) {
		at = limit
	}
	return at
}

// pendingSince is when a campaign's pending limit starts: its start, or its
// sendAt when later.
func pendingSince(c *domain.Campaign) time.Time { return domain.Latest(c.StartedAt, c.SendAt) }

// Recount returns lot's next version: every pending recipient whose
// deliveries on channels are all final moves to its outcome; past the
// pending limit (from the campaign's start, or sendAt when later) the rest
// are counted failed.
func Recount(lot *domain.CampaignLot, c *domain.Campaign, channels []domain.Channel, existing map[domain.DeliveryKey]domain.Delivery, now time.Time, pendingLimit time.Duration) *domain.CampaignLot {
	next := &domain.CampaignLot{Chunk: lot.Chunk, Total: lot.Total, Counts: lot.Counts, Version: lot.Version}
	start := pendingSince(c)
	expired := !start.IsZero() && now.Sub(start) > pendingLimit
	for _, u := range lot.Pending {
		id := domain.CampaignNotificationID(c.ID, u)
		ds := make(map[domain.Channel]domain.Delivery, len(channels))
		for _, ch := range channels {
			if d, ok := existing[domain.DeliveryKey{NotificationID: id, Channel: ch}]; ok {
				ds[ch] = d
			}
		}
		o := domain.OutcomeOf(channels, ds)
		if o == domain.OutcomePending && expired {
			o = domain.OutcomeFailed
		}
		if o == domain.OutcomePending {
			next.Pending = append(next.Pending, u)
			continue
		}
		next.Counts.Count(o)
	}
	return next
}
