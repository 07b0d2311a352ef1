// Package worker is the loop shared by the email, SMS and push functions. Per
// SQS message: decode → load → recheck → claim → render → send → record, with
// errors classified as transient (retry with backoff, then DLQ) or permanent.
// One message never fails the batch: the handler returns partial batch
// failures by messageId.
//
// Outcomes per message:
//   - malformed body (or a channel its notification does not plan): reported
//     failed with visibility 0 and nothing else touched, so SQS redrives it
//     to the channel DLQ after maxReceiveCount immediate receives;
//   - recheck says it no longer applies (cancelled, expired, preference off,
//     suppressed, no contact): dropped with the reason, message deleted;
//   - claim lost (another message's claim holds a live lease, or the
//     delivery is already past sending): nothing recorded, message deleted —
//     the holder's own message carries the delivery on. A live lease this
//     same message took on an earlier receive (the claim records the SQS
//     message id as its holder) is not another's: the message is kept,
//     visible again when the lease has ended, and reclaims it then;
//   - no send quota for its priority (policy.SendQuota, taken before the
//     claim; high priority waits up to policy.HighQuotaWait for its reserve
//     in the next slots first): nothing recorded, no attempt, visible again
//     after 1–2 s; from the receive before the queue's last it is re-sent
//     delayed and the original deleted, so waiting for quota never redrives
//     it to the DLQ. A token older than policy.MaxTokenAge when the provider
//     is about to be called is replaced by one of the current slot; if none
//     is left, the claim is given back (retrying, attempt refunded) and the
//     message deferred the same way;
//   - sent: recorded with the provider's message id, message deleted;
//   - permanent provider error: failed (or dropped where that is the truth),
//     message deleted — nothing goes to the DLQ;
//   - transient provider error: retrying, visibility set to the backoff
//     min(cap, base·2^(n-1)) with full jitter (n = ApproximateReceiveCount,
//     at least the provider's Retry-After; at least until the lease ends
//     when the retrying write fails), reported failed; on receive
//     n = MaxReceiveCount it is recorded failed: exhausted and made visible at
//     once, so SQS moves it to the DLQ on the next receive. A provider
//     throttle is also counted as Throttled.
//   - a provider with several targets (push: browsers and devices) reports
//     the targets each attempt reached; they are added to the delivery's
//     SentTargets in the outcome's own write and skipped by the retry, and
//     the last receive records sent rather than failed when any target was
//     reached.
//
// The claim creates the delivery. A channel sent at once has no delivery
// item before its worker: the relay only sends the message. The claim (and
// a recheck's outcome) is a conditional write that creates the item when it
// is absent (with the notification's recipient, priority, caller, type,
// campaign and resource, which delivery events carry) or moves it from a
// claimable state. It does so only for a channel the notification plans,
// checked on the loaded notification first; for a cancelled notification
// it creates nothing (the cancel wrote the dropped: cancelled item; the
// status view derives it otherwise), except for a campaign's, whose lot
// counts the dropped item. A cancel that lands after the worker's read
// wrote that item before the claim, so the claim loses: nothing is sent.
//
// Duplicate window. SQS delivers at least once and the relay may send a work
// message twice; the claim (a conditional absent|planned|queued|retrying →
// sending with a lease and attempts+1) lets exactly one holder send at a
// time, and a terminal status ends every later copy. What the claim cannot close is a
// crash (or timeout) after the provider accepted the message and before sent
// is recorded: the message reappears after its visibility timeout (180 s, six
// times the function timeout), the lease (the invocation's deadline) has
// expired by then, the delivery is reclaimed and sent again. The window is
// one provider call plus one DynamoDB write, and it can only produce a second
// copy, never a lost one. Web Push narrows it further: the Topic derived from
// the notification id makes a push service replace an undelivered copy.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/failover"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/policy"
)

// Store is what the worker needs from the table.
type Store interface {
	// LoadWork reads the notification and the recipient's profile;
	// domain.ErrNotFound when the notification is gone. The delivery is not
	// read: the claim's conditional write answers its state.
	LoadWork(ctx context.Context, wm domain.WorkMessage) (*domain.Notification, *domain.RecipientProfile, error)
	// Transition applies a conditional change and returns the delivery as it
	// is after it; on domain.ErrConflict it returns the delivery as it was
	// (nil when there is none).
	Transition(ctx context.Context, id string, ch domain.Channel, c domain.Change) (*domain.Delivery, error)
}

// QuotaStore holds the channels' shared send-quota counters (dynamo.Quotas).
type QuotaStore interface {
	// TakeSendToken takes one send from a shard of the slot starting at
	// windowStart (lasting window) if its count is below limit, and reports
	// whether it did.
	TakeSendToken(ctx context.Context, c domain.Channel, shard int, windowStart time.Time, window time.Duration, limit int) (bool, error)
}

