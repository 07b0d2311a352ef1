package dynamo

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
)

// LoadWork reads what a worker needs to recheck one work message: the
// notification and the recipient's profile, all strongly consistent. The
// delivery is not read: the worker's claim (a conditional update returning
// the item) answers its state, so a read of it would be paid twice.
//
// With the recipient's id in the message, email and SMS take one
// BatchGetItem (notification, profile, preferences, presence). Push also
// needs the user's subscriptions, a range of items only a query returns, so
// it reads the notification and queries the user's partition concurrently.
// A message without the user id (queued before it was carried) takes the
// two reads in turn.
//
// A notification of a cancelled campaign is returned cancelled: the message
// names its campaign, whose status copy (CampaignStatusPK) joins the batch
// read (other paths read it with one more GetItem).
func (s *Notifications) LoadWork(ctx context.Context, wm domain.WorkMessage) (*domain.Notification, *domain.RecipientProfile, error) {
	switch {
	case wm.UserID == "":
		n, err := s.GetNotification(ctx, wm.NotificationID)
		if err == nil {
			err = s.withCampaign(ctx, n, nil, false)
		}
		if err != nil {
			return nil, nil, err
		}
		p, err := (&Users{s.Table}).GetRecipientProfile(ctx, n.Recipient.UserID)
		return n, p, err
	case wm.Channel == domain.ChannelPush:
		var p *domain.RecipientProfile
		var perr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			p, perr = (&Users{s.Table}).GetRecipientProfile(ctx, wm.UserID)
		}()
		n, err := s.GetNotification(ctx, wm.NotificationID)
		<-done
		if err != nil {
			return nil, nil, err
		}
		if perr != nil {
			return nil, nil, perr
		}
		if err := s.withCampaign(ctx, n, nil, false); err != nil {
			return nil, nil, err
		}
		return s.ownProfile(ctx, n, p, wm)
	}
	keys := []map[string]types.AttributeValue{
		key(NotificationPK(wm.NotificationID), notificationSK),
		key(UserPK(wm.UserID), profileSK),
		key(UserPK(wm.UserID), prefsSK),
		key(UserPK(wm.UserID), presenceSK), // lastSeenAt, for the type's unlessActiveWithin
	}
	if wm.CampaignID != "" { // its status: a cancelled campaign sends nothing more
		keys = append(keys, campaignStatusKey(wm.CampaignID, wm.NotificationID))
	}
	items, err := s.batchGet(ctx, "load work "+wm.NotificationID, keys, consistentRead)
	if err != nil {
		return nil, nil, err
	}
	var n *domain.Notification
	var campaign map[string]types.AttributeValue
	p := &domain.RecipientProfile{Preferences: domain.Preferences{}}
	for _, av := range items {
		switch pk := stringAttr(av, "pk"); {
		case strings.HasPrefix(pk, userPrefix):
			err = absorbUserItem(p, av)
		case strings.HasPrefix(pk, campaignPrefix):
			campaign = av
		case stringAttr(av, "sk") == notificationSK:
			n, err = decodeNotification(av)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("load work %s: %w", wm.NotificationID, err)
		}
	}
	if n == nil {
		return nil, nil, fmt.Errorf("notification %s: %w", wm.NotificationID, domain.ErrNotFound)
	}
	// The batch read the status copy of the campaign the message named
	// (absent: not cancelled); another campaign's is read on its own.
	read := wm.CampaignID != "" && n.CampaignID == wm.CampaignID
	if err := s.withCampaign(ctx, n, campaign, read); err != nil {
		return nil, nil, err
	}
	return s.ownProfile(ctx, n, p, wm)
}

// ownProfile guards against a message naming another user than its
// notification's recipient: the recipient's own profile is read instead.
func (s *Notifications) ownProfile(ctx context.Context, n *domain.Notification, p *domain.RecipientProfile, wm domain.WorkMessage) (*domain.Notification, *domain.RecipientProfile, error) {
	if n.Recipient.UserID == wm.UserID {
		return n, p, nil
	}
	p, err := (&Users{s.Table}).GetRecipientProfile(ctx, n.Recipient.UserID)
	return n, p, err
}
