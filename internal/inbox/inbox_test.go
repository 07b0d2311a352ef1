package inbox

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

func TestParseFilter(t *testing.T) {
	tests := []struct {
		in      string
		want    Filter
		wantErr bool
	}{
		{"", FilterAll, false},
		{"all", FilterAll, false},
		{"unread", FilterUnread, false},
		{"archived", FilterArchived, false},
		{"ALL", "", true},
		{"read", "", true},
	}
	for _, tt := range tests {
		got, err := ParseFilter(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseFilter(%q) = %q, %v; want %q, err %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestParseLimit(t *testing.T) {
	tests := []struct {
		in      string
		want    int
		wantErr bool
	}{
		{"", DefaultLimit, false},
		{"1", 1, false},
		{"100", 100, false},
		{"0", 0, true},
		{"101", 0, true},
		{"-1", 0, true},
		{"ten", 0, true},
		{"2.5", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseLimit(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseLimit(%q) = %d, %v; want %d, err %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestNewBadge(t *testing.T) {
	tests := []struct {
		n    int
		want Badge
	}{
		{-3, Badge{Count: 0, Display: "0"}},
		{0, Badge{Count: 0, Display: "0"}},
		{1, Badge{Count: 1, Display: "1"}},
		{99, Badge{Count: 99, Display: "99"}},
		{100, Badge{Count: 100, Display: "99+", Capped: true}},
		{150, Badge{Count: 100, Display: "99+", Capped: true}},
	}
	for _, tt := range tests {
		if got := NewBadge(tt.n); got != tt.want {
			t.Errorf("NewBadge(%d) = %+v, want %+v", tt.n, got, tt.want)
		}
	}
}

func TestCursorRoundTrip(t *testing.T) {
	c := Cursor{Scope: string(FilterUnread), Position: "2026-01-02T03:04:05.000000006Z#n0123"}
	enc := c.Encode()
	if strings.Contains(enc, "2026") {
		t.Errorf("cursor %q is not opaque", enc)
	}
	got, err := DecodeCursor(enc, string(FilterUnread))
	if err != nil || got != c {
		t.Fatalf("DecodeCursor = %+v, %v; want %+v", got, err, c)
	}
}

func TestDecodeCursorRejects(t *testing.T) {
	good := Cursor{Scope: "all", Position: "2026-01-02T03:04:05.000000006Z#n0123"}.Encode()
	raw, _ := cursorEncoding.DecodeString(good)
	flipped := slices.Clone(raw)
	flipped[len(flipped)-1] ^= 1
	tests := []struct{ name, cursor, scope string }{
		{"empty", "", "all"},
		{"not base64", "!!!", "all"},
		{"too short", cursorEncoding.EncodeToString([]byte("abc")), "all"},
		{"payload edited", cursorEncoding.EncodeToString(flipped), "all"},
		{"other list", good, "unread"},
		{"too long", strings.Repeat("A", maxCursorLen+1), "all"},
		{"position without id", Cursor{Scope: "all", Position: "2026-01-02"}.Encode(), "all"},
		{"position with space", Cursor{Scope: "all", Position: "2026 01#n1"}.Encode(), "all"},
		{"position with control", Cursor{Scope: "all", Position: "2026\x01#n1"}.Encode(), "all"},
		{"position too long", Cursor{Scope: "all", Position: "t#" + strings.Repeat("x", maxPositionLen)}.Encode(), "all"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := DecodeCursor(tt.cursor, tt.scope); err != ErrInvalidCursor {
				t.Errorf("DecodeCursor(%q) error = %v, want ErrInvalidCursor", tt.cursor, err)
			}
		})
	}
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func ann(id string, published, expires time.Duration) Announcement {
	p := t0.Add(published)
	return Announcement{ID: id, PublishedAt: p, ExpiresAt: t0.Add(expires), SortKey: p.Format(time.RFC3339Nano) + "#" + id}
}

func TestAnnouncementStatus(t *testing.T) {
	a := ann("a1", time.Hour, 2*time.Hour)
	tests := []struct {
		at     time.Duration
		status string
		active bool
	}{
		{0, StatusScheduled, false},
		{time.Hour, StatusActive, true},
		{90 * time.Minute, StatusActive, true},
		{2 * time.Hour, StatusExpired, false},
	}
	for _, tt := range tests {
		now := t0.Add(tt.at)
		if got := a.Status(now); got != tt.status || a.Active(now) != tt.active {
			t.Errorf("at +%s: status %s active %v, want %s %v", tt.at, got, a.Active(now), tt.status, tt.active)
		}
	}
}

func TestActiveAnnouncements(t *testing.T) {
	all := []Announcement{
		ann("old", -3*time.Hour, -time.Hour), // expired
		ann("a1", -2*time.Hour, time.Hour),
		ann("future", time.Hour, 2*time.Hour),
		ann("a2", -time.Hour, time.Hour),
	}
	got := AnnouncementIDs(ActiveAnnouncements(all, t0))
	if want := []string{"a2", "a1"}; !slices.Equal(got, want) {
		t.Errorf("active = %v, want %v", got, want)
	}
	var many []Announcement
	for i := range MaxActiveAnnouncements + 5 {
		many = append(many, ann(fmt.Sprintf("m%03d", i), -time.Duration(i+1)*time.Minute, time.Hour))
	}
	got = AnnouncementIDs(ActiveAnnouncements(many, t0))
	if len(got) != MaxActiveAnnouncements || got[0] != "m000" {
		t.Errorf("active of many: %d starting %v, want the newest %d", len(got), got[:1], MaxActiveAnnouncements)
	}
}

func TestShowsAndUnread(t *testing.T) {
	tests := []struct {
		read, archived              bool
		all, unread, archivedFilter bool
	}{
		{false, false, true, true, false},
		{true, false, true, false, false},
		{false, true, false, false, true},
		{true, true, false, false, true},
	}
	for _, tt := range tests {
		if Shows(FilterAll, tt.read, tt.archived) != tt.all || Shows(FilterUnread, tt.read, tt.archived) != tt.unread ||
			Shows(FilterArchived, tt.read, tt.archived) != tt.archivedFilter {
			t.Errorf("Shows(read=%v, archived=%v) wrong", tt.read, tt.archived)
		}
	}
	active := []Announcement{ann("a1", -time.Hour, time.Hour), ann("a2", -time.Hour, time.Hour), ann("a3", -time.Hour, time.Hour)}
	markers := map[string]Marker{"a1": {ReadAt: t0}, "a3": {ArchivedAt: t0}, "gone": {ReadAt: t0}}
	if n := UnreadAnnouncements(active, markers); n != 1 {
		t.Errorf("UnreadAnnouncements = %d, want 1", n)
	}
}

func TestIsAnnouncementID(t *testing.T) {
	for id, want := range map[string]bool{
		"a" + strings.Repeat("0", 26): true,
		"n" + strings.Repeat("0", 26): false,
		"a123":                        false,
		"":                            false,
	} {
		if IsAnnouncementID(id) != want {
			t.Errorf("IsAnnouncementID(%q) = %v", id, !want)
		}
	}
}

func TestAnnouncementEntries(t *testing.T) {
	active := []Announcement{ann("a3", -time.Minute, time.Hour), ann("a2", -2*time.Minute, time.Hour), ann("a1", -3*time.Minute, time.Hour)}
	markers := map[string]Marker{"a2": {ReadAt: t0}, "a1": {ArchivedAt: t0}}
	ids := func(es []Entry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.Announcement.ID)
		}
		return out
	}
	tests := []struct {
		f        Filter
		position string
		want     []string
	}{
		{FilterAll, "", []string{"a3", "a2"}},
		{FilterUnread, "", []string{"a3"}},
		{FilterArchived, "", []string{"a1"}},
		{FilterAll, active[0].SortKey, []string{"a2"}},
		{FilterAll, active[2].SortKey, nil},
	}
	for _, tt := range tests {
		if got := ids(AnnouncementEntries(active, markers, tt.f, tt.position)); !slices.Equal(got, tt.want) {
			t.Errorf("%s before %q = %v, want %v", tt.f, tt.position, got, tt.want)
		}
	}
}

func key(i int) string { return fmt.Sprintf("%06d#x", i) }

func notif(i int) Entry {
	return Entry{SortKey: key(i), Notification: &domain.Notification{ID: fmt.Sprint(i)}}
}

func annEntry(i int) Entry {
	return Entry{SortKey: key(i), Announcement: &Announcement{ID: fmt.Sprint(i)}}
}

func keys(es []Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.SortKey
	}
	return out
}

func TestPage(t *testing.T) {
	tests := []struct {
		name      string
		notifs    []Entry
		more      bool
		anns      []Entry
		limit     int
		wantKeys  []string
		wantAfter string
	}{
		{"empty", nil, false, nil, 20, nil, ""},
		{"notifications only, last page", []Entry{notif(9), notif(5)}, false, nil, 20, []string{key(9), key(5)}, ""},
		{"notifications fill the page, more", []Entry{notif(9), notif(5)}, true, nil, 2, []string{key(9), key(5)}, key(5)},
		{"store returned limit+1", []Entry{notif(9), notif(5), notif(3)}, false, nil, 2, []string{key(9), key(5)}, key(5)},
		{"announcements interleave on the last page", []Entry{notif(9), notif(5)}, false, []Entry{annEntry(7), annEntry(1)}, 20,
			[]string{key(9), key(7), key(5), key(1)}, ""},
		{"last page overflows the limit", []Entry{notif(9), notif(5)}, false, []Entry{annEntry(7), annEntry(1)}, 3,
			[]string{key(9), key(7), key(5)}, key(5)},
		{"older announcements wait for the next page", []Entry{notif(9), notif(5)}, true, []Entry{annEntry(7), annEntry(1)}, 2,
			[]string{key(9), key(7)}, key(7)},
		{"announcements only", nil, false, []Entry{annEntry(7), annEntry(1)}, 1, []string{key(7)}, key(7)},
		{"zero limit", []Entry{notif(1)}, false, nil, 0, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, after := Page(tt.notifs, tt.more, tt.anns, tt.limit)
			if !slices.Equal(keys(got), tt.wantKeys) || after != tt.wantAfter {
				t.Errorf("Page = %v after %q; want %v after %q", keys(got), after, tt.wantKeys, tt.wantAfter)
			}
		})
	}
}

// TestPagingNeverRepeatsOrSkips pages through a simulated store (one query of
// limit+1 per page, announcements merged in) while newer items arrive between
// pages, and checks the pages concatenate to exactly the items that existed
// when paging began.
func TestPagingNeverRepeatsOrSkips(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		next := 0
		var notifs, anns []Entry // newest first
		add := func(isAnn bool) {
			next += 1 + r.IntN(3)
			if isAnn {
				anns = append([]Entry{annEntry(next)}, anns...)
			} else {
				notifs = append([]Entry{notif(next)}, notifs...)
			}
		}
		for range r.IntN(120) {
			add(r.IntN(6) == 0)
		}
		var want []string
		for _, e := range mergeAll(notifs, anns) {
			want = append(want, e.SortKey)
		}
		limit := 1 + r.IntN(15)
		var got []string
		position := ""
		for pages := 0; ; pages++ {
			if pages > 1000 {
				t.Fatalf("seed %d: paging does not end", seed)
			}
			// The store's one query reads limit+1; some seeds trim it
			// themselves and pass more, others leave it to Page, others
			// get a short read with more (DynamoDB's 1 MB page limit).
			q := before(notifs, position)
			more := false
			switch {
			case seed%3 == 0 && len(q) > 1:
				k := 1 + r.IntN(min(limit, len(q)-1))
				q, more = q[:k], true
			case len(q) > limit && seed%3 == 1:
				q, more = q[:limit], true
			case len(q) > limit:
				q = q[:limit+1]
			}
			page, after := Page(q, more, before(anns, position), limit)
			for _, e := range page {
				got = append(got, e.SortKey)
			}
			if after == "" {
				break
			}
			position = after
			for range r.IntN(3) { // newer items arrive between pages
				add(r.IntN(3) == 0)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d limit %d: pages %v\nwant %v", seed, limit, got, want)
		}
	}
}

func before(es []Entry, position string) []Entry {
	var out []Entry
	for _, e := range es {
		if position == "" || e.SortKey < position {
			out = append(out, e)
		}
	}
	return out
}

func mergeAll(a, b []Entry) []Entry {
	out := append(slices.Clone(a), b...)
	sort.Slice(out, func(i, j int) bool { return out[i].SortKey > out[j].SortKey })
	return out
}
