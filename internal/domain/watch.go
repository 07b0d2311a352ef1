package domain

import "time"

// Watch is a notification's in-flight watch: an entry of the due index that
// comes due when every channel sent at once should have ended. The scheduler
// then reads the notification's deliveries: a channel still planned, queued,
// sending or retrying past its lease and backoff plus a grace has lost its
// work message (a purged queue, a retention expiry, a crash) and is sent
// again — the worker's claim keeps that exactly-once — or, past the
// notification's expiry, ended failed: lost. A watched channel with no
// delivery item was never claimed. The watch is keyed by notification, so a
// notification costs one watch whatever its channels (docs/decisions.md).
type Watch struct {
	NotificationID string
	UserID         string
	Priority       Priority
	// Channels are the channels whose work messages went out.
	Channels []Channel
	DueAt    time.Time
	// Checks counts the checks that found a delivery stuck and sent its
	// message again; the next check waits StuckAfter × 2^Checks.
	Checks int
}

// ReasonLost ends a delivery whose work message was lost and whose
// notification expired before it could be sent again.
const ReasonLost Reason = "lost"

// StuckAfter is how long a delivery may stay planned, queued, sending or
// retrying without a change before its work message is presumed lost: the
// longest legitimate wait (the queue's visibility timeout, the backoff cap,
// the queue's backlog at that priority) plus a grace. A low-priority
// campaign's backlog legitimately waits hours, so low waits longest; a
// message presumed lost that was only late is absorbed by the claim.
func StuckAfter(p Priority) time.Duration {
	switch p {
	case PriorityHigh:
		return 30 * time.Minute
	case PriorityLow:
		return 6 * time.Hour
	}
	return time.Hour
}

// MaxStuckWait caps the doubling wait between checks of a stuck delivery.
const MaxStuckWait = 24 * time.Hour

// NextCheck is when a watch that found a delivery stuck checks again.
func NextCheck(now time.Time, p Priority, checks int) time.Time {
	d := StuckAfter(p)
	for range min(checks, 10) {
		d *= 2
	}
	return now.Add(min(d, MaxStuckWait))
}

// InFlight reports whether a delivery waits for a work message to be handled.
func (s Status) InFlight() bool {
	switch s {
	case StatusPlanned, StatusQueued, StatusSending, StatusRetrying:
		return true
	}
	return false
}

// StuckSince is when a delivery in flight last made progress: its last
// change, or the end of its sending lease.
func (d *Delivery) StuckSince() time.Time {
	if d.LeaseUntil.After(d.UpdatedAt) {
		return d.LeaseUntil
	}
	return d.UpdatedAt
}

// StuckDelivery is one delivery a watch finds stuck: in flight past its lease
// and backoff plus a grace, or never claimed.
type StuckDelivery struct {
	NotificationID string
	Channel        Channel
	Priority       Priority
	// Status is the delivery's status; "" when no delivery item exists (a
	// channel sent at once that was never claimed).
	Status Status
	// Since is when the delivery last made progress (zero: never claimed).
	Since time.Time
	// Age is how long it has waited (since the watch was armed when it was
	// never claimed).
	Age time.Duration
}

// Stuck lists the watched channels stuck as of now, given the notification's
// deliveries by channel.
func (w *Watch) Stuck(ds map[Channel]*Delivery, now time.Time) []StuckDelivery {
	var out []StuckDelivery
	after := StuckAfter(w.Priority)
	for _, c := range w.Channels {
		d := ds[c]
		switch {
		case d == nil:
			// Armed at DueAt - StuckAfter × 2^Checks at the latest; the
			// first arming is what the age is counted from.
			since := w.DueAt.Add(-after)
			if now.Sub(since) >= after {
				out = append(out, StuckDelivery{NotificationID: w.NotificationID, Channel: c, Priority: w.Priority, Age: now.Sub(since)})
			}
		case d.Status.InFlight() && now.Sub(d.StuckSince()) >= after:
			out = append(out, StuckDelivery{NotificationID: w.NotificationID, Channel: c, Priority: w.Priority, Status: d.Status,
				Since: d.StuckSince(), Age: now.Sub(d.StuckSince())})
		}
	}
	return out
}
