package domain

import "time"

// Budget is a user's notification budget: at most PerHour non-mandatory,
// non-high notifications in any rolling hour and PerDay in any rolling day,
// over every channel and type together (0: no bound in that window). What is
// over it is not dropped: its channels wait for the user's budget digest.
type Budget struct {
	PerHour int `json:"perHour"`
	PerDay  int `json:"perDay"`
}

// The budget's rolling windows.
const (
	BudgetHour = time.Hour
	BudgetDay  = 24 * time.Hour
)

// BudgetDigestKey is the digest a user's over-budget deliveries on a channel
// join. Its batch key is empty, which no caller's digest can have (a digest
// candidate needs a batch key), so the two never mix.
func BudgetDigestKey(userID string, c Channel) DigestKey {
	return DigestKey{UserID: userID, Channel: c}
}

// IsBudgetDigest reports whether a digest key is a budget digest's.
func (k DigestKey) IsBudgetDigest() bool { return k.BatchKey == "" }

// BudgetCount is the answer of counting a notification against a budget.
type BudgetCount struct {
	// Within: the notification was counted (now, or by an earlier attempt
	// of the same record) and goes out as planned.
	Within bool
	// History is, when over budget, the acceptance times (to the second) of
	// the counted notifications the budget remembers, newest first: when the
	// budget frees again follows from it (policy.BudgetFreesAt).
	History []time.Time
}
