package policy

import (
	"slices"
	"strconv"
	"sync"
	"time"
	// Lambda's provided.al2023 runtime has no zoneinfo: embed the IANA
	// database so quiet hours work in every user's timezone.
	_ "time/tzdata"

	"github.com/heraldhq/herald/internal/domain"
)

// QuietUntil reports whether at falls inside the user's quiet hours and, if
// so, when that window ends. Quiet hours are a daily wall-clock window in the
// user's IANA timezone (UTC when unset or unknown); a window whose end is not
// after its start crosses midnight (22:00–08:00). Each window is resolved to
// instants on its own dates, so it follows daylight saving time:
//   - a start or end that does not exist that day (clocks turned forward)
//     resolves to the transition, the first instant whose wall clock is later;
//   - one that occurs twice (clocks turned back) resolves so the window is the
//     longer: the start at its first occurrence, the end at its second.
//
// A missing, malformed or empty (start = end) window means no quiet hours.
func QuietUntil(u *domain.User, at time.Time) (time.Time, bool) {
	if u == nil || u.QuietHours == nil {
		return time.Time{}, false
	}
	sh, sm, okStart := parseClock(u.QuietHours.Start)
	eh, em, okEnd := parseClock(u.QuietHours.End)
	if !okStart || !okEnd || sh == eh && sm == em {
		return time.Time{}, false
	}
	loc := location(u.Timezone)
	crossesMidnight := eh*60+em < sh*60+sm
	y, m, d := at.In(loc).Date()
	// The window containing at started today or, if it crosses midnight, yesterday.
	for _, startDay := range []int{d, d - 1} {
		start := wallInstant(y, m, startDay, sh, sm, loc, false)
		endDay := startDay
		if crossesMidnight {
			endDay++
		}
		end := wallInstant(y, m, endDay, eh, em, loc, true)
		if !at.Before(start) && at.Before(end) {
			return end, true
		}
	}
	return time.Time{}, false
}

// parseClock parses "HH:MM" (00:00–23:59).
func parseClock(s string) (h, m int, ok bool) {
	if len(s) != 5 || s[2] != ':' {
		return 0, 0, false
	}
	h, errH := strconv.Atoi(s[:2])
	m, errM := strconv.Atoi(s[3:])
	if errH != nil || errM != nil || h < 0 || h > 23 || m < 0 || m > 59 {
		return 0, 0, false
	}
	return h, m, true
}

var locations sync.Map // IANA name → *time.Location

// location loads a timezone once per process; unknown names fall back to UTC
// (the users API validates them, so that is a stale or hand-written profile).
func location(name string) *time.Location {
	if name == "" {
		return time.UTC
	}
	if loc, ok := locations.Load(name); ok {
		return loc.(*time.Location)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		loc = time.UTC
	}
	locations.Store(name, loc)
	return loc
}

// wallInstant resolves the wall-clock time y-m-d hh:mm in loc to an instant
// (the date is normalised, so d may be 0 or one past the month's end). A time
// that occurs twice resolves to its first occurrence, or to its last when last
// is set; a time that does not occur resolves to the transition that skips it.
// time.Date leaves both cases unspecified, hence this.
func wallInstant(y int, m time.Month, d, hh, mm int, loc *time.Location, last bool) time.Time {
	wall := time.Date(y, m, d, hh, mm, 0, 0, time.UTC)
	// Most days have no transition within a day and a half: one offset, one instant.
	_, before := wall.Add(-36 * time.Hour).In(loc).Zone()
	if _, after := wall.Add(36 * time.Hour).In(loc).Zone(); before == after {
		if c := wall.Add(-time.Duration(before) * time.Second); wallClock(c, loc).Equal(wall) {
			return c
		}
	}
	var found []time.Time
	var lo, hi time.Time
	// The offsets in force around that date: transitions are months apart, so
	// probing a day and a half either side sees both sides of any of them.
	for _, probe := range []time.Duration{-36 * time.Hour, 0, 36 * time.Hour} {
		_, offset := wall.Add(probe).In(loc).Zone()
		c := wall.Add(-time.Duration(offset) * time.Second)
		if lo.IsZero() || c.Before(lo) {
			lo = c
		}
		if hi.IsZero() || c.After(hi) {
			hi = c
		}
		if wallClock(c, loc).Equal(wall) && !slices.ContainsFunc(found, c.Equal) {
			found = append(found, c)
		}
	}
	if len(found) > 0 {
		slices.SortFunc(found, time.Time.Compare)
		if last {
			return found[len(found)-1]
		}
		return found[0]
	}
	// Skipped: find the transition, the first second whose wall clock is at
	// or after the requested one (wallClock(lo) < wall ≤ wallClock(hi)).
	l, h := lo.Unix(), hi.Unix()
	for h-l > 1 {
		mid := l + (h-l)/2
		if wallClock(time.Unix(mid, 0), loc).Before(wall) {
			l = mid
		} else {
			h = mid
		}
	}
	return time.Unix(h, 0).UTC()
}

// wallClock is t's wall-clock reading in loc, expressed as a UTC time so that
// readings compare directly.
func wallClock(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
}