// BreakerStore holds the providers' circuit breakers (dynamo.Breakers),
// shared by every worker: written only when a send fails or probes, read
// through the handler's cache (failover.Rules.Refresh).
type BreakerStore interface {
	Breaker(ctx context.Context, provider string) (failover.Breaker, error)
	RecordFailure(ctx context.Context, provider string, now time.Time, r failover.Rules) (_ failover.Breaker, opened bool, _ error)
	TakeProbe(ctx context.Context, provider string, now time.Time, lease time.Duration) (bool, error)
	ProbeSucceeded(ctx context.Context, provider string) (closed bool, _ error)
	ProbeFailed(ctx context.Context, provider string, now time.Time, r failover.Rules) error
}

// Requeuer sends a copy of a message back to its queue, delayed: the copy
// starts with a fresh receive count.
type Requeuer interface {
	Requeue(ctx context.Context, queueARN, body string, delay time.Duration) error
}

// Visibility delays a message's next receive.
type Visibility interface {
	SetVisibility(ctx context.Context, queueARN, receiptHandle string, timeout time.Duration) error
}

// Config tunes the loop.
type Config struct {
	BackoffBase time.Duration
	BackoffCap  time.Duration
	// HighBackoffBase replaces BackoffBase for high priority (shorter).
	HighBackoffBase time.Duration
	// MaxReceiveCount is the queue's redrive maxReceiveCount: the receive on
	// which a transient failure is final.
	MaxReceiveCount int
	// Lease bounds a claim when the invocation has no deadline; with one (a
	// Lambda invocation) the lease ends at the deadline, when a sender that
	// has not finished is dead. A crashed sender's delivery is reclaimable
	// after it.
	Lease time.Duration
	// SendQuota is the channel's provider send-rate quota (zero: unlimited).
	SendQuota policy.SendQuota
	// SendMargin is the time kept after a provider call, before the
	// invocation's deadline, to record its outcome; zero means
	// DefaultSendMargin.
	SendMargin time.Duration
}

// Handler is the channel Lambda handler.
type Handler struct {
	cfg        Config
	store      Store
	visibility Visibility
	quota      QuotaStore
	requeuer   Requeuer
	provider   channel.Provider
	// providerName names the provider (Deps.ProviderName).
	providerName string
	failover     *Failover
	breakers     BreakerStore
	rules        failover.Rules
	brMu         sync.Mutex
	brCache      map[string]cachedBreaker
	catalog      *catalog.Catalog
	now          func() time.Time
	log          *slog.Logger
	metrics      metrics.Recorder
	randMu       sync.Mutex
	rand         *rand.Rand
	// spent remembers, per quota class (bulk-capped low, or the whole quota
	// of normal and high; keyed by policy.BulkCapped), the slot in which
	// this instance found the quota exhausted: later sends of that class in
	// the same slot are deferred without a request, so refused writes per
	// slot are bounded by instances × probes, not by the offered load.
	spentMu sync.Mutex
	spent   map[spentKey]time.Time
	// sleep waits for the next quota slot (a timer; tests advance a clock).
	sleep func(ctx context.Context, d time.Duration) error
}

// Deps are the worker's collaborators and settings. Store, Visibility,
// Provider, Catalog, Now and Log are required; Config's zero durations are
// documented on Config.
type Deps struct {
	Config     Config
	Store      Store
	Visibility Visibility
	Provider   channel.Provider
	Catalog    *catalog.Catalog
	Now        func() time.Time
	Log        *slog.Logger
	// Metrics counts the outcomes (Sent, Retried, Failed, Dropped by
	// channel, priority and reason) and the delivery latency of what is
	// sent, flushed once per invocation; nil records nothing.
	Metrics metrics.Recorder
	// Quota holds the send-quota counters; required when Config.SendQuota
	// has a rate.
	Quota QuotaStore
	// Requeuer re-sends a message deferred for quota near its queue's
	// maxReceiveCount, so that waiting for quota never redrives it to the
	// DLQ; nil defers by visibility only.
	Requeuer Requeuer
	// ProviderName names Provider on deliveries, metrics and breakers
	// (ses:<region>, sns, sms-voice); empty (push) records none.
	ProviderName string
	// Failover is the channel's second provider; nil: none.
	Failover *Failover
	// Breakers keeps the providers' circuit breakers (nil: none, the
	// primary is always used); Rules tune them (zero: failover.DefaultRules).
	Breakers BreakerStore
	Rules    failover.Rules
}

// New wires a worker for one provider.
func New(d Deps) *Handler {
	cfg := d.Config
	if cfg.HighBackoffBase == 0 {
		cfg.HighBackoffBase = cfg.BackoffBase / 4
	}
	if cfg.Lease == 0 {
		cfg.Lease = 30 * time.Second
	}
	if cfg.SendMargin == 0 {
		cfg.SendMargin = DefaultSendMargin
	}
	m := d.Metrics
	if m == nil {
		m = metrics.Nop{}
	}
	seed := uint64(time.Now().UnixNano())
	rules := d.Rules
	if rules == (failover.Rules{}) {
		rules = failover.DefaultRules
	}
	fo := d.Failover
	if fo != nil && fo.Secondary == nil {
		fo = nil
	}
	return &Handler{cfg: cfg, store: d.Store, visibility: d.Visibility, quota: d.Quota, requeuer: d.Requeuer, provider: d.Provider, catalog: d.Catalog, now: d.Now, log: d.Log,
		providerName: d.ProviderName, failover: fo, breakers: d.Breakers, rules: rules, brCache: map[string]cachedBreaker{},
		metrics: m, rand: rand.New(rand.NewPCG(seed, seed>>1)), spent: map[spentKey]time.Time{}, sleep: sleepCtx}
}

