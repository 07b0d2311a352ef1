package api

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
)

// NewFakeHandler is the handler over every fake store of the unit tests,
// for the external tests (the hostile-body corpus); writes counts the writes
// the notification, user, subscription and preference fakes took.
func NewFakeHandler(t testing.TB) (h *Handler, writes func() int) {
	t.Helper()
	store := newFakeStore()
	in := newFakeInbox()
	cat, now, log := catalog.MustLoad(), func() time.Time { return testNow }, slog.New(slog.NewTextHandler(io.Discard, nil))
	active := NewAnnouncementCache(in, now)
	h = New(Deps{Log: log,
		Notifications: NewNotifications(NotificationsDeps{Notifications: store, Catalog: cat, Now: now, NewID: func() string { return "n" }, Log: log}),
		Campaigns: NewCampaigns(CampaignsDeps{Campaigns: &fakeCampaigns{campaigns: map[string]*domain.Campaign{}, chunks: map[string]string{}},
			CampaignQueue: &fakeCampaignQueue{}, Catalog: cat, Now: now, Log: log}),
		Users: NewUsers(UsersDeps{Users: store, PushSubscriptions: store, Preferences: store, Devices: newFakeDevices(),
			DeviceEndpoints: &fakeEndpoints{configured: map[domain.Platform]bool{domain.PlatformFCM: true},
				endpoints: map[string]string{}, data: map[string]string{}},
			Catalog: cat, Now: now, Log: log}),
		Inbox:         NewInbox(InboxDeps{Inbox: in, ActiveAnnouncements: active, Catalog: cat, Now: now, Log: log}),
		Announcements: NewAnnouncements(AnnouncementsDeps{Announcements: in, ActiveAnnouncements: active, Now: now, Log: log}),
		Me:            NewMe(MeDeps{Users: store, Preferences: store, Budgets: store, Catalog: cat, Log: log}),
		Unsubscribe:   NewUnsubscribe(UnsubscribeDeps{Catalog: cat, Log: log}),
	})
	return h, store.writeCount
}
