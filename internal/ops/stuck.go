package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/recovery"
)

// Watches reads the scheduler's in-flight watches (recovery.Watch) from the
// due index, for `herald dlq stuck`.
type Watches interface {
	DuePartitions(from, to time.Time) []recovery.DuePartition
	ListWatchesUntil(ctx context.Context, p recovery.DuePartition, until time.Time) ([]recovery.Watch, error)
	LoadWatch(ctx context.Context, id string) (*recovery.Watch, error)
	WatchedDeliveries(ctx context.Context, keys []domain.DeliveryKey) (map[domain.DeliveryKey]*domain.Delivery, error)
}

// StuckDelivery is one line of `herald dlq stuck`.
type StuckDelivery struct {
	NotificationID string `json:"notificationId"`
	Channel        string `json:"channel"`
	Priority       string `json:"priority"`
	// Status is the delivery's status ("" when no delivery item exists).
	Status     string `json:"status"`
	AgeSeconds int64  `json:"ageSeconds"`
	// Checks counts the scheduler's checks that sent its message again.
	Checks int `json:"checks"`
	// NextCheck is when the scheduler checks it again (and sends again, or
	// fails it lost past the notification's expiry).
	NextCheck time.Time `json:"nextCheck"`
}

// stuckLookBack is how far back the listing reads the due index: as far as
// the scheduler's tick after an outage (its maxScan).
const stuckLookBack = 48 * time.Hour

// Stuck lists the deliveries the scheduler's watches find stuck: planned,
// queued, sending or retrying past their lease and backoff plus a grace
// (recovery.StuckAfter), oldest first. It reads the due index partitions from
// two days back to the longest wait between checks ahead (no table scan) and
// each watch's deliveries.
func (o *Operator) Stuck(ctx context.Context) ([]StuckDelivery, error) {
	if o.Watches == nil {
		return nil, errors.New("stuck: this deployment's table is not connected")
	}
	now := o.now()
	parts := o.Watches.DuePartitions(now.Add(-stuckLookBack), now.Add(recovery.MaxStuckWait))
	var (
		mu   sync.Mutex
		out  []StuckDelivery
		errs []error
	)
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for _, p := range parts {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			found, err := o.stuckIn(ctx, p, now)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			out = append(out, found...)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b StuckDelivery) int {
		if a.AgeSeconds != b.AgeSeconds {
			return int(b.AgeSeconds - a.AgeSeconds)
		}
		return strings.Compare(a.NotificationID+a.Channel, b.NotificationID+b.Channel)
	})
	return out, nil
}

func (o *Operator) stuckIn(ctx context.Context, p recovery.DuePartition, now time.Time) ([]StuckDelivery, error) {
	ws, err := o.Watches.ListWatchesUntil(ctx, p, now.Add(recovery.MaxStuckWait))
	if err != nil {
		return nil, err
	}
	var out []StuckDelivery
	for _, entry := range ws {
		w, err := o.Watches.LoadWatch(ctx, entry.ID)
		if err != nil {
			return nil, err
		}
		if w == nil {
			continue
		}
		keys := make([]domain.DeliveryKey, len(w.Entries))
		for i, e := range w.Entries {
			keys[i] = e.Key()
		}
		ds, err := o.Watches.WatchedDeliveries(ctx, keys)
		if err != nil {
			return nil, err
		}
		for _, s := range w.Stuck(ds, now) {
			out = append(out, StuckDelivery{NotificationID: s.NotificationID, Channel: string(s.Channel), Priority: string(s.Priority),
				Status: string(s.Status), AgeSeconds: int64(s.Age / time.Second), Checks: w.Checks, NextCheck: w.DueAt})
		}
	}
	return out, nil
}

func (c CLI) stuck(ctx context.Context, w Where, asJSON bool) error {
	op, err := c.connect(ctx, w)
	if err != nil {
		return err
	}
	ds, err := op.Stuck(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		if ds == nil {
			ds = []StuckDelivery{}
		}
		return writeJSON(c.Stdout, ds)
	}
	if len(ds) == 0 {
		fmt.Fprintln(c.Stdout, "no stuck delivery")
		return nil
	}
	tw := tabwriter.NewWriter(c.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NOTIFICATION\tCHANNEL\tPRIORITY\tSTATUS\tSTUCK FOR\tCHECKS\tNEXT CHECK")
	for _, d := range ds {
		status := d.Status
		if status == "" {
			status = "(unclaimed)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", d.NotificationID, d.Channel, d.Priority, status,
			(time.Duration(d.AgeSeconds) * time.Second).String(), d.Checks, d.NextCheck.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}