// sleepCtx waits d, or until ctx ends.
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

// maxParallel bounds the messages of one batch processed at once.
const maxParallel = 10

// DefaultSendMargin is Config.SendMargin's default: of a 30 s invocation,
// provider calls get 25 s and the outcome writes (one conditional UpdateItem
// and a ChangeMessageVisibility, milliseconds each, with the SDK's retries)
// keep 5 s.
const DefaultSendMargin = 5 * time.Second

// minSendTime is the least time a claim must leave its provider call: a
// message reaching its claim later is put back without an attempt.
const minSendTime = time.Second

// sendContext is the context of a provider call: the invocation's, ending
// SendMargin before its deadline, so that the outcome of a call cut off
// there is still recorded (a slow provider never times out the whole
// batch). ok is false when less than minSendTime would be left to send.
func (h *Handler) sendContext(ctx context.Context) (_ context.Context, cancel context.CancelFunc, ok bool) {
	dl, has := ctx.Deadline()
	if !has {
		return ctx, func() {}, true
	}
	end := dl.Add(-h.cfg.SendMargin)
	if time.Until(end) < minSendTime {
		return nil, nil, false
	}
	sendCtx, cancel := context.WithDeadline(ctx, end)
	return sendCtx, cancel, true
}

// Handle processes a batch; failed items are retried by SQS, the rest deleted.
// Messages are independent (each claims its own delivery), so they are
// processed concurrently: a batch takes about its slowest provider call, not
// the sum. A panic fails only its own message.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	failed := make([]bool, len(ev.Records))
	sem := make(chan struct{}, maxParallel)
	var wg sync.WaitGroup
	for i, msg := range ev.Records {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() {
				if r := recover(); r != nil {
					h.log.ErrorContext(ctx, "worker panic", "messageId", msg.MessageId, "panic", fmt.Sprint(r))
					failed[i] = true
				}
				<-sem
				wg.Done()
			}()
			failed[i] = h.handleOne(ctx, msg) != nil
		}()
	}
	wg.Wait()
	h.metrics.Flush(ctx)
	var resp events.SQSEventResponse
	for i, f := range failed {
		if f {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: ev.Records[i].MessageId})
		}
	}
	return resp, nil
}

// errRetry marks a message to be reported as failed (retried by SQS).
var errRetry = errors.New("retry")

