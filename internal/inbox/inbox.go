// Package inbox holds the rules of a user's in-app inbox, free of I/O: list
// filters and limits, the opaque page cursor, the badge, announcements and
// their per-user read markers, and the newest-first merge of notifications
// with announcements into one page.
//
// Items are ordered by a sort key "<time>#<id>" whose time part is fixed
// width, so keys compare as strings and no two items share one. A page is
// "every item strictly older than the cursor's key, newest first": items
// inserted while a client pages are newer than any cursor it holds, so pages
// never repeat or skip an item.
package inbox

import (
	"fmt"
	"strconv"
)

// Filter selects which items a list shows.
type Filter string

const (
	// FilterAll: every item not archived, read or unread.
	FilterAll Filter = "all"
	// FilterUnread: items neither read nor archived.
	FilterUnread Filter = "unread"
	// FilterArchived: archived items only.
	FilterArchived Filter = "archived"
)

// ParseFilter validates a filter; "" means FilterAll.
func ParseFilter(s string) (Filter, error) {
	switch f := Filter(s); f {
	case "":
		return FilterAll, nil
	case FilterAll, FilterUnread, FilterArchived:
		return f, nil
	}
	return "", fmt.Errorf("filter %q: want all, unread or archived", s)
}

// Page sizes.
const (
	DefaultLimit = 20
	MaxLimit     = 100
)

// ParseLimit validates a page size; "" means DefaultLimit.
func ParseLimit(s string) (int, error) {
	if s == "" {
		return DefaultLimit, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxLimit {
		return 0, fmt.Errorf("limit %q: want an integer from 1 to %d", s, MaxLimit)
	}
	return n, nil
}

// CountCap is where unread counting stops: a badge shows at most "99+", so
// counting further would only cost reads.
const CountCap = 100

// Badge is the unread count as the client shows it.
type Badge struct {
	Count   int    `json:"count"`
	Display string `json:"display"`
	Capped  bool   `json:"capped,omitempty"`
}

// NewBadge caps n at CountCap: from CountCap on the badge reads "99+".
func NewBadge(n int) Badge {
	switch {
	case n < 0:
		n = 0
	case n >= CountCap:
		return Badge{Count: CountCap, Display: strconv.Itoa(CountCap-1) + "+", Capped: true}
	}
	return Badge{Count: n, Display: strconv.Itoa(n)}
}
