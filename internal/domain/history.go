package domain

import "time"

// HistoryFilter narrows a recipient's history (GET /v1/users/{id}/notifications).
// Zero fields do not filter; Until is exclusive, Since inclusive.
type HistoryFilter struct {
	Type    string
	Channel Channel
	Status  Status
	Since   time.Time
	Until   time.Time
}

// HistoryEntry is one notification in a recipient's history: the fields its
// deliveries carry (copied from the notification when they were created)
// and those deliveries, one per channel that has an item.
type HistoryEntry struct {
	NotificationID string
	Type           string
	Caller         string
	Priority       Priority
	CreatedAt      time.Time
	CampaignID     string
	ResourceID     string
	Deliveries     []Delivery
}

// Matches reports whether the entry has a delivery f selects: of f's
// channel, in f's status (each when set). Type and the times are the
// store's to apply.
func (f HistoryFilter) Matches(e HistoryEntry) bool {
	for _, d := range e.Deliveries {
		if (f.Channel == "" || d.Channel == f.Channel) && (f.Status == "" || d.Status == f.Status) {
			return true
		}
	}
	return false
}

// HistoryPage is one page of a recipient's history, newest first. Next is
// where the following page starts ("" at the end), opaque to callers.
type HistoryPage struct {
	Entries []HistoryEntry
	Next    string
}