func (h *Handler) handleOne(ctx context.Context, msg events.SQSMessage) error {
	wm, err := domain.DecodeWorkMessage(msg.Body, h.provider.Channel())
	if err != nil {
		return h.malformed(ctx, h.log.With("messageId", msg.MessageId), msg, "undecodable body or wrong channel")
	}
	log := h.log.With("notificationId", wm.NotificationID, "channel", wm.Channel, "messageId", msg.MessageId)
	n, profile, err := h.store.LoadWork(ctx, wm)
	if errors.Is(err, domain.ErrNotFound) {
		log.WarnContext(ctx, "notification gone", "outcome", "discarded")
		return nil
	}
	if err != nil {
		log.ErrorContext(ctx, "load failed", "error", err)
		return h.retryLater(ctx, log, msg, "")
	}
	// The delivery's priority is its notification's (the relay copies it).
	p := n.Priority
	log = log.With("priority", p)
	// Not from a live sending: a duplicate must not overwrite the outcome of
	// the worker that holds the claim.
	claimable := []domain.Status{domain.StatusPlanned, domain.StatusQueued, domain.StatusRetrying}
	typ, ok := h.catalog.Lookup(n.Type)
	if !ok {
		// Without its type the plan cannot be told: only a delivery that
		// exists is failed; none is a message to look at (DLQ).
		return h.settleUnclaimed(ctx, log, msg, n, domain.Change{To: domain.StatusFailed, From: []domain.Status{domain.StatusQueued, domain.StatusRetrying},
			ReclaimExpiredLease: h.now(), Reason: domain.ReasonNotApplicable, LastError: "unknown type"})
	}
	// The claim creates the delivery of a channel sent at once, so it may
	// only do so for a channel the notification plans: anything else is a
	// message that names a delivery out of nothing (DLQ).
	if !slices.Contains(policy.Channels(n, typ), wm.Channel) {
		return h.malformed(ctx, log, msg, "channel not planned by the notification")
	}
	create := domain.DeliveryOf(n, wm.Channel)
	now := h.now()
	contact, reason := h.recheck(n, typ, profile, now)
	if reason != domain.ReasonNone {
		to := domain.StatusDropped
		if reason == domain.ReasonActiveInApp {
			to = domain.StatusSkipped
		}
		c := domain.Change{To: to, From: claimable, ReclaimExpiredLease: now, Reason: reason, Create: create}
		if reason == domain.ReasonCancelled && n.CampaignID == "" {
			// A cancelled notification's unclaimed channels are shown
			// dropped: cancelled from the notification itself: nothing is
			// created for them (a delivery that exists is dropped).
			// Campaign notifications get the item: their lot counts it.
			c.Create = nil
		}
		return h.settleUnclaimed(ctx, log, msg, n, c)
	}

	// The provider before the quota: each keeps its own. A probe of the
	// primary's half-open breaker counts in the secondary's, where the
	// attempt goes when another worker holds the probe.
	choice := h.chooseTarget(ctx, "")
	at := attempt{to: h.primary()}
	if choice != failover.Primary {
		at.to, _ = h.secondary()
	}
	// Quota before the claim: a send that finds none burns no attempt.
	slot, ok, err := h.acquireQuota(ctx, wm.Channel, at.to, p)
	if err != nil {
		log.ErrorContext(ctx, "send quota failed", "error", err)
		return h.retryLater(ctx, log, msg, p)
	} else if !ok {
		return h.deferForQuota(ctx, log, msg, wm.Channel, p)
	}

	sendCtx, cancelSend, ok := h.sendContext(ctx)
	if !ok {
		// Too late in the invocation to send and record: no claim, no
		// attempt; another invocation takes it at once.
		log.WarnContext(ctx, "no time left to send", "outcome", "deadline")
		h.setVisibility(ctx, log, msg, 0)
		return errRetry
	}
	defer cancelSend()

	// The claim is also the worker's only look at the delivery: it returns
	// the item as it is after the claim (digest id, attempts), or as it was
	// when the claim is refused.
	d, err := h.store.Transition(ctx, n.ID, wm.Channel, domain.Change{
		To: domain.StatusSending, From: claimable,
		ReclaimExpiredLease: now, LeaseUntil: now.Add(h.lease(ctx)), LeaseHolder: msg.MessageId, IncrementAttempts: true, Create: create,
	})
	if errors.Is(err, domain.ErrConflict) {
		return h.unclaimable(ctx, log, msg, d)
	}
	if err != nil {
		log.ErrorContext(ctx, "claim failed", "error", err)
		return h.retryLater(ctx, log, msg, p)
	}
	log = log.With("attempt", d.Attempts)
	// A delivery whose earlier attempt has an unknown outcome goes only to
	// that provider (failover's rule): its quota is taken anew.
	pinned := d.PinnedProvider != "" && d.PinnedProvider != at.to.name
	if pinned {
		at = attempt{to: h.targetNamed(d.PinnedProvider)}
	} else if choice == failover.Probe && h.takeProbe(ctx, log) {
		at = attempt{to: h.primary(), probe: true}
	}

	content, err := h.render(ctx, n, d, typ, locale(n, profile)) // digest.go: a digest leader renders its digest
	if errors.Is(err, errDigestLoad) {
		return h.retryDigest(ctx, log, msg, d, err)
	}
	if err != nil {
		return h.finish(ctx, log, n.ID, domain.Change{To: domain.StatusFailed, From: []domain.Status{domain.StatusSending}, Reason: domain.ReasonNotApplicable, LastError: "render failed"})
	}
	// The quota's bound at the provider assumes the call starts within
	// MaxTokenAge of the token's slot: a token the claim and render made
	// stale is replaced by one of the current slot, or the send given back.
	if pinned || !slot.IsZero() && h.now().Sub(slot) > policy.MaxTokenAge {
		var taken bool
		if slot, taken, err = h.retakeQuota(ctx, log, msg, n.ID, wm.Channel, at.to, d.Priority); !taken {
			return err
		}
	}
	cm := &channel.Message{Notification: n, Type: typ, Profile: profile, Content: content, Contact: contact, SentTargets: d.SentTargets}
	takeSecondary := func(sec target) bool {
		s, ok, err := h.acquireQuota(ctx, wm.Channel, sec, d.Priority)
		if err != nil || !ok {
			log.WarnContext(ctx, "no send quota to fail over", "provider", sec.name, "error", err)
			return false
		}
		slot = s
		return true
	}
	tried, pmid, sendErr := h.send(ctx, sendCtx, log, wm.Channel, d, at, cm, takeSecondary)
	log = log.With("provider", tried.name)
	// Targets of a multi-target provider reached by this attempt, kept on
	// the delivery so that a retry skips them.
	accepted := newTargets(d.SentTargets, cm.Accepted)
	if lag := h.now().Sub(slot); !slot.IsZero() && lag > policy.QuotaLag {
		// Only the provider's own latency gets here; logged so that a bound
		// measured at the provider can tell it from over-admission.
		log.WarnContext(ctx, "send quota overrun", "lagMs", lag.Milliseconds())
	}
	if sendErr == nil {
		// Latency runs from when the notification was due: a deliberate
		// sendAt is not delay.
		due := n.CreatedAt
		if n.SendAt.After(due) {
			due = n.SendAt
		}
		h.metrics.Observe(ctx, metrics.DeliveryLatency, metrics.Dims{Channel: wm.Channel, Priority: d.Priority}, metrics.Latency(due, h.now()))
		if cm.TargetAlert { // one target's provider refuses to send: an operator must know though others got it
			h.operatorAlert(ctx, log, wm.Channel, d.Priority, cm.TargetError)
		}
		return h.finish(ctx, log, n.ID, domain.Change{To: domain.StatusSent, From: []domain.Status{domain.StatusSending}, ProviderMessageID: pmid,
			AddSentTargets: accepted, LastError: cm.TargetError, Provider: tried.name})
	}
	pe := asProviderError(sendErr)
	if pe.Alert {
		h.operatorAlert(ctx, log, wm.Channel, d.Priority, pe.Code)
	}
	if !pe.Transient {
		to := domain.StatusFailed
		if pe.Drop {
			to = domain.StatusDropped
		}
		reason := pe.Reason
		if reason == "" {
			reason = domain.ReasonRejected
		}
		return h.finish(ctx, log, n.ID, domain.Change{To: to, From: []domain.Status{domain.StatusSending}, Reason: reason, LastError: pe.Code, AddSentTargets: accepted,
			Provider: tried.name})
	}
	if pe.Throttle() {
		h.metrics.Add(ctx, metrics.Throttled, metrics.Dims{Channel: wm.Channel, Priority: d.Priority}, 1)
	}
	code := pe.Code
	if pe.Unknown {
		// Recorded, and pinned: the next attempt goes to this provider only.
		code = "unknown_outcome:" + pe.Code
		log.WarnContext(ctx, "send outcome unknown", "code", pe.Code)
	}
	return h.retryTransient(ctx, log, msg, d, code, pe.RetryAfter, accepted, len(d.SentTargets)+len(accepted) > 0,
		providerOf{name: tried.name, pin: pe.Unknown && tried.name != ""})
}

