package api

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/heraldhq/herald/internal/live"
)

type memLive struct {
	got []live.Event
	err error
}

func (m *memLive) Notify(_ context.Context, evs []live.Event) error {
	m.got = append(m.got, evs...)
	return m.err
}

// Read, archive and read-all tell the live inbox about the user's own item
// (read-all: no id); a refused change tells nothing; a failing notifier does
// not change the answer.
func TestInboxChangesNotifyLive(t *testing.T) {
	fx := newFixture(t)
	l := &memLive{}
	fx.inbox.live = l
	fx.addNotification("alice", "n1", "security.login_alert", "", 0)
	fx.addNotification("alice", "n2", "security.login_alert", "", 0)
	for _, c := range []call{
		{route: routeRead, path: map[string]string{"userId": "alice", "id": "n1"}, sub: "alice"},
		{route: routeArchive, path: map[string]string{"userId": "alice", "id": "n1"}, sub: "alice"},
		{route: routeRead, path: map[string]string{"userId": "alice", "id": "n1"}, sub: "mallory"}, // refused
		{route: routeReadAll, path: map[string]string{"userId": "alice"}, sub: "alice"},
	} {
		fx.do(c)
	}
	want := []live.Event{
		{UserID: "alice", Kind: live.KindUpdated, ID: "n1"},
		{UserID: "alice", Kind: live.KindUpdated, ID: "n1"},
		{UserID: "alice", Kind: live.KindUpdated},
	}
	if !slices.Equal(l.got, want) {
		t.Errorf("live heard %+v, want %+v", l.got, want)
	}
	l.err = errors.New("queue down")
	if r := fx.do(call{route: routeArchive, path: map[string]string{"userId": "alice", "id": "n2"}, sub: "alice"}); r.status != http.StatusOK {
		t.Errorf("archive with the notifier failing: %d %s", r.status, r.body)
	}
}
