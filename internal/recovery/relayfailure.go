package recovery

import "time"

// RelayFailure is the relay's note of a stream record it reported for retry:
// Lambda's on-failure record for a stream batch names the shard and the
// sequence-number range, not the records, so the relay keeps what a redrive
// needs to re-plan (the notification id) under the record's sequence number,
// and `herald dlq redrive relay` finds it from the on-failure record without
// reading the stream.
type RelayFailure struct {
	// SequenceNumber is the stream record's (digits).
	SequenceNumber string
	// At is the stream record's approximate creation time, which Lambda's
	// on-failure record reports as approximateArrivalOf{First,Last}Record.
	At time.Time
	// PK and SK are the record's item key.
	PK, SK string
	// NotificationID is the notification a new-notification record carried,
	// when its image decoded; empty for any other record.
	NotificationID string
}