// operatorAlert logs a provider's refusal an operator must act on (the code
// only: the provider's text may quote an address) and counts it for the
// ProviderRefused alarm.
func (h *Handler) operatorAlert(ctx context.Context, log *slog.Logger, c domain.Channel, p domain.Priority, code string) {
	log.ErrorContext(ctx, channel.OperatorAlert, "code", code)
	h.metrics.Add(ctx, metrics.ProviderRefused, metrics.Dims{Channel: c, Priority: p}, 1)
}

// newTargets are the accepted targets not already in sent, without repeats
// (a string set takes no duplicates).
func newTargets(sent, accepted []string) []string {
	if len(accepted) == 0 {
		return nil
	}
	seen := make(map[string]bool, len(sent)+len(accepted))
	for _, t := range sent {
		seen[t] = true
	}
	var out []string
	for _, t := range accepted {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// acquireQuota takes one send from the channel's quota for priority p and
// returns the slot it counts in (zero without a quota). High priority that
// finds its slot spent waits for the next slots' reserve, up to
// policy.HighQuotaWait: a slot is 200 ms, a deferral through the queue at
// least a second.
func (h *Handler) acquireQuota(ctx context.Context, c domain.Channel, t target, p domain.Priority) (time.Time, bool, error) {
	slot, ok, err := h.takeQuota(ctx, c, t, p)
	if p != domain.PriorityHigh {
		return slot, ok, err
	}
	for wait := policy.QuotaSlot; !ok && err == nil && wait <= policy.HighQuotaWait; wait += policy.QuotaSlot {
		if h.sleep(ctx, slot.Add(policy.QuotaSlot).Sub(h.now())) != nil {
			return slot, false, nil
		}
		slot, ok, err = h.takeQuota(ctx, c, t, p)
	}
	return slot, ok, err
}

// takeQuota takes one send from the channel's quota for priority p in the
// current slot: up to SendQuota.Probes shards from a random one, each
// admitting p up to its slot cap. Once the probes all fail, the rest of the
// slot is spent for p's class on this instance. Without a quota it costs
// nothing and returns the zero slot.
func (h *Handler) takeQuota(ctx context.Context, c domain.Channel, t target, p domain.Priority) (time.Time, bool, error) {
	q := t.quota
	if q.Unlimited() || h.quota == nil {
		return time.Time{}, true, nil
	}
	slot := policy.SlotStart(h.now())
	class := spentKey{secondary: t.secondary, bulk: policy.BulkCapped(p)}
	h.spentMu.Lock()
	spent := h.spent[class].Equal(slot)
	h.spentMu.Unlock()
	if spent {
		return slot, false, nil
	}
	h.randMu.Lock()
	start := h.rand.IntN(q.Shards())
	h.randMu.Unlock()
	for _, shard := range q.ProbeOrder(start) {
		ok, err := h.quota.TakeSendToken(ctx, t.quotaKey(c), shard, slot, policy.QuotaSlot, q.SlotCap(p, shard, slot))
		if err != nil || ok {
			return slot, ok, err
		}
	}
	h.spentMu.Lock()
	h.spent[class] = slot
	h.spentMu.Unlock()
	return slot, false, nil
}

// retakeQuota replaces a stale token of a claimed delivery with one of the
// current slot. Without one, it gives the claim back (retrying, the attempt
// refunded: the provider was not called) and defers the message as a send
// that found no quota; the stale token is wasted, which only under-uses the
// quota. Without a token, the error is the message's outcome (nil: done).
func (h *Handler) retakeQuota(ctx context.Context, log *slog.Logger, msg events.SQSMessage, id string, c domain.Channel, t target, p domain.Priority) (time.Time, bool, error) {
	slot, ok, err := h.takeQuota(ctx, c, t, p)
	if err == nil && ok {
		return slot, true, nil
	}
	if _, terr := h.store.Transition(ctx, id, c, domain.Change{To: domain.StatusRetrying, From: []domain.Status{domain.StatusSending},
		RefundAttempt: true, LastError: "send_quota"}); terr != nil {
		// The lease runs out at the invocation's deadline; the message
		// returns after its visibility timeout and reclaims it.
		log.ErrorContext(ctx, "give back claim failed", "error", terr)
	}
	if err != nil {
		log.ErrorContext(ctx, "send quota failed", "error", err)
		return slot, false, h.retryLater(ctx, log, msg, p)
	}
	return slot, false, h.deferForQuota(ctx, log, msg, c, p)
}

// deferForQuota puts back a message that found no send quota, without a
// provider call or an attempt: invisible for a second or two. SQS counts
// every receive toward maxReceiveCount, so from the receive before the last
// one the message is re-sent with the delay (a fresh receive count) and the
// original deleted: lack of quota alone never redrives it to the DLQ.
func (h *Handler) deferForQuota(ctx context.Context, log *slog.Logger, msg events.SQSMessage, c domain.Channel, p domain.Priority) error {
	h.randMu.Lock()
	delay := policy.QuotaDelay(p, h.rand.Float64())
	h.randMu.Unlock()
	h.metrics.Add(ctx, metrics.QuotaDeferred, metrics.Dims{Channel: c, Priority: p}, 1)
	log = log.With("retryIn", delay.String())
	if h.requeuer != nil && h.cfg.MaxReceiveCount > 0 && receiveCount(msg) >= h.cfg.MaxReceiveCount-1 {
		err := h.requeuer.Requeue(ctx, msg.EventSourceARN, msg.Body, delay)
		if err == nil {
			log.InfoContext(ctx, "no send quota", "outcome", "quota_requeued")
			return nil
		}
		log.WarnContext(ctx, "requeue failed", "error", err)
	}
	log.InfoContext(ctx, "no send quota", "outcome", "quota_deferred")
	h.setVisibility(ctx, log, msg, delay)
	return errRetry
}

// retryTransient puts a claimed delivery (d, as the claim returned it) back
// after a transient failure: retrying, visible again after the backoff (at
// least retryAfter); on the last allowed receive failed: exhausted and
// visible at once, so SQS moves the message to the DLQ on its next receive.
// accepted are the targets this attempt reached (kept for the retry); when
// some target has been reached (reached), the last receive records sent
// instead: the delivery got through.
//
// A retrying write that fails leaves the delivery sending under this
// attempt's lease, which no receive can reclaim before it ends: the message
// comes back after the lease, not after a backoff that may be shorter.
func (h *Handler) retryTransient(ctx context.Context, log *slog.Logger, msg events.SQSMessage, d *domain.Delivery, code string, retryAfter time.Duration,
	accepted []string, reached bool, tried providerOf) error {
	receives := receiveCount(msg)
	if h.cfg.MaxReceiveCount > 0 && receives >= h.cfg.MaxReceiveCount {
		if reached {
			return h.finish(ctx, log, d.NotificationID, domain.Change{To: domain.StatusSent, From: []domain.Status{domain.StatusSending}, LastError: code, AddSentTargets: accepted,
				Provider: tried.name})
		}
		// A failed write is logged by finish; the message goes to the DLQ
		// all the same, its delivery still sending (herald dlq redrive
		// moves it back, the scheduler's watch re-sends it).
		_ = h.finish(ctx, log, d.NotificationID, domain.Change{To: domain.StatusFailed, From: []domain.Status{domain.StatusSending}, Reason: domain.ReasonExhausted, LastError: code,
			Provider: tried.name, PinProvider: tried.pin})
		h.setVisibility(ctx, log, msg, 0)
		return errRetry
	}
	delay := max(h.backoff(d.Priority, receives), retryAfter)
	if err := h.finish(ctx, log.With("retryIn", delay.String()), d.NotificationID, domain.Change{To: domain.StatusRetrying, From: []domain.Status{domain.StatusSending},
		LastError: code, AddSentTargets: accepted, Note: "retry in " + delay.Round(time.Millisecond).String(), Provider: tried.name, PinProvider: tried.pin}); err != nil {
		delay = max(delay, h.untilLeaseEnds(d.LeaseUntil))
	}
	h.setVisibility(ctx, log, msg, delay)
	return errRetry
}

// providerOf is the provider an attempt was last tried on (recorded on the
// delivery) and whether its outcome is unknown (pinned to it).
type providerOf struct {
	name string
	pin  bool
}

// spentKey is a class of sends whose quota this instance found spent: a
// provider's (the secondary's or not) bulk-capped or whole quota.
type spentKey struct{ secondary, bulk bool }

// untilLeaseEnds is how long a message must stay away for its receive to
// find the lease ending at until expired (a second past it).
func (h *Handler) untilLeaseEnds(until time.Time) time.Duration {
	return max(until.Sub(h.now()), 0) + time.Second
}

// malformed reports a message that can never be processed: failed, visible
// again at once and nothing else touched, so redrive parks it in the DLQ
// after MaxReceiveCount receives instead of after as many visibility timeouts.
func (h *Handler) malformed(ctx context.Context, log *slog.Logger, msg events.SQSMessage, why string) error {
	log.ErrorContext(ctx, "malformed work message", "outcome", "malformed", "why", why)
	h.setVisibility(ctx, log, msg, 0)
	return errRetry
}

// retryLater reports the message failed after an infrastructure error (the
// table), to be received again after the backoff rather than after the
// queue's visibility timeout.
func (h *Handler) retryLater(ctx context.Context, log *slog.Logger, msg events.SQSMessage, p domain.Priority) error {
	h.setVisibility(ctx, log, msg, h.backoff(p, receiveCount(msg)))
	return errRetry
}

// setVisibility is best effort: if it fails, the queue's visibility timeout
// applies instead, which delays the retry but loses nothing.
func (h *Handler) setVisibility(ctx context.Context, log *slog.Logger, msg events.SQSMessage, d time.Duration) {
	if err := h.visibility.SetVisibility(ctx, msg.EventSourceARN, msg.ReceiptHandle, d); err != nil {
		log.WarnContext(ctx, "change visibility failed", "error", err)
	}
}

// lease is how long a claim holds: until the invocation's deadline when it
// has one (measured on the real clock, applied to the handler's clock).
func (h *Handler) lease(ctx context.Context) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return max(time.Until(dl), time.Second)
	}
	return h.cfg.Lease
}

