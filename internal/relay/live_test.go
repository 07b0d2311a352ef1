package relay_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/live"
	"github.com/heraldhq/herald/internal/relay"
)

type memLive struct {
	mu    sync.Mutex
	calls int
	got   []live.Event
	err   error
}

func (m *memLive) Notify(_ context.Context, evs []live.Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	m.got = append(m.got, evs...)
	return m.err
}

// The live inbox hears of a batch's new notifications in one call, each for
// its own recipient; its failure neither fails a record nor stops a
// delivery.
func TestLiveHearsOfNewInboxItemsOncePerBatch(t *testing.T) {
	for _, fail := range []bool{false, true} {
		l := &memLive{}
		if fail {
			l.err = errors.New("queue down")
		}
		f := newFixture(t, func(d *relay.Deps) { d.Live = l })
		f.user("u1", nil)
		f.user("u2", nil)
		failed := f.handle(t, insert("1", reservation("n1", "u1", nil)), insert("2", reservation("n2", "u2", nil)))
		if len(failed) > 0 {
			t.Fatalf("failed records %v (live failing: %v)", failed, fail)
		}
		want := []live.Event{{UserID: "u1", Kind: live.KindCreated, ID: "n1"}, {UserID: "u2", Kind: live.KindCreated, ID: "n2"}}
		if l.calls != 1 || !slices.Equal(l.got, want) {
			t.Errorf("live got %d calls %+v, want one with %+v", l.calls, l.got, want)
		}
		f.wantDelivery(t, "n1", domain.ChannelEmail, domain.StatusQueued, "")
		f.wantDelivery(t, "n2", domain.ChannelEmail, domain.StatusQueued, "")
	}
}
