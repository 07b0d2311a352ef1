package policy

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func TestQuietUntil(t *testing.T) {
	qh := func(tz, start, end string) *domain.User {
		return &domain.User{Timezone: tz, QuietHours: &domain.QuietHours{Start: start, End: end}}
	}
	tests := []struct {
		name  string
		user  *domain.User
		at    string
		quiet bool
		until string
	}{
		{"no profile", nil, "2026-03-02T23:00:00Z", false, ""},
		{"no quiet hours", &domain.User{Timezone: "UTC"}, "2026-03-02T23:00:00Z", false, ""},
		{"across midnight, before midnight", qh("UTC", "22:00", "08:00"), "2026-03-02T23:00:00Z", true, "2026-03-03T08:00:00Z"},
		{"across midnight, after midnight", qh("UTC", "22:00", "08:00"), "2026-03-03T07:59:00Z", true, "2026-03-03T08:00:00Z"},
		{"across midnight, at the start", qh("UTC", "22:00", "08:00"), "2026-03-02T22:00:00Z", true, "2026-03-03T08:00:00Z"},
		{"across midnight, at the end", qh("UTC", "22:00", "08:00"), "2026-03-03T08:00:00Z", false, ""},
		{"across midnight, just before the start", qh("UTC", "22:00", "08:00"), "2026-03-02T21:59:59Z", false, ""},
		{"same-day window inside", qh("UTC", "12:00", "14:00"), "2026-03-02T13:00:00Z", true, "2026-03-02T14:00:00Z"},
		{"same-day window after", qh("UTC", "12:00", "14:00"), "2026-03-02T14:00:00Z", false, ""},
		{"unset timezone is UTC", qh("", "12:00", "14:00"), "2026-03-02T13:00:00Z", true, "2026-03-02T14:00:00Z"},
		{"unknown timezone is UTC", qh("Mars/Olympus", "12:00", "14:00"), "2026-03-02T13:00:00Z", true, "2026-03-02T14:00:00Z"},
		{"user's timezone", qh("Asia/Tokyo", "22:00", "07:00"), "2026-06-01T14:00:00Z", true, "2026-06-01T22:00:00Z"},
		{"user's timezone, outside", qh("Asia/Tokyo", "22:00", "07:00"), "2026-06-01T12:00:00Z", false, ""},
		{"empty window", qh("UTC", "08:00", "08:00"), "2026-03-02T08:00:00Z", false, ""},
		{"malformed start", qh("UTC", "25:00", "08:00"), "2026-03-02T23:00:00Z", false, ""},
		{"malformed end", qh("UTC", "22:00", "8"), "2026-03-02T23:00:00Z", false, ""},

		// New York springs forward on 2024-03-10: 02:00 EST becomes 03:00 EDT (07:00Z).
		{"night across spring forward ends at 07:00 EDT", qh("America/New_York", "22:00", "07:00"), "2024-03-10T04:00:00Z", true, "2024-03-10T11:00:00Z"},
		{"end in the skipped hour ends at the transition", qh("America/New_York", "01:00", "02:30"), "2024-03-10T06:30:00Z", true, "2024-03-10T07:00:00Z"},
		{"start in the skipped hour starts at the transition", qh("America/New_York", "02:30", "04:00"), "2024-03-10T07:00:00Z", true, "2024-03-10T08:00:00Z"},
		{"start in the skipped hour, not before it", qh("America/New_York", "02:30", "04:00"), "2024-03-10T06:59:00Z", false, ""},
		// New York falls back on 2024-11-03: 02:00 EDT becomes 01:00 EST (06:00Z); 01:00–02:00 happens twice.
		{"night across fall back ends at 07:00 EST", qh("America/New_York", "22:00", "07:00"), "2024-11-03T03:00:00Z", true, "2024-11-03T12:00:00Z"},
		{"end in the repeated hour: second occurrence (first pass)", qh("America/New_York", "00:30", "01:30"), "2024-11-03T05:10:00Z", true, "2024-11-03T06:30:00Z"},
		{"end in the repeated hour: second occurrence (second pass)", qh("America/New_York", "00:30", "01:30"), "2024-11-03T06:10:00Z", true, "2024-11-03T06:30:00Z"},
		{"end in the repeated hour: over after the second", qh("America/New_York", "00:30", "01:30"), "2024-11-03T06:30:00Z", false, ""},
		{"start in the repeated hour: first occurrence", qh("America/New_York", "01:30", "06:00"), "2024-11-03T05:30:00Z", true, "2024-11-03T11:00:00Z"},
		{"start in the repeated hour: not before the first", qh("America/New_York", "01:30", "06:00"), "2024-11-03T05:29:00Z", false, ""},
		// London springs forward on 2024-03-31: 01:00 GMT becomes 02:00 BST.
		{"London end in the skipped hour", qh("Europe/London", "00:00", "01:30"), "2024-03-31T00:45:00Z", true, "2024-03-31T01:00:00Z"},
		// Lord Howe Island moves by half an hour: 02:00 → 02:30 on 2024-10-06.
		{"half-hour shift", qh("Australia/Lord_Howe", "01:00", "02:15"), "2024-10-05T15:10:00Z", true, "2024-10-05T15:30:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			until, quiet := QuietUntil(tt.user, utc(tt.at))
			if quiet != tt.quiet {
				t.Fatalf("quiet = %v, want %v (until %v)", quiet, tt.quiet, until)
			}
			if quiet && !until.Equal(utc(tt.until)) {
				t.Errorf("until = %v, want %s", until.UTC(), tt.until)
			}
		})
	}
}

func TestWallInstant(t *testing.T) {
	ny, _ := time.LoadLocation("America/New_York")
	apia, _ := time.LoadLocation("Pacific/Apia")
	tests := []struct {
		name      string
		y         int
		m         time.Month
		d, hh, mm int
		loc       *time.Location
		last      bool
		want      string
	}{
		{"ordinary", 2024, time.July, 1, 9, 0, ny, false, "2024-07-01T13:00:00Z"},
		{"skipped: the transition", 2024, time.March, 10, 2, 30, ny, false, "2024-03-10T07:00:00Z"},
		{"repeated: first", 2024, time.November, 3, 1, 30, ny, false, "2024-11-03T05:30:00Z"},
		{"repeated: last", 2024, time.November, 3, 1, 30, ny, true, "2024-11-03T06:30:00Z"},
		{"normalised date", 2024, time.March, 0, 12, 0, ny, false, "2024-02-29T17:00:00Z"},
		// Samoa skipped 2011-12-30 entirely (UTC-10 → UTC+14 at local midnight).
		{"skipped day", 2011, time.December, 30, 10, 0, apia, false, "2011-12-30T10:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := wallInstant(tt.y, tt.m, tt.d, tt.hh, tt.mm, tt.loc, tt.last)
			if !got.Equal(utc(tt.want)) {
				t.Errorf("wallInstant = %v, want %s", got.UTC(), tt.want)
			}
		})
	}
}