// recheck re-validates a delivery against the latest state just before the
// claim; a non-empty reason means it no longer applies.
func (h *Handler) recheck(n *domain.Notification, typ *catalog.Type, p *domain.RecipientProfile, now time.Time) (string, domain.Reason) {
	c := h.provider.Channel()
	switch {
	case n.Status == domain.NotificationCancelled:
		return "", domain.ReasonCancelled
	case n.Expired(now):
		return "", domain.ReasonExpired
	case !policy.Enabled(typ, p.Preferences, c):
		return "", domain.ReasonPreference
	}
	contact, ok := policy.Contact(n, p, c)
	if !ok {
		return "", domain.ReasonNoContact
	}
	if c == domain.ChannelEmail && p.User != nil && p.User.SuppressedEmail != "" && strings.EqualFold(p.User.SuppressedEmail, contact) {
		return "", domain.ReasonSuppressed
	}
	if reason := escalationReason(typ.EscalationOf(c), n, p, now); reason != domain.ReasonNone {
		return "", reason
	}
	return contact, domain.ReasonNone
}

// escalationReason evaluates the type's escalation conditions at send time:
// the inbox item read or archived (unlessRead), or the user's app seen within
// unlessActiveWithin before now. Read wins: it is the stronger signal.
func escalationReason(e catalog.Escalation, n *domain.Notification, p *domain.RecipientProfile, now time.Time) domain.Reason {
	if e.UnlessRead && (!n.ReadAt.IsZero() || !n.ArchivedAt.IsZero()) {
		return domain.ReasonReadInApp
	}
	if e.UnlessActiveWithin > 0 && p.ActiveWithin(e.UnlessActiveWithin, now) {
		return domain.ReasonActiveInApp
	}
	return domain.ReasonNone
}

