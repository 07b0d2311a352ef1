// Package events turns delivery and campaign state changes recorded in the
// table into the events Herald publishes on its EventBridge bus
// ("Delivery State Change", "Campaign State Change", source "herald"; the
// wire types are client/events), and publishes them at least once.
//
// The table is the outbox: the bulk relay's stream mapping hands this
// package the MODIFY (and INSERT) records of deliveries and campaign META
// items; Build decides from the record's old and new images whether a state
// worth an event was reached (the status changed to one the mode publishes),
// and the Publisher sends the entries with PutEvents, retries the entries
// PutEvents reports failed (FailedEntryCount) with bounded backoff, and parks
// what still fails in the events DLQ, from which `herald dlq redrive events`
// publishes them again. Each event's detail carries an eventId derived from
// the state (notification, channel, status, attempts; campaign, status), so
// every re-publication has the same id and consumers deduplicate on it.
//
// The package is pure: the bus and the DLQ are interfaces (adapters in
// internal/events/awsbus), stream images are decoded by the caller.
package events

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	wire "github.com/heraldhq/herald/client/events"
	"github.com/heraldhq/herald/internal/domain"
)

// Mode says which delivery states are published (the DeliveryEvents
// parameter). Campaign state changes are published unless the mode is none.
type Mode string

// Modes.
const (
	ModeNone     Mode = "none"
	ModeFailures Mode = "failures" // failed, bounced, complained, dropped
	ModeAll      Mode = "all"      // also sent, delivered, skipped
)

// ParseMode validates a DeliveryEvents value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeNone, ModeFailures, ModeAll:
		return m, nil
	}
	return "", fmt.Errorf("delivery events %q: want none, failures or all", s)
}

// failureStatuses and allStatuses are the delivery states each mode publishes.
var (
	failureStatuses = []domain.Status{domain.StatusFailed, domain.StatusBounced, domain.StatusComplained, domain.StatusDropped}
	allStatuses     = append([]domain.Status{domain.StatusSent, domain.StatusDelivered, domain.StatusSkipped}, failureStatuses...)
)

// Statuses are the delivery states m publishes.
func (m Mode) Statuses() []domain.Status {
	switch m {
	case ModeAll:
		return allStatuses
	case ModeFailures:
		return failureStatuses
	}
	return nil
}

// Publishes reports whether m publishes a delivery reaching s.
func (m Mode) Publishes(s domain.Status) bool {
	for _, x := range m.Statuses() {
		if x == s {
			return true
		}
	}
	return false
}

// Entry is one event to put on the bus.
type Entry struct {
	// ID is the detail's eventId (for logs and deduplication).
	ID         string          `json:"id"`
	Source     string          `json:"source"`
	DetailType string          `json:"detailType"`
	Detail     json.RawMessage `json:"detail"`
	// Time is the state's time (the event's time on the bus).
	Time time.Time `json:"time"`
}

// Size is the entry's size as EventBridge counts it against the 256 KB
// request limit and bills it (per 64 KB chunk): source, detail type and
// detail in UTF-8 bytes, plus 14 bytes for the time.
func (e Entry) Size() int { return len(e.Source) + len(e.DetailType) + len(e.Detail) + 14 }

// eventID derives a deterministic id from the parts of a state.
func eventID(prefix string, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return prefix + hex.EncodeToString(h.Sum(nil)[:16])
}

// DeliveryEntry builds the event of a delivery that reached its current
// state, or ok=false when the mode does not publish it. old is the delivery
// before the change (nil for one created in its state): an unchanged status
// (a lease renewal, an attempt counted) publishes nothing.
func DeliveryEntry(m Mode, old, d *domain.Delivery) (Entry, bool, error) {
	if !m.Publishes(d.Status) || (old != nil && old.Status == d.Status) {
		return Entry{}, false, nil
	}
	id := eventID("dlv_", d.NotificationID, string(d.Channel), string(d.Status), fmt.Sprint(d.Attempts))
	detail := wire.DeliveryDetail{
		EventID: id, Version: wire.Version, NotificationID: d.NotificationID, Type: d.Type, Caller: d.Caller,
		UserID: d.UserID, Channel: string(d.Channel), Status: string(d.Status), Reason: string(d.Reason),
		Attempts: d.Attempts, Provider: d.Provider, At: d.UpdatedAt.UTC(), CampaignID: d.CampaignID, ResourceID: d.ResourceID,
	}
	b, err := json.Marshal(detail)
	if err != nil {
		return Entry{}, false, fmt.Errorf("delivery event %s/%s: %w", d.NotificationID, d.Channel, err)
	}
	return Entry{ID: id, Source: wire.Source, DetailType: wire.DeliveryDetailType, Detail: b, Time: detail.At}, true, nil
}

