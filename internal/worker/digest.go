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
// its own notification id as DigestID) renders the digest it leads — the
// type's, or the catalog's budget digest for a budget digest's leader —;
// every other delivery renders its own template.
func (h *Handler) render(ctx context.Context, n *domain.Notification, d *domain.Delivery, typ *catalog.Type, locale string) (catalog.Content, error) {
	kind := catalog.KindOf(d.Channel)
	if d.DigestID == "" || d.DigestID != n.ID {
		return typ.Render(kind, locale, n.Data)
	}
	var fits func(catalog.Content) bool
	if b, ok := h.provider.(channel.ContentBudget); ok {
		fits = b.Fits
	}
	if d.BudgetDigest {
		data, err := h.budgetDigestData(ctx, n, d.Channel, locale)
		if err != nil {
			return catalog.Content{}, err
		}
		return h.catalog.BudgetDigest().RenderDigestWithin(kind, locale, data, fits)
	}
	count, listed, err := h.digestMembers(ctx, n, domain.DigestKey{UserID: n.Recipient.UserID, Channel: d.Channel, BatchKey: n.BatchKey})
	if err != nil {
		return catalog.Content{}, err
	}
	data := catalog.DigestData{Count: count}
	for _, mn := range listed {
		data.Items = append(data.Items, mn.Data)
	}
	return typ.RenderDigestWithin(kind, locale, data, fits)
}

// budgetDigestData seals the user's budget digest led by n, records its
// members (deferred: budget) skipped: digested, and lists the newest of them
// as the catalog's budget digest shows them: each one's own in-app
// rendering. A member whose type left the catalog is counted, not listed.
func (h *Handler) budgetDigestData(ctx context.Context, n *domain.Notification, c domain.Channel, locale string) (catalog.DigestData, error) {
	count, listed, err := h.digestMembers(ctx, n, domain.BudgetDigestKey(n.Recipient.UserID, c))
	if err != nil {
		return catalog.DigestData{}, err
	}
	data := catalog.DigestData{Count: count}
	for _, mn := range listed {
		mt, ok := h.catalog.Lookup(mn.Type)
		if !ok {
			continue
		}
		inapp, err := mt.Render(catalog.KindInApp, locale, mn.Data)
		if err != nil {
			continue // counted: .more says so
		}
		data.Items = append(data.Items, catalog.BudgetDigestItem(inapp))
	}
	return data, nil
}

// digestMembers seals the digest of key led by n and returns how many
// notifications it collapses and the newest of them (at most
// catalog.MaxDigestItems), the leader included, without members that were
// cancelled, expired or deleted since they joined. The members of a budget
// digest wait deferred: they are recorded skipped: digested here, before the
// message goes out (a retry of the message finds them so already).
func (h *Handler) digestMembers(ctx context.Context, n *domain.Notification, key domain.DigestKey) (int, []*domain.Notification, error) {
	ds, ok := h.store.(DigestStore)
	if !ok {
		return 0, nil, errors.New("the store cannot load digests")
	}
	members, err := ds.SealDigest(ctx, key, n.ID)
	if err != nil {
		return 0, nil, fmt.Errorf("%w %s: %w", errDigestLoad, n.ID, err)
	}
	if key.IsBudgetDigest() {
		for _, m := range members {
			_, err := h.store.Transition(ctx, m.NotificationID, key.Channel, domain.Change{
				To: domain.StatusSkipped, From: []domain.Status{domain.StatusDeferred}, Reason: domain.ReasonDigested,
			})
			if err != nil && !errors.Is(err, domain.ErrConflict) && !errors.Is(err, domain.ErrNotFound) {
				return 0, nil, fmt.Errorf("%w %s: member %s: %w", errDigestLoad, n.ID, m.NotificationID, err)
			}
		}
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
			return 0, nil, fmt.Errorf("%w %s: %w", errDigestLoad, n.ID, err)
		}
		for i := range loaded {
			byID[loaded[i].ID] = &loaded[i]
		}
	}
	now := h.now()
	count := len(all)
	var out []*domain.Notification
	for _, m := range listed {
		mn, ok := byID[m.NotificationID]
		if !ok || mn.Status == domain.NotificationCancelled || mn.Expired(now) {
			count--
			continue
		}
		out = append(out, mn)
	}
	return count, out, nil
}

// retryDigest puts a claimed digest back for a later attempt when its members
// could not be read, as a transient provider error would.
func (h *Handler) retryDigest(ctx context.Context, log *slog.Logger, msg events.SQSMessage, d *domain.Delivery, cause error) error {
	log.WarnContext(ctx, "digest load failed", "error", cause)
	return h.retryTransient(ctx, log, msg, d, "digest_load", 0, nil, false, providerOf{})
}
