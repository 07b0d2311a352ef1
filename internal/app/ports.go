package app

import (
	"github.com/heraldhq/herald/internal/api"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/feedback"
	"github.com/heraldhq/herald/internal/push"
	"github.com/heraldhq/herald/internal/relay"
	"github.com/heraldhq/herald/internal/scheduler"
	"github.com/heraldhq/herald/internal/worker"
)

// The store serves every consumer's interface. The checks live here, in the
// wiring, so the adapter depends on domain packages only.
var (
	_ api.NotificationStore     = (*dynamo.Store)(nil)
	_ api.InboxStore            = (*dynamo.Store)(nil)
	_ api.AnnouncementStore     = (*dynamo.Store)(nil)
	_ api.UserStore             = (*dynamo.Store)(nil)
	_ api.PushSubscriptionStore = (*dynamo.Store)(nil)
	_ api.PreferenceStore       = (*dynamo.Store)(nil)
	_ api.UnsubscribeStore      = (*dynamo.Store)(nil)
	_ relay.Store               = (*dynamo.Store)(nil)
	_ worker.Store              = (*dynamo.Store)(nil)
	_ worker.DigestStore        = (*dynamo.Store)(nil)
	_ scheduler.Store           = (*dynamo.Store)(nil)
	_ push.Subscriptions        = (*dynamo.Store)(nil)
	_ feedback.Store            = (*dynamo.Store)(nil)
)
