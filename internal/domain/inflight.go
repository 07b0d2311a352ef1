package domain

import "time"

// ReasonLost ends a delivery whose work message was lost and whose
// notification expired before it could be sent again.
const ReasonLost Reason = "lost"

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