// campaignStatuses name the campaign states that are events.
var campaignStatuses = map[domain.CampaignStatus]string{
	domain.CampaignRunning:   wire.CampaignStarted,
	domain.CampaignDone:      wire.CampaignFinished,
	domain.CampaignCancelled: wire.CampaignCancelled,
}

// CampaignEntry builds the event of a campaign whose status changed to
// started (running), finished (done) or cancelled, or of a running one
// whose outcomes crossed another tenth of its recipients (progress: at most
// nine, so a campaign of 10 M recipients publishes no more than one of a
// few); ok=false otherwise or when the mode is none. Each carries the
// campaign's finish estimate made at the event's time.
func CampaignEntry(m Mode, old, c *domain.Campaign) (Entry, bool, error) {
	status, ok := campaignStatuses[c.Status]
	progress := c.Status == domain.CampaignRunning && old != nil && old.Status == c.Status &&
		c.ProgressTenths() > old.ProgressTenths() && c.ProgressTenths() < 10
	if m == ModeNone || !ok || (old != nil && old.Status == c.Status && !progress) {
		return Entry{}, false, nil
	}
	at := c.StartedAt
	parts := []string{c.ID, status}
	switch {
	case progress:
		status, at = wire.CampaignProgress, domain.Latest(c.CountedAt, c.StartedAt)
		parts = []string{c.ID, status, fmt.Sprint(c.ProgressTenths())}
	case c.Status == domain.CampaignDone:
		at = c.FinishedAt
	case c.Status == domain.CampaignCancelled:
		at = c.CancelledAt
	}
	if at.IsZero() {
		at = c.CreatedAt
	}
	id := eventID("cmp_", parts...)
	detail := wire.CampaignDetail{
		EventID: id, Version: wire.Version, CampaignID: c.ID, Type: c.Type, Caller: c.Caller, Status: status, At: at.UTC(),
		Counts: wire.CampaignCounts{Recipients: c.Recipients, Notified: c.Counts.Notified, Sent: c.Counts.Sent,
			Skipped: c.Counts.Skipped, Failed: c.Counts.Failed, Dropped: c.Counts.Dropped},
	}
	if est, ok := c.EstimatedCompletion(at); ok {
		est = est.UTC()
		detail.EstimatedCompletionAt = &est
		detail.Estimate = Estimate(c.Pace, c.Remaining())
	}
	b, err := json.Marshal(detail)
	if err != nil {
		return Entry{}, false, fmt.Errorf("campaign event %s: %w", c.ID, err)
	}
	return Entry{ID: id, Source: wire.Source, DetailType: wire.CampaignDetailType, Detail: b, Time: detail.At}, true, nil
}

// Estimate is the rate a campaign's estimate assumes, on the wire (the
// events' detail and the campaign routes' answer); nil without a pace.
func Estimate(p domain.CampaignPace, left int) *wire.CampaignEstimate {
	if !p.Known() {
		return nil
	}
	rate := func(r float64) *float64 {
		if r <= 0 {
			return nil
		}
		return &r
	}
	e := &wire.CampaignEstimate{RecipientsLeft: left, RecipientsPerSecond: p.RecipientsPerSecond, FanOutPerSecond: rate(p.FanOutPerSecond),
		TailSeconds: p.Tail.Seconds(), Channels: []wire.ChannelRate{}}
	for _, ch := range p.Channels {
		e.Channels = append(e.Channels, wire.ChannelRate{Channel: string(ch.Channel), SendsPerSecond: rate(ch.SendsPerSecond), RecipientsLeft: left})
	}
	return e
}
