package domain

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// CampaignStatus is the lifecycle of a campaign: draft (recipients may be
// added) → running (fanning out) → done; draft or running → cancelled.
type CampaignStatus string

const (
	CampaignDraft     CampaignStatus = "draft"
	CampaignRunning   CampaignStatus = "running"
	CampaignDone      CampaignStatus = "done"
	CampaignCancelled CampaignStatus = "cancelled"
)

// campaignTransitions is the campaign state machine; every store update is
// conditional on the current status being one of the sources.
var campaignTransitions = map[CampaignStatus][]CampaignStatus{
	CampaignDraft:   {CampaignRunning, CampaignCancelled},
	CampaignRunning: {CampaignDone, CampaignCancelled},
}

// ErrHighPriorityCampaign refuses a campaign at high priority: its many
// notifications would share the one-time codes' queues and the send quota's
// reserve that only low priority cannot take, and delay them for hours.
var ErrHighPriorityCampaign = errors.New("a campaign cannot take high priority")

// CampaignPriority checks a campaign's priority: low (the default) or
// normal; high is refused (ErrHighPriorityCampaign).
func CampaignPriority(p Priority) error {
	if p == PriorityHigh {
		return ErrHighPriorityCampaign
	}
	return nil
}

// CanTransitionCampaign reports whether a campaign may go from → to.
func CanTransitionCampaign(from, to CampaignStatus) bool {
	for _, s := range campaignTransitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// SegmentAll is the audience of every user with a profile.
const SegmentAll = "all"

// MaxChunkRecipients bounds the user ids of one recipients chunk (and of an
// inline audience): a chunk is one item and one lot of the fan-out.
const MaxChunkRecipients = 1000

// InlineChunk is the chunk key of the audience given inline at creation.
// Uploaded chunks are numbered; their keys sort before it.
const InlineChunk = "inline"

// ChunkKey is the key of uploaded chunk n: fixed width, so keys sort by number.
func ChunkKey(n int64) string { return fmt.Sprintf("%010d", n) }

// ScanChunkKey is the key of the chunk a segment-"all" campaign's scan of
// segment seg writes for its page-th page of profiles.
func ScanChunkKey(seg, page int) string { return fmt.Sprintf("s%04d-%07d", seg, page) }

// MaxScanSegments bounds the parallel scan segments of a segment campaign.
const MaxScanSegments = 1000

// Campaign is one notification type and content sent to many users, fanned
// out in lots of at most MaxChunkRecipients recipients.
type Campaign struct {
	ID       string
	Caller   string
	Type     string
	Data     map[string]any
	Priority Priority
	Channels []Channel // requested; empty means the type's
	SendAt   time.Time
	// ExpiresAt as requested (zero: each notification takes the type's
	// default expiry from its own creation).
	ExpiresAt time.Time
	// Segment is SegmentAll, or "" for explicit recipients (inline and chunks).
	Segment string
	// Topic is the topic whose subscribers are the audience ("" for none):
	// a topic send (POST /v1/notifications with a topic recipient). Exclude
	// are users it leaves out (at most MaxTopicExclude).
	Topic       string
	Exclude     []string
	Status      CampaignStatus
	RequestHash string
	DedupeKey   string
	CreatedAt   time.Time
	StartedAt   time.Time
	FinishedAt  time.Time
	CancelledAt time.Time
	// Chunks is how many recipient chunks (lots) the campaign has; it is
	// final once the campaign left draft.
	Chunks int
	// Recipients is the number of recipients (user ids after removing
	// repeats inside a chunk).
	Recipients int
	// Counts are the outcomes recorded so far; LotsSettled how many lots
	// have every recipient's outcome.
	Counts      CampaignCounts
	LotsSettled int
	// CountedAt is when Counts last changed (the store's clock): the time
	// a progress event's estimate is made at.
	CountedAt time.Time
	// Pace is the rate its finish estimate assumes, fixed at creation from
	// the deployment's settings (zero: none known, no estimate).
	Pace CampaignPace
}

// Scanned reports whether the campaign's audience is read in scan
// segments (every profile, or a topic's shards) rather than uploaded.
func (c *Campaign) Scanned() bool { return c.Segment == SegmentAll || c.Topic != "" }

// Settled reports whether every lot has reached its final counts: the
// campaign is then done (or stays cancelled).
func (c *Campaign) Settled() bool { return c.LotsSettled >= c.Chunks }

// RetainFrom is when the retention of the campaign's items starts: its
// sendAt when later than its creation, so a campaign scheduled past the
// retention keeps its items (its status copies the workers read, its lots)
// until its notifications go out.
func (c *Campaign) RetainFrom() time.Time { return Latest(c.CreatedAt, c.SendAt) }

// CampaignCounts are per-recipient outcomes. Each recipient ends in exactly
// one of Sent, Skipped, Failed or Dropped; Notified counts the recipients
// whose notification was created.
type CampaignCounts struct {
	Notified int
	Sent     int
	Skipped  int
	Failed   int
	Dropped  int
}

// Add returns c + o.
func (c CampaignCounts) Add(o CampaignCounts) CampaignCounts {
	return CampaignCounts{c.Notified + o.Notified, c.Sent + o.Sent, c.Skipped + o.Skipped, c.Failed + o.Failed, c.Dropped + o.Dropped}
}

// Sub returns c − o (the delta a reconcile applies to its campaign).
func (c CampaignCounts) Sub(o CampaignCounts) CampaignCounts {
	return CampaignCounts{c.Notified - o.Notified, c.Sent - o.Sent, c.Skipped - o.Skipped, c.Failed - o.Failed, c.Dropped - o.Dropped}
}

// Final is how many recipients have an outcome.
func (c CampaignCounts) Final() int { return c.Sent + c.Skipped + c.Failed + c.Dropped }

// Count adds one recipient with outcome o.
func (c *CampaignCounts) Count(o RecipientOutcome) {
	switch o {
	case OutcomeSent:
		c.Sent++
	case OutcomeSkipped:
		c.Skipped++
	case OutcomeFailed:
		c.Failed++
	case OutcomeDropped:
		c.Dropped++
	}
}

// RecipientOutcome is what a campaign did for one recipient, across channels.
type RecipientOutcome string

const (
	// OutcomePending: a channel has no delivery yet or is still in progress.
	OutcomePending RecipientOutcome = "pending"
	// OutcomeSent: at least one channel reached the provider.
	OutcomeSent RecipientOutcome = "sent"
	// OutcomeFailed: nothing sent, and a channel failed (or bounced).
	OutcomeFailed RecipientOutcome = "failed"
	// OutcomeDropped: nothing sent or failed, and a channel was dropped
	// (cancelled, expired…).
	OutcomeDropped RecipientOutcome = "dropped"
	// OutcomeSkipped: every channel skipped (preference, no contact, rate
	// limit…), or the recipient was not notified at all (no profile, listed
	// twice).
	OutcomeSkipped RecipientOutcome = "skipped"
)

// OutcomeOf classifies one recipient from its notification's deliveries on
// the channels it targets; a channel without a delivery, or one not yet
// terminal, leaves the recipient pending. The in-app inbox item is not a
// channel: a recipient whose channels were all skipped still has it.
func OutcomeOf(channels []Channel, deliveries map[Channel]Delivery) RecipientOutcome {
	var sent, failed, dropped bool
	for _, c := range channels {
		d, ok := deliveries[c]
		if !ok || !d.Status.Terminal() {
			return OutcomePending
		}
		switch d.Status {
		case StatusSent, StatusDelivered, StatusComplained:
			sent = true
		case StatusFailed, StatusBounced:
			failed = true
		case StatusDropped:
			dropped = true
		}
	}
	switch {
	case sent:
		return OutcomeSent
	case failed:
		return OutcomeFailed
	case dropped:
		return OutcomeDropped
	}
	return OutcomeSkipped
}

// CampaignLot is the fan-out of one chunk: its recipients' outcomes so far.
// Total = Counts.Final() + len(Pending) at every version.
type CampaignLot struct {
	Chunk string
	Total int
	// Pending are the notified recipients without a final outcome yet.
	Pending []string
	Counts  CampaignCounts
	// Version is the lot item's version: each reconcile writes version+1
	// conditioned on the version it read, so a retry never counts twice.
	Version int
	// RetainFrom is the campaign's (Campaign.RetainFrom): the lot is kept
	// until then, or its first record when later, plus the retention. Not
	// stored.
	RetainFrom time.Time
}

// Settled reports whether every recipient of the lot has its outcome.
func (l *CampaignLot) Settled() bool { return len(l.Pending) == 0 }

// Campaign errors, each an ErrConflict (errors.Is) with a precise meaning.
var (
	ErrCampaignNotDraft = fmt.Errorf("campaign is not a draft: %w", ErrConflict)
	ErrCampaignFinished = fmt.Errorf("campaign is finished: %w", ErrConflict)
	ErrChunkConflict    = fmt.Errorf("chunk exists with other recipients: %w", ErrConflict)
	// ErrSegmentAudience: recipients uploaded to a campaign whose audience
	// is a segment.
	ErrSegmentAudience = fmt.Errorf("campaign audience is a segment: %w", ErrConflict)
)

// idEncoding is the lower-case, unambiguous base32 of Herald's ids.
var idEncoding = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

// CampaignNotificationID is the id of the notification a campaign creates
// for one user: derived, so that creating it is idempotent per (campaign,
// user) and a lot processed twice creates nothing twice. It has the shape of
// every notification id ("n" + 26 base32 characters).
func CampaignNotificationID(campaignID, userID string) string {
	sum := sha256.Sum256([]byte("campaign\x00" + campaignID + "\x00" + userID))
	return "n" + idEncoding.EncodeToString(sum[:16])
}

// CampaignMessageKind names a step of a campaign's fan-out.
type CampaignMessageKind string

const (
	// CampaignPlan pages through the chunks from After and sends one lot
	// message per chunk (and a continuation when it runs long).
	CampaignPlan CampaignMessageKind = "plan"
	// CampaignLotStep creates the notifications of one chunk.
	CampaignLotStep CampaignMessageKind = "lot"
	// CampaignReconcile recounts a lot's outcomes from its deliveries.
	CampaignReconcile CampaignMessageKind = "reconcile"
	// CampaignScan reads one page of one parallel scan segment of the
	// profiles (segment "all"), stores it as a chunk, sends its lot and the
	// segment's next page.
	CampaignScan CampaignMessageKind = "scan"
)

// CampaignMessage is the body of a campaign queue message.
type CampaignMessage struct {
	Kind       CampaignMessageKind `json:"kind"`
	CampaignID string              `json:"campaignId"`
	// Chunk names the lot (lot and reconcile).
	Chunk string `json:"chunk,omitempty"`
	// After is the last chunk key a plan continuation has sent; for a scan,
	// the last user id the segment's previous page read.
	After string `json:"after,omitempty"`
	// Segment and Page place a scan step: segment Segment of Segments.
	Segment  int `json:"segment,omitempty"`
	Segments int `json:"segments,omitempty"`
	Page     int `json:"page,omitempty"`
	// NotBefore holds a reconcile back until its lot's earliest due time
	// when that is further off than a queue delay reaches: received
	// earlier, it is sent on again without reading anything.
	NotBefore time.Time `json:"notBefore,omitzero"`
	// Idle counts a lot's reconciles in a row that counted nothing; the
	// next one backs off accordingly.
	Idle int `json:"idle,omitempty"`
}

// ErrMalformedCampaignMessage: a campaign queue body that is not a campaign
// message (undecodable, unknown fields or kind, missing ids).
var ErrMalformedCampaignMessage = errors.New("malformed campaign message")

// DecodeCampaignMessage strictly decodes a campaign queue body.
func DecodeCampaignMessage(body string) (CampaignMessage, error) {
	var m CampaignMessage
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil || m.CampaignID == "" || m.Idle < 0 {
		return m, ErrMalformedCampaignMessage
	}
	if m.Kind != CampaignReconcile && (!m.NotBefore.IsZero() || m.Idle != 0) {
		return m, ErrMalformedCampaignMessage // a reconcile's wait on another step
	}
	switch m.Kind {
	case CampaignPlan:
		return m, nil
	case CampaignLotStep, CampaignReconcile:
		if m.Chunk != "" {
			return m, nil
		}
	case CampaignScan:
		if m.Segments > 0 && m.Segments <= MaxScanSegments && m.Segment >= 0 && m.Segment < m.Segments && m.Page >= 0 && (m.Page == 0) == (m.After == "") {
			return m, nil
		}
	}
	return m, ErrMalformedCampaignMessage
}
