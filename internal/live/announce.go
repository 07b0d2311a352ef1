package live

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/heraldhq/herald/internal/inbox"
)

// An announcement reaches every user, and connections are kept per user:
// the online set (one entry per user who connected in the last 2 hours,
// spread over OnlineShards partitions) is what a broadcast walks. Each
// announcement is broadcast once: a conditional mark on the announcement
// decides which caller (the API after creating it, the scheduler when a
// scheduled one becomes active) sends the shards' messages.

// OnlineStore records the user in the online set until the connection's
// 2-hour limit (written at $connect).
type OnlineStore interface {
	AddOnline(ctx context.Context, shard int, user string, until time.Time) error
}

// OnlineReader pages through one shard of the online set: the users after
// `after` whose entry is still valid at now, evaluating at most limit
// entries; next is where the following page starts ("" when the shard is
// done).
type OnlineReader interface {
	OnlineUsers(ctx context.Context, shard int, after string, now time.Time, limit int) (users []string, next string, err error)
}

// BroadcastProgress is where each shard of an announcement's broadcast
// stands, kept on the announcement, so that each page is taken once: a page
// message delivered again (SQS delivers at least once) neither posts its
// users twice nor queues a second continuation, which would fork the shard
// into two chains posting every later page twice.
type BroadcastProgress interface {
	// AdvanceBroadcast moves the shard from the page starting after `after`
	// ("": the first) to the one starting after `next` ("": the shard is
	// done) if the shard stands at that page; false when it does not (the
	// page was taken by an earlier delivery of its message) or the
	// announcement is gone.
	AdvanceBroadcast(ctx context.Context, id string, shard int, after, next string) (bool, error)
}

// AnnouncementMarker marks an announcement broadcast, once.
type AnnouncementMarker interface {
	// MarkAnnouncementLive sets the announcement's broadcast time to at if
	// it has none; false when it had one (or there is no announcement).
	MarkAnnouncementLive(ctx context.Context, id string, at time.Time) (bool, error)
	// UnmarkAnnouncementLive removes the mark at set (a broadcast that
	// could not be sent), so that the scheduler's next run sends it.
	UnmarkAnnouncementLive(ctx context.Context, id string, at time.Time) error
	// UnexpiredAnnouncements reads the active and scheduled announcements.
	UnexpiredAnnouncements(ctx context.Context, now time.Time) ([]inbox.Announcement, error)
}

// BroadcastQueue sends broadcast messages to the live queue, delivered
// after delay (whole seconds, at most 15 minutes).
type BroadcastQueue interface {
	Broadcast(ctx context.Context, bs []Broadcast, delay time.Duration) error
}

// AnnounceTimeout bounds what announcing adds to its caller (the API's
// request, the scheduler's tick): the broadcast is best effort.
const AnnounceTimeout = 2 * time.Second

// PendingWindow is how far back the scheduler looks for announcements that
// became active without a broadcast (scheduled ones; one whose broadcast
// the API could not send). Older ones are never broadcast: an
// announcement active before this feature, or through a long outage,
// does not pop up late (users see it in the inbox as always).
const PendingWindow = time.Hour

// Announcer starts an announcement's broadcast.
type Announcer struct {
	Store AnnouncementMarker
	Queue BroadcastQueue
	Now   func() time.Time
	Log   *slog.Logger
}

// Announce broadcasts the announcement id to the online set unless it was
// broadcast already: it marks the announcement and, if the mark is new,
// sends one message per shard. When the messages cannot be sent the mark
// is removed again (the scheduler's next run retries). It reports whether
// this call started the broadcast.
func (a *Announcer) Announce(ctx context.Context, id string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), AnnounceTimeout)
	defer cancel()
	return a.announce(ctx, id, a.Now())
}

func (a *Announcer) announce(ctx context.Context, id string, now time.Time) (bool, error) {
	won, err := a.Store.MarkAnnouncementLive(ctx, id, now)
	if err != nil || !won {
		return false, err
	}
	bs := make([]Broadcast, OnlineShards)
	for i := range bs {
		bs[i] = Broadcast{ID: id, Shard: i}
	}
	if err := a.Queue.Broadcast(ctx, bs, 0); err != nil {
		// A partial send posts some shards twice after the retry: a
		// repeated inbox.created only makes the kit refetch.
		if uerr := a.Store.UnmarkAnnouncementLive(context.WithoutCancel(ctx), id, now); uerr != nil {
			err = errors.Join(err, fmt.Errorf("unmark: %w", uerr))
		}
		return false, fmt.Errorf("broadcast announcement: %w", err)
	}
	return true, nil
}

// AnnouncePending broadcasts the announcements active now, published
// within PendingWindow, and not broadcast yet (the scheduler calls it every
// run). It returns how many it started.
func (a *Announcer) AnnouncePending(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), AnnounceTimeout)
	defer cancel()
	now := a.Now()
	list, err := a.Store.UnexpiredAnnouncements(ctx, now)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, an := range list {
		if !an.LiveAt.IsZero() || !an.Active(now) || !an.PublishedAt.After(now.Add(-PendingWindow)) {
			continue
		}
		won, err := a.announce(ctx, an.ID, now)
		if err != nil {
			errs = append(errs, err)
		}
		if won {
			n++
		}
	}
	return n, errors.Join(errs...)
}
