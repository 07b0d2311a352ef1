package inbox_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

// itemModel is the ground truth of one item for one user.
type itemModel struct{ read, archived bool }

// inboxModel is what a user's inbox must hold, maintained by the test
// independently of the system.
type inboxModel struct {
	items map[string]*itemModel // notifications and active announcements by id
	notes []string              // notification ids, for picking
	anns  []string              // announcement ids, for picking
}

func (m *inboxModel) unread() int {
	n := 0
	for _, it := range m.items {
		if !it.read && !it.archived {
			n++
		}
	}
	return n
}

func (m *inboxModel) ids(show func(*itemModel) bool) []string {
	var out []string
	for id, it := range m.items {
		if show(it) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// TestUnreadCountMatchesGroundTruth runs random sequences of inserts, reads,
// read-alls, archives and announcements, and after every step compares the
// badge (and read-all's count) with the model; at the end, the unread and
// archived lists too.
func TestUnreadCountMatchesGroundTruth(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		t.Run("seed="+strconv.FormatUint(seed, 10), func(t *testing.T) { runInboxModel(t, seed) })
	}
}

func runInboxModel(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0x1b0c))
	user := stacktest.UniqueID("prop")
	m := &inboxModel{items: map[string]*itemModel{}}
	for id := range activeAnnouncements(t) { // other tests' announcements are everyone's
		m.items[id] = &itemModel{}
		m.anns = append(m.anns, id)
	}
	slices.Sort(m.anns)
	pick := func(ids []string) string { return ids[r.IntN(len(ids))] }
	announced := 0
	for step := range 40 {
		var what string
		switch op := r.IntN(100); {
		case op < 25 || len(m.notes) == 0:
			k := 1 + r.IntN(4)
			if r.IntN(20) == 0 {
				k = 60 // sometimes cross the cap
			}
			what = fmt.Sprintf("insert %d", k)
			now := stacktest.Stack(t).Clock.Now()
			for _, id := range insert(t, user, fmt.Sprintf("p%d-%d", seed, step), k, func(i int) time.Time { return now.Add(time.Duration(i) * time.Microsecond) }) {
				m.items[id] = &itemModel{}
				m.notes = append(m.notes, id)
			}
		case op < 45:
			id := pick(m.notes)
			what = "read " + id
			mustOK(t, itemAction(t, user, id, "read"), what)
			m.items[id].read = true
		case op < 55 && len(m.anns) > 0:
			id := pick(m.anns)
			what = "read announcement " + id
			mustOK(t, itemAction(t, user, id, "read"), what)
			m.items[id].read = true
		case op < 67:
			id := pick(m.notes)
			what = "archive " + id
			mustOK(t, itemAction(t, user, id, "archive"), what)
			m.items[id].archived = true
		case op < 72 && len(m.anns) > 0:
			id := pick(m.anns)
			what = "archive announcement " + id
			mustOK(t, itemAction(t, user, id, "archive"), what)
			m.items[id].archived = true
		case op < 82:
			what = "read-all"
			if got, want := readAll(t, user), m.unread(); got != want {
				t.Fatalf("step %d read-all updated %d, model says %d unread", step, got, want)
			}
			for _, it := range m.items {
				if !it.archived {
					it.read = true
				}
			}
		case op < 88 && announced < 2:
			announced++
			a := announce(t, fmt.Sprintf("seed %d step %d", seed, step), time.Time{}, stacktest.Stack(t).Clock.Now().Add(time.Hour))
			what = "announce " + a.ID
			m.items[a.ID] = &itemModel{}
			m.anns = append(m.anns, a.ID)
		default:
			what = "read a foreign item"
			if resp := itemAction(t, user, "nforeign"+strconv.Itoa(step), "read"); resp.StatusCode != http.StatusNotFound {
				t.Fatalf("step %d %s: %d %s", step, what, resp.StatusCode, resp.Body)
			}
		}
		want := badge{Count: min(m.unread(), 100), Display: strconv.Itoa(m.unread())}
		if m.unread() >= 100 {
			want = badge{Count: 100, Display: "99+", Capped: true}
		}
		if got := unreadCount(t, user); got != want {
			t.Fatalf("step %d (%s): badge %+v, ground truth %+v", step, what, got, want)
		}
	}
	lists := map[string]func(*itemModel) bool{
		"unread":   func(it *itemModel) bool { return !it.read && !it.archived },
		"archived": func(it *itemModel) bool { return it.archived },
		"all":      func(it *itemModel) bool { return !it.archived },
	}
	for _, filter := range slices.Sorted(maps.Keys(lists)) {
		var got []string
		for _, it := range listAll(t, user, filter) {
			got = append(got, it.ID)
			if model := m.items[it.ID]; model != nil && (it.ReadAt != nil) != model.read {
				t.Errorf("%s: %s readAt %v, model read=%v", filter, it.ID, it.ReadAt, model.read)
			}
		}
		slices.Sort(got)
		if want := m.ids(lists[filter]); !slices.Equal(got, want) {
			t.Errorf("%s lists %d items, model %d\n got %v\nwant %v", filter, len(got), len(want), got, want)
		}
	}
}

func mustOK(t *testing.T, resp *stacktest.Response, what string) {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %s", what, resp.StatusCode, resp.Body)
	}
}
