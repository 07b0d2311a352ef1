// Package apifn wires the HTTP API function.
package apifn

import (
	"crypto/rand"

	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/heraldhq/herald/internal/api"
	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/app/unsubscribekey"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/live"
	"github.com/heraldhq/herald/internal/policy"
	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/snspush"
	"github.com/heraldhq/herald/internal/webpush"
)

// Each feature store serves its routes' interfaces.
var (
	_ api.NotificationStore     = (*dynamo.Notifications)(nil)
	_ api.InboxStore            = (*dynamo.Inbox)(nil)
	_ api.AnnouncementStore     = (*dynamo.Inbox)(nil)
	_ api.UserStore             = (*dynamo.Users)(nil)
	_ api.PushSubscriptionStore = (*dynamo.Users)(nil)
	_ api.PreferenceStore       = (*dynamo.Users)(nil)
	_ api.UnsubscribeStore      = (*dynamo.Users)(nil)
	_ api.UnsubscribeTokens     = (*unsubscribekey.Signer)(nil)
	_ api.CampaignStore         = (*dynamo.Campaigns)(nil)
	_ api.CampaignQueue         = (*queue.CampaignQueue)(nil)
	_ api.DeviceStore           = (*dynamo.Users)(nil)
	_ api.PresenceStore         = (*dynamo.Live)(nil)
	_ api.DeviceEndpoints       = (*snspush.Adapter)(nil)
	_ api.TopicStore            = (*dynamo.Topics)(nil)
)

// New wires the HTTP API function. The unsubscribe key is read on the first
// unsubscribe request, so the API starts without it.
func New(d app.Deps) (*api.Handler, error) {
	// Link variables are checked at intake and the inbox renders under the
	// stack's link policy.
	cat, err := d.LinkedCatalog()
	if err != nil {
		return nil, err
	}
	st, err := d.Stores()
	if err != nil {
		return nil, err
	}
	// The push services a subscription may name (empty: webpush.DefaultPushServices).
	pushHosts, err := webpush.ParseHostList(d.Getenv("PUSH_ENDPOINT_ALLOW_LIST"))
	if err != nil {
		return nil, err
	}
	env, err := d.Require(queue.CampaignQueueEnv)
	if err != nil {
		return nil, err
	}
	sqsClient := sqs.NewFromConfig(d.AWS)
	campaigns := queue.NewCampaignQueue(sqsClient, env[queue.CampaignQueueEnv])
	// Devices: SNS platform endpoints in the applications the template's
	// parameters name (an empty one: that platform is off).
	endpoints := snspush.New(sns.NewFromConfig(d.AWS, func(o *sns.Options) { o.Retryer = snspush.Retryer() }),
		snspush.ApplicationsFrom(d.Getenv))
	// A campaign's finish estimate: the send quotas, fan-out and reconcile
	// delay the workers and the campaign function are given.
	pace, err := policy.PaceSettingsFromEnv(d.Getenv)
	if err != nil {
		return nil, err
	}
	// One recorder: the router flushes what the notification routes count.
	rec := d.Recorder()
	// One cache of the active announcements: the inbox reads it, a create drops it.
	active := api.NewAnnouncementCache(st.Inbox, d.Now)
	return api.New(api.Deps{Log: d.Log, Metrics: rec,
		Notifications: api.NewNotifications(api.NotificationsDeps{Notifications: st.Notifications, History: st.History,
			Campaigns: st.Campaigns, CampaignQueue: campaigns, Catalog: cat, Now: d.Now, NewID: randomID, Log: d.Log, Metrics: rec}),
		Campaigns: api.NewCampaigns(api.CampaignsDeps{Campaigns: st.Campaigns, CampaignQueue: campaigns,
			Catalog: cat, Pace: pace, Now: d.Now, Log: d.Log}),
		Users: api.NewUsers(api.UsersDeps{Users: st.Users, PushSubscriptions: st.Users, Preferences: st.Users,
			Devices: st.Users, DeviceEndpoints: endpoints,
			PushHosts: pushHosts, AllowInsecurePushLoopback: d.Getenv("PUSH_ALLOW_INSECURE_LOOPBACK") == "true",
			VAPIDPublicKey: d.Getenv("VAPID_PUBLIC_KEY"),
			Catalog:        cat, Now: d.Now, Log: d.Log}),
		Inbox: api.NewInbox(api.InboxDeps{Inbox: st.Inbox, ActiveAnnouncements: active, Presence: st.Live, Live: liveNotifier(d, sqsClient),
			Catalog: cat, Now: d.Now, Log: d.Log}),
		Announcements: api.NewAnnouncements(api.AnnouncementsDeps{Announcements: st.Inbox, ActiveAnnouncements: active,
			Announcer: liveAnnouncer(d, st.Inbox, sqsClient), Now: d.Now, Log: d.Log}),
		Me:     api.NewMe(api.MeDeps{Users: st.Users, Preferences: st.Users, Budgets: st.Users, Catalog: cat, Log: d.Log}),
		Topics: api.NewTopics(api.TopicsDeps{Topics: st.Topics, Log: d.Log}),
		Unsubscribe: api.NewUnsubscribe(api.UnsubscribeDeps{Store: st.Users, Tokens: unsubscribekey.Lazy(d),
			Catalog: cat, Log: d.Log}),
	}), nil
}

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	return api.NewRandomID(b[:])
}

// liveNotifier sends the user's inbox changes to LIVE_QUEUE_URL (the
// template always sets it); none without it.
func liveNotifier(d app.Deps, sqsClient *sqs.Client) live.Notifier {
	if url := d.Getenv(queue.LiveQueueEnv); url != "" {
		return queue.NewLiveQueue(sqsClient, url)
	}
	return live.NopNotifier{}
}

// liveAnnouncer broadcasts new active announcements through LIVE_QUEUE_URL;
// none without it.
func liveAnnouncer(d app.Deps, st *dynamo.Inbox, sqsClient *sqs.Client) api.Announcer {
	if url := d.Getenv(queue.LiveQueueEnv); url != "" {
		return &live.Announcer{Store: st, Queue: queue.NewLiveQueue(sqsClient, url), Now: d.Now, Log: d.Log}
	}
	return nil
}
