package ops

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/heraldhq/herald/client"
)

const stampLayout = "2006-01-02 15:04:05.000Z07:00"

func stamp(t time.Time) string { return t.UTC().Format(stampLayout) }

// PrintHistoryEntry prints one history entry: the notification, then a line a
// channel with its state, decision and times (herald user history).
func PrintHistoryEntry(w io.Writer, e client.HistoryEntry) {
	origin := ""
	if e.CampaignID != "" {
		origin = " campaign " + e.CampaignID
	}
	fmt.Fprintf(w, "%s  %s  %s  %s%s\n", stamp(e.CreatedAt), e.ID, e.Type, e.Priority, origin)
	for _, ch := range sortedChannels(e.Deliveries) {
		dl := e.Deliveries[ch]
		var parts []string
		if dl.Decision != "" {
			parts = append(parts, dl.Decision)
		} else if dl.Reason != "" {
			parts = append(parts, dl.Reason)
		}
		for _, t := range []struct {
			name string
			at   *time.Time
		}{{"queued", dl.QueuedAt}, {"sent", dl.SentAt}, {"feedback", dl.FeedbackAt}} {
			if t.at != nil {
				parts = append(parts, t.name+" "+t.at.UTC().Format("15:04:05.000"))
			}
		}
		if dl.Attempts > 0 {
			parts = append(parts, fmt.Sprintf("%d attempt(s)", dl.Attempts))
		}
		fmt.Fprintf(w, "    %-6s %-10s %s\n", ch, dl.Status, strings.Join(parts, " · "))
	}
}

func sortedChannels(m map[string]client.Delivery) []string {
	out := make([]string, 0, len(m))
	for ch := range m {
		out = append(out, ch)
	}
	sort.Strings(out)
	return out
}

// PrintTrail prints a notification's decision trail, a block a channel, a
// line a step.
func PrintTrail(w io.Writer, st *client.NotificationStatus) {
	fmt.Fprintf(w, "%s %s (%s, %s)\n", st.ID, st.Type, st.Status, st.Overall)
	for _, ch := range sortedChannels(st.Deliveries) {
		dl := st.Deliveries[ch]
		fmt.Fprintf(w, "%s: %s\n", ch, dl.Status)
		fmt.Fprintf(w, "  %s  accepted\n", stamp(st.CreatedAt))
		prev := ""
		for _, s := range dl.Trail {
			fmt.Fprintf(w, "  %s  %s\n", stamp(s.At), stepWords(s, prev))
			prev = s.Status
		}
	}
}

// stepWords says what a step did, in the words of the delivery's life.
func stepWords(s client.TrailStep, prev string) string {
	why := ""
	if s.Reason != "" {
		why = ": " + s.Reason
	}
	switch s.Status {
	case "deferred":
		until := ""
		if s.DueAt != nil {
			until = " until " + stamp(*s.DueAt)
		}
		return "deferred" + until + " (" + strings.TrimPrefix(why, ": ") + ")"
	case "planned":
		if prev == "deferred" {
			return "released"
		}
	case "sending":
		return "claimed (sending)"
	case "retrying":
		out := "retrying"
		if s.Error != "" {
			out += ": " + s.Error
		}
		if s.Note != "" {
			out += ", " + s.Note
		}
		return out
	}
	return s.Status + why
}
