package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/domain"
)

// DigestStore is what rendering a digest needs from the table. The channel
// functions' store provides it next to Store; a store without it cannot
// render digests, and a digest leader then fails (not_applicable) instead of
// going out as a single notification.
type DigestStore interface {
	// SealDigest closes the digest to new members and returns them, newest
	// first, without the leader; it is idempotent.
	SealDigest(ctx context.Context, k domain.DigestKey, digestID string) ([]domain.DigestMember, error)
	// GetNotifications reads notifications by id; missing ones are left out.
	GetNotifications(ctx context.Context, ids []string) ([]domain.Notification, error)
}

// errDigestLoad marks a digest whose members could not be read (a table
// error): the delivery is retried with backoff, not failed.
var errDigestLoad = errors.New("load digest")

// render renders a delivery's content: a digest leader (its delivery carries
// its own notification id as DigestID) renders the digest it leads; every
// other delivery renders its own template.
func (h *Handler) render(ctx context.Context, n *domain.Notification, d *domain.Delivery, typ *catalog.Type, locale string) (catalog.Content, error) {
	kind := catalog.KindOf(d.Channel)
	if d.DigestID == "" || d.DigestID != n.ID {
		return typ.Render(kind, locale, n.Data)
	}
	data, err := h.digestData(ctx, n, d.Channel)
	if err != nil {
		return catalog.Content{}, err
	}
	var fits func(catalog.Content) bool
	if b, ok := h.provider.(channel.ContentBudget); ok {
		fits = b.Fits
	}
	return typ.RenderDigestWithin(kind, locale, data, fits)
}

// digestData seals the digest led by n and lists its newest notifications:
// the leader and its members, newest first, without members that were
// cancelled, expired or deleted since they joined.
func (h *Handler) digestData(ctx context.Context, n *domain.Notification, c domain.Channel) (catalog.DigestData, error) {
	ds, ok := h.store.(DigestStore)
	if !ok {
		return catalog.DigestData{}, errors.New("the store cannot load digests")
	}
	members, err := ds.SealDigest(ctx, domain.DigestKey{UserID: n.Recipient.UserID, Channel: c, BatchKey: n.BatchKey}, n.ID)
	if err != nil {
		return catalog.DigestData{}, fmt.Errorf("%w %s: %w", errDigestLoad, n.ID, err)
	}
	all := append(members, domain.DigestMember{NotificationID: n.ID, CreatedAt: n.CreatedAt})
	domain.SortNewestFirst(all)
	listed := all[:min(len(all), catalog.MaxDigestItems)]
	byID := map[string]*domain.Notification{n.ID: n}
	var ids []string
	for _, m := range listed {
		if m.NotificationID != n.ID {
			ids = append(ids, m.NotificationID)
		}
	}
	if len(ids) > 0 {
		loaded, err := ds.GetNotifications(ctx, ids)
		if err != nil {
			return catalog.DigestData{}, fmt.Errorf("%w %s: %w", errDigestLoad, n.ID, err)
		}
		for i := range loaded {
			byID[loaded[i].ID] = &loaded[i]
		}
	}
	now := h.now()
	data := catalog.DigestData{Count: len(all)}
	for _, m := range listed {
		mn, ok := byID[m.NotificationID]
		if !ok || mn.Status == domain.NotificationCancelled || mn.Expired(now) {
			data.Count--
			continue
		}
		data.Items = append(data.Items, mn.Data)
	}
	return data, nil
}

// retryDigest puts a claimed digest back for a later attempt when its members
// could not be read, as a transient provider error would.
func (h *Handler) retryDigest(ctx context.Context, log *slog.Logger, msg events.SQSMessage, d *domain.Delivery, cause error) error {
	log.WarnContext(ctx, "digest load failed", "error", cause)
	return h.retryTransient(ctx, log, msg, d, "digest_load", 0, nil, false, providerOf{})
}