// settleUnclaimed records an outcome decided before the claim (the recheck,
// an unknown type). The delivery was not read, so a refused write is
// answered like a refused claim.
func (h *Handler) settleUnclaimed(ctx context.Context, log *slog.Logger, msg events.SQSMessage, n *domain.Notification, c domain.Change) error {
	d, err := h.store.Transition(ctx, n.ID, h.provider.Channel(), c)
	if errors.Is(err, domain.ErrConflict) && d == nil && c.Reason == domain.ReasonCancelled {
		// Never claimed: the notification's cancellation is its outcome.
		log.InfoContext(ctx, "delivery outcome", "outcome", c.To, "reason", c.Reason, "attempts", 0)
		h.metrics.Add(ctx, metrics.Dropped, metrics.Dims{Channel: h.provider.Channel(), Priority: n.Priority, Reason: c.Reason}, 1)
		return nil
	}
	if errors.Is(err, domain.ErrConflict) {
		return h.unclaimable(ctx, log, msg, d)
	}
	return h.recorded(ctx, log, c, d, err)
}

// unclaimable handles a message whose delivery refused a claimable-state
// write; current is the delivery as the refusal returned it. None at all:
// the message is malformed (to the DLQ). Terminal: a duplicate. Sending
// under a live lease this same message took on an earlier receive (its
// outcome write failed, or it gave the claim back and that write failed):
// nobody else carries it, so the message is kept and comes back when the
// lease has ended. Otherwise another worker holds a live claim and its own
// message carries it on.
func (h *Handler) unclaimable(ctx context.Context, log *slog.Logger, msg events.SQSMessage, current *domain.Delivery) error {
	switch {
	case current == nil:
		return h.malformed(ctx, log, msg, "no delivery for the work message")
	case current.Status.Terminal():
		log.InfoContext(ctx, "duplicate work message", "outcome", "duplicate", "status", current.Status)
	case current.Status == domain.StatusSending && current.LeaseHolder == msg.MessageId:
		wait := h.untilLeaseEnds(current.LeaseUntil)
		log.WarnContext(ctx, "own claim still leased", "outcome", "own_lease", "retryIn", wait.String())
		h.setVisibility(ctx, log, msg, wait)
		return errRetry
	default:
		log.InfoContext(ctx, "claim lost", "outcome", "claimed_elsewhere")
	}
	return nil
}

