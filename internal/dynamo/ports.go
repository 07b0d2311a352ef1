package dynamo

import (
	"github.com/heraldhq/herald/internal/api"
	"github.com/heraldhq/herald/internal/push"
	"github.com/heraldhq/herald/internal/relay"
	"github.com/heraldhq/herald/internal/scheduler"
	"github.com/heraldhq/herald/internal/worker"
)

// The store serves every consumer's interface.
var (
	_ api.NotificationStore = (*Store)(nil)
	_ relay.Store           = (*Store)(nil)
	_ worker.Store          = (*Store)(nil)
	_ worker.DigestStore    = (*Store)(nil)
	_ scheduler.Store       = (*Store)(nil)
	_ push.Subscriptions    = (*Store)(nil)

	_ api.UserStore             = (*Store)(nil)
	_ api.PushSubscriptionStore = (*Store)(nil)
	_ api.PreferenceStore       = (*Store)(nil)
)
