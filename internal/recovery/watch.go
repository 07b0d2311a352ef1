package recovery

import (
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

// Watch is an in-flight watch: one entry of the due index per batch of work
// messages (a relay invocation's, a release page's, per priority), listing
// the notification × channel pairs whose messages went out. When it comes
// due the scheduler reads those deliveries: one still planned, queued,
// sending or retrying past its lease and backoff plus a grace (StuckAfter)
// has lost its work message (a purged queue, a retention expiry, a crash)
// and is sent again — the worker's claim keeps that exactly-once — or, past
// its notification's expiry, ended failed: lost. A pair with no delivery
// item was never claimed. One watch per batch, not per notification, keeps
// the cost per notification to a share of one small write and one read of
// its delivery (docs/decisions.md).
type Watch struct {
	ID       string
	Priority domain.Priority
	Entries  []WatchEntry
	// ArmedAt is when the messages went out; DueAt when the watch is next
	// checked.
	ArmedAt time.Time
	DueAt   time.Time
	// Checks counts the checks that found a delivery stuck and sent its
	// message again; the wait before the next doubles each time.
	Checks int
}

// WatchEntry is one watched delivery.
type WatchEntry struct {
	NotificationID string
	Channel        domain.Channel
}

// Key is the entry's delivery key.
func (e WatchEntry) Key() domain.DeliveryKey {
	return domain.DeliveryKey(e)
}

// NewWatches groups the work items about to be sent into one watch per
// priority, due after StuckAfter.
func NewWatches(items []domain.WorkItem, now time.Time) []Watch {
	var out []Watch
	at := map[domain.Priority]int{}
	for _, it := range items {
		i, ok := at[it.Priority]
		if !ok {
			i = len(out)
			at[it.Priority] = i
			out = append(out, Watch{ID: NewWatchID(), Priority: it.Priority, ArmedAt: now, DueAt: now.Add(StuckAfter(it.Priority))})
		}
		out[i].Entries = append(out[i].Entries, WatchEntry{NotificationID: it.Message.NotificationID, Channel: it.Message.Channel})
	}
	return out
}

// NewWatchID is a random watch id.
func NewWatchID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// StuckAfter is how long a delivery may stay planned, queued, sending or
// retrying without a change before its work message is presumed lost: the
// longest legitimate wait (the queue's visibility timeout, the backoff cap —
// 15 min by default —, the queue's backlog at that priority) plus a grace.
// A low-priority campaign's backlog legitimately waits hours, so low waits
// longest: the seed's 10 M campaign drains in 9.4 h at the send quota's
// effective rate with the day's own mail sent first (herald capacity,
// campaignDrain, which holds the drain under this), and 12 h is also the
// low queues' age alarm. A message presumed lost that was only late is
// absorbed by the claim, at the price of a duplicate message: with 6 h,
// the last 3.4 h of the campaign's backlog each got one.
func StuckAfter(p domain.Priority) time.Duration {
	switch p {
	case domain.PriorityHigh:
		return 30 * time.Minute
	case domain.PriorityLow:
		return 12 * time.Hour
	}
	return time.Hour
}

// MaxStuckWait caps the doubling wait between checks of a stuck delivery.
const MaxStuckWait = 24 * time.Hour

// NextCheck is when a watch that sent a stuck delivery again for the
// (checks+1)-th time checks again: StuckAfter × 2^checks, at most
// MaxStuckWait.
func NextCheck(now time.Time, p domain.Priority, checks int) time.Time {
	d := StuckAfter(p)
	for range min(checks, 10) {
		d *= 2
	}
	return now.Add(min(d, MaxStuckWait))
}

// StuckDelivery is one delivery a watch finds stuck.
type StuckDelivery struct {
	WatchEntry
	Priority domain.Priority
	// Status is the delivery's status; "" when no delivery item exists (a
	// channel sent at once that was never claimed).
	Status domain.Status
	// Since is when the delivery last made progress (the watch's arming
	// when it was never claimed).
	Since time.Time
	Age   time.Duration
}

// Stuck lists the watched deliveries stuck as of now, given the deliveries
// read (absent: no item).
func (w *Watch) Stuck(ds map[domain.DeliveryKey]*domain.Delivery, now time.Time) []StuckDelivery {
	var out []StuckDelivery
	after := StuckAfter(w.Priority)
	for _, e := range w.Entries {
		d := ds[e.Key()]
		switch {
		case d == nil:
			if now.Sub(w.ArmedAt) >= after {
				out = append(out, StuckDelivery{WatchEntry: e, Priority: w.Priority, Since: w.ArmedAt, Age: now.Sub(w.ArmedAt)})
			}
		case d.Status.InFlight() && now.Sub(d.StuckSince()) >= after:
			out = append(out, StuckDelivery{WatchEntry: e, Priority: w.Priority, Status: d.Status, Since: d.StuckSince(), Age: now.Sub(d.StuckSince())})
		}
	}
	return out
}