// finish records an outcome and logs it; the message is done (deleted) unless
// the store write fails, in which case SQS retries it.
//
// The write is tried outcomeWriteAttempts times before giving up: after a
// provider call, the delivery is sending under this attempt's lease, and a
// failed write leaves it so until a later receive or the scheduler's watch
// reclaims it — and sends again what the provider already accepted. A
// write whose answer was lost but which was applied finds the outcome on
// the next try (a conflict from sending: already recorded).
func (h *Handler) finish(ctx context.Context, log *slog.Logger, id string, c domain.Change) error {
	var d *domain.Delivery
	var err error
	for attempt := range outcomeWriteAttempts {
		if attempt > 0 && sleepCtx(ctx, outcomeWriteBackoff<<(attempt-1)) != nil {
			break
		}
		d, err = h.store.Transition(ctx, id, h.provider.Channel(), c)
		if errors.Is(err, domain.ErrConflict) {
			log.InfoContext(ctx, "outcome already recorded", "outcome", c.To)
			return nil
		}
		if err == nil {
			break
		}
		log.WarnContext(ctx, "outcome write failed", "outcome", c.To, "attempt", attempt+1, "error", err)
	}
	return h.recorded(ctx, log, c, d, err)
}

// outcomeWriteAttempts and outcomeWriteBackoff bound finish's tries of an
// outcome write: 3 tries 100 and 200 ms apart (each with the SDK's own
// retries), well inside the time an invocation keeps after its provider
// calls.
const (
	outcomeWriteAttempts = 3
	outcomeWriteBackoff  = 100 * time.Millisecond
)

// recorded logs and counts an outcome the store accepted (err nil), or asks
// SQS to retry the message when the write failed.
func (h *Handler) recorded(ctx context.Context, log *slog.Logger, c domain.Change, d *domain.Delivery, err error) error {
	if err != nil {
		log.ErrorContext(ctx, "record outcome failed", "outcome", c.To, "error", err)
		return errRetry
	}
	log.InfoContext(ctx, "delivery outcome", "outcome", d.Status, "reason", d.Reason, "attempts", d.Attempts)
	if name, ok := outcomeMetrics[d.Status]; ok {
		h.metrics.Add(ctx, name, metrics.Dims{Channel: d.Channel, Priority: d.Priority, Reason: d.Reason}, 1)
	}
	return nil
}

// outcomeMetrics count the outcomes the worker records.
var outcomeMetrics = map[domain.Status]metrics.Name{
	domain.StatusSent: metrics.Sent, domain.StatusRetrying: metrics.Retried,
	domain.StatusFailed: metrics.Failed, domain.StatusDropped: metrics.Dropped,
	domain.StatusSkipped: metrics.Skipped,
}

func (h *Handler) backoff(p domain.Priority, receives int) time.Duration {
	base := h.cfg.BackoffBase
	if p == domain.PriorityHigh {
		base = h.cfg.HighBackoffBase
	}
	h.randMu.Lock()
	defer h.randMu.Unlock()
	return domain.Backoff(base, h.cfg.BackoffCap, receives, h.rand.Float64)
}

func locale(n *domain.Notification, p *domain.RecipientProfile) string {
	if n.Recipient.Locale != "" {
		return n.Recipient.Locale
	}
	if p.User != nil {
		return p.User.Locale
	}
	return ""
}

func receiveCount(msg events.SQSMessage) int {
	var n int
	fmt.Sscan(msg.Attributes["ApproximateReceiveCount"], &n)
	return n
}
