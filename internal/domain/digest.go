package domain

import (
	"cmp"
	"slices"
	"time"
)

// DigestKey names one stream of digests: a user's deliveries on one channel
// that share a batch key. At most one digest of a key is open at a time.
type DigestKey struct {
	UserID   string
	Channel  Channel
	BatchKey string
}

// DigestRole is what a delivery became when it asked to be digested.
type DigestRole int

const (
	// DigestAlone: no digest takes it (the open one is already sent or full);
	// the delivery goes out on its own.
	DigestAlone DigestRole = iota
	// DigestLeader: it opened the digest; its delivery is deferred to the
	// window's end and then sends the one message listing every member.
	DigestLeader
	// DigestJoined: it joined an open digest; its delivery is skipped
	// (reason digested) and the leader's message lists it.
	DigestJoined
)

// DigestRequest asks to open or join the digest of Key for one notification.
type DigestRequest struct {
	Key            DigestKey
	NotificationID string
	// CreatedAt places the notification in a window; it is the notification's
	// acceptance time, so a retried stream record lands in the same window.
	CreatedAt time.Time
	// WindowEnd is when a digest opened by this notification closes and is sent.
	WindowEnd time.Time
}

// DigestOutcome is the answer to a DigestRequest.
type DigestOutcome struct {
	Role DigestRole
	// DigestID is the leader's notification id (for leaders, their own).
	DigestID string
	// WindowEnd is when the digest is sent (the leader's due time).
	WindowEnd time.Time
}

// DigestMember is one notification collapsed into a digest (the leader is not
// listed among its members).
type DigestMember struct {
	NotificationID string
	CreatedAt      time.Time
}

// SortNewestFirst orders members by acceptance time, newest first (ties by id,
// so the order is stable).
func SortNewestFirst(ms []DigestMember) {
	slices.SortFunc(ms, func(a, b DigestMember) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.NotificationID, a.NotificationID)
	})
}
