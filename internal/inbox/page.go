package inbox

import "github.com/heraldhq/herald/internal/domain"

// Entry is one inbox item before rendering: a notification, or an
// announcement with the user's marker.
type Entry struct {
	SortKey      string
	Notification *domain.Notification
	Announcement *Announcement
	Marker       Marker
}

// AnnouncementEntries returns the active announcements that appear under
// filter for a user with these markers and lie strictly before position
// ("" = from the newest), newest first. active must be sorted newest first.
func AnnouncementEntries(active []Announcement, markers map[string]Marker, f Filter, position string) []Entry {
	var out []Entry
	for i := range active {
		a := &active[i]
		if position != "" && a.SortKey >= position {
			continue
		}
		m := markers[a.ID]
		if Shows(f, m.Read(), m.Archived()) {
			out = append(out, Entry{SortKey: a.SortKey, Announcement: a, Marker: m})
		}
	}
	return out
}

// Page merges one query's notifications with the announcements of the same
// list into a page of at most limit entries, newest first, and returns the
// position the next page starts after ("" when this page is the last).
//
// notifications is what the page's single query returned, newest first,
// trimmed to limit; more reports whether the query found another item after
// them (the store reads limit+1). announcements are the candidates from
// AnnouncementEntries for the same position, newest first.
//
// When more is set, only announcements newer than the last notification are
// known to belong here: older ones may interleave with notifications the
// query did not read, so they wait for the next page, whose query starts at
// this page's last entry. Positions are therefore always the key of an entry
// the client has seen, and consecutive pages neither repeat nor skip.
func Page(notifications []Entry, more bool, announcements []Entry, limit int) ([]Entry, string) {
	if limit < 1 {
		return nil, ""
	}
	if len(notifications) > limit {
		notifications, more = notifications[:limit], true
	}
	inRange := announcements
	if more && len(notifications) > 0 {
		floor := notifications[len(notifications)-1].SortKey
		n := 0
		for n < len(announcements) && announcements[n].SortKey > floor {
			n++
		}
		inRange = announcements[:n]
	}
	merged := make([]Entry, 0, len(notifications)+len(inRange))
	i, j := 0, 0
	for i < len(notifications) || j < len(inRange) {
		if j == len(inRange) || (i < len(notifications) && notifications[i].SortKey > inRange[j].SortKey) {
			merged = append(merged, notifications[i])
			i++
		} else {
			merged = append(merged, inRange[j])
			j++
		}
	}
	hasMore := more || len(inRange) < len(announcements)
	if len(merged) > limit {
		merged, hasMore = merged[:limit], true
	}
	if !hasMore || len(merged) == 0 {
		return merged, ""
	}
	return merged, merged[len(merged)-1].SortKey
}
