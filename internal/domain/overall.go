package domain

// Overall is what happened to a notification as a whole, summed up from its
// deliveries: its own status says only accepted or cancelled.
type Overall string

const (
	// OverallCancelled: the notification was cancelled (what had been sent
	// stays sent).
	OverallCancelled Overall = "cancelled"
	// OverallPlanning: accepted, no delivery planned yet.
	OverallPlanning Overall = "planning"
	// OverallInProgress: some delivery is queued, sending or retrying.
	OverallInProgress Overall = "in_progress"
	// OverallDeferred: every unfinished delivery waits for its due time
	// (quiet hours, a digest, sendAt, a rate limit).
	OverallDeferred Overall = "deferred"
	// OverallSent: every delivery ended and one at least was sent
	// (delivered and complained count as sent), none failed.
	OverallSent Overall = "sent"
	// OverallPartlyFailed: some channel sent, another failed or bounced.
	OverallPartlyFailed Overall = "partly_failed"
	// OverallFailed: nothing sent, some channel failed or bounced.
	OverallFailed Overall = "failed"
	// OverallDropped: nothing sent nor failed, some delivery dropped
	// (expired, cancelled, suppressed, no contact, …).
	OverallDropped Overall = "dropped"
	// OverallSkipped: every delivery skipped (preferences, the type's rules).
	OverallSkipped Overall = "skipped"
)

// OverallOf sums up a notification of status n whose deliveries are in the
// given states (a planned channel without a delivery item counts as
// Absent, unfinished).
func OverallOf(n NotificationStatus, deliveries []Status) Overall {
	if n == NotificationCancelled {
		return OverallCancelled
	}
	if len(deliveries) == 0 {
		return OverallPlanning
	}
	var pending, waiting, sent, failed, dropped bool
	for _, st := range deliveries {
		switch {
		case st == StatusDeferred:
			waiting = true
		case !st.Terminal():
			pending = true
		case st == StatusSent || st == StatusDelivered || st == StatusComplained:
			sent = true
		case st == StatusFailed || st == StatusBounced:
			failed = true
		case st == StatusDropped:
			dropped = true
		}
	}
	switch {
	case pending:
		return OverallInProgress
	case waiting:
		return OverallDeferred
	case sent && failed:
		return OverallPartlyFailed
	case failed:
		return OverallFailed
	case sent:
		return OverallSent
	case dropped:
		return OverallDropped
	}
	return OverallSkipped
}
