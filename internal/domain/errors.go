package domain

import "errors"

// Sentinel errors shared by ports and adapters. Adapters wrap them with context;
// callers match with errors.Is and the HTTP layer maps them to statuses in one place.
var (
	// ErrNotFound: the item does not exist (or is not visible to this caller).
	ErrNotFound = errors.New("not found")
	// ErrConflict: a conditional write lost: the item exists already or is not
	// in the state the write required (e.g. another worker claimed the delivery).
	ErrConflict = errors.New("conflict")
	// ErrTokenRejected: a push provider refused a device token at
	// registration.
	ErrTokenRejected = errors.New("device token rejected")
	// ErrProviderUnavailable: a provider throttled or failed a call that may
	// be retried.
	ErrProviderUnavailable = errors.New("provider unavailable")
)
