package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// PutEvents' documented limits: at most 10 entries and 256 KB (the sum of
// the entries' sizes) per request.
const (
	MaxEntriesPerPut = 10
	MaxPutBytes      = 256 * 1024
)

// Bus puts entries on the event bus: one result per entry, in order; a
// non-nil result is that entry's failure (PutEvents' per-entry ErrorCode),
// and a non-nil error fails the whole call (every entry is to retry).
type Bus interface {
	Put(ctx context.Context, entries []Entry) ([]error, error)
}

// Parker parks entries that could not be published in the events DLQ.
type Parker interface {
	Park(ctx context.Context, entries []Entry) error
}

// Publisher publishes entries at least once: PutEvents requests of at most
// 10 entries and 256 KB, the failed entries (and only those) retried with
// exponential backoff up to Attempts calls, what is left parked.
type Publisher struct {
	Bus   Bus
	DLQ   Parker
	Log   *slog.Logger
	Sleep func(context.Context, time.Duration) error
	// Attempts is how many PutEvents calls an entry gets (default 4);
	// Backoff the first wait between them (default 100 ms, doubling).
	Attempts int
	Backoff  time.Duration
}

// Result counts what Publish did.
type Result struct {
	Published, Retried, Parked int
}

// ErrNotParked wraps the failure of parking entries that could not be
// published: they are neither on the bus nor in the DLQ.
var ErrNotParked = errors.New("events not published and not parked")

// Publish puts every entry on the bus, retrying failed entries, and parks
// the ones that still fail. It returns an error wrapping ErrNotParked only
// when parking failed too (the caller then keeps the source records for a
// retry).
func (p *Publisher) Publish(ctx context.Context, entries []Entry) (Result, error) {
	var res Result
	attempts, wait := p.Attempts, p.Backoff
	if attempts <= 0 {
		attempts = 4
	}
	if wait <= 0 {
		wait = 100 * time.Millisecond
	}
	sleep := p.Sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	pending := entries
	var lastErr error
	for try := 1; len(pending) > 0 && try <= attempts; try++ {
		if try > 1 {
			res.Retried += len(pending)
			if err := sleep(ctx, wait); err != nil {
				break
			}
			wait *= 2
		}
		var failed []Entry
		for _, req := range chunk(pending) {
			errs, err := p.Bus.Put(ctx, req)
			for i, e := range req {
				switch {
				case err != nil:
					lastErr = err
					failed = append(failed, e)
				case i < len(errs) && errs[i] != nil:
					lastErr = errs[i]
					failed = append(failed, e)
				default:
					res.Published++
				}
			}
		}
		pending = failed
	}
	if len(pending) == 0 {
		return res, nil
	}
	ids := make([]string, len(pending))
	for i, e := range pending {
		ids[i] = e.ID
	}
	if err := p.DLQ.Park(context.WithoutCancel(ctx), pending); err != nil {
		p.log().ErrorContext(ctx, "events not published and not parked", "eventIds", ids, "publishError", lastErr, "error", err)
		return res, fmt.Errorf("%d events: %w: %w", len(pending), ErrNotParked, err)
	}
	res.Parked = len(pending)
	p.log().WarnContext(ctx, "events parked in the events DLQ", "eventIds", ids, "error", lastErr)
	return res, nil
}

func (p *Publisher) log() *slog.Logger {
	if p.Log == nil {
		return slog.Default()
	}
	return p.Log
}

// chunk splits entries into PutEvents requests of at most 10 entries and
// 256 KB. An entry over 256 KB alone is sent alone (EventBridge refuses it,
// and it is parked).
func chunk(entries []Entry) [][]Entry {
	var out [][]Entry
	var cur []Entry
	size := 0
	for _, e := range entries {
		s := e.Size()
		if len(cur) > 0 && (len(cur) == MaxEntriesPerPut || size+s > MaxPutBytes) {
			out = append(out, cur)
			cur, size = nil, 0
		}
		cur = append(cur, e)
		size += s
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
