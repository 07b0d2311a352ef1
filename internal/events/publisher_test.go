package events_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/events"
)

// fakeBus fails entries by id a given number of times, or the whole call.
type fakeBus struct {
	failEntry map[string]int // id -> failures left
	failCalls int
	calls     [][]string
	published map[string]int
}

func (b *fakeBus) Put(_ context.Context, entries []events.Entry) ([]error, error) {
	var ids []string
	size := 0
	for _, e := range entries {
		ids = append(ids, e.ID)
		size += e.Size()
	}
	b.calls = append(b.calls, ids)
	if len(entries) > events.MaxEntriesPerPut || size > events.MaxPutBytes {
		return nil, fmt.Errorf("ValidationException: %d entries, %d bytes", len(entries), size)
	}
	if b.failCalls > 0 {
		b.failCalls--
		return nil, errors.New("ThrottlingException")
	}
	errs := make([]error, len(entries))
	for i, e := range entries {
		if b.failEntry[e.ID] != 0 {
			if b.failEntry[e.ID] > 0 {
				b.failEntry[e.ID]--
			}
			errs[i] = errors.New("InternalFailure")
			continue
		}
		if b.published == nil {
			b.published = map[string]int{}
		}
		b.published[e.ID]++
	}
	return errs, nil
}

type fakeDLQ struct {
	parked []events.Entry
	err    error
}

func (d *fakeDLQ) Park(_ context.Context, entries []events.Entry) error {
	if d.err != nil {
		return d.err
	}
	d.parked = append(d.parked, entries...)
	return nil
}

func entries(n, detailBytes int) []events.Entry {
	out := make([]events.Entry, n)
	for i := range out {
		out[i] = events.Entry{ID: fmt.Sprintf("e%02d", i), Source: "herald", DetailType: "Delivery State Change",
			Detail: []byte(`{"x":"` + strings.Repeat("a", detailBytes) + `"}`)}
	}
	return out
}

func publisher(bus events.Bus, dlq events.Parker, waits *[]time.Duration) *events.Publisher {
	return &events.Publisher{Bus: bus, DLQ: dlq, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Sleep: func(_ context.Context, d time.Duration) error { *waits = append(*waits, d); return nil }}
}

func TestPublishRetriesOnlyFailedEntries(t *testing.T) {
	bus := &fakeBus{failEntry: map[string]int{"e03": 2, "e07": 1}}
	dlq := &fakeDLQ{}
	var waits []time.Duration
	res, err := publisher(bus, dlq, &waits).Publish(context.Background(), entries(12, 10))
	if err != nil {
		t.Fatal(err)
	}
	if len(bus.published) != 12 || len(dlq.parked) != 0 {
		t.Fatalf("published %d, parked %d", len(bus.published), len(dlq.parked))
	}
	// 12 entries: 10 + 2, then [e03 e07], then [e03].
	want := "[[e00 e01 e02 e03 e04 e05 e06 e07 e08 e09] [e10 e11] [e03 e07] [e03]]"
	if got := fmt.Sprint(bus.calls); got != want {
		t.Errorf("calls %s\nwant  %s", got, want)
	}
	if fmt.Sprint(waits) != "[100ms 200ms]" || res.Retried != 3 {
		t.Errorf("waits %v, retried %d", waits, res.Retried)
	}
}

func TestPublishWholeCallFailuresRetried(t *testing.T) {
	bus := &fakeBus{failCalls: 3}
	dlq := &fakeDLQ{}
	var waits []time.Duration
	if _, err := publisher(bus, dlq, &waits).Publish(context.Background(), entries(3, 10)); err != nil {
		t.Fatal(err)
	}
	if len(bus.published) != 3 || len(dlq.parked) != 0 || len(bus.calls) != 4 {
		t.Errorf("published %v, parked %d, calls %d", bus.published, len(dlq.parked), len(bus.calls))
	}
}

func TestPublishParksWhatStillFails(t *testing.T) {
	bus := &fakeBus{failEntry: map[string]int{"e01": -1}}
	dlq := &fakeDLQ{}
	var waits []time.Duration
	res, err := publisher(bus, dlq, &waits).Publish(context.Background(), entries(3, 10))
	if err != nil {
		t.Fatal(err)
	}
	if len(dlq.parked) != 1 || dlq.parked[0].ID != "e01" || res.Parked != 1 || res.Published != 2 {
		t.Errorf("parked %v, result %+v", dlq.parked, res)
	}
	if len(bus.calls) != 4 { // bounded: 4 calls for e01
		t.Errorf("%d calls", len(bus.calls))
	}
}

func TestPublishParkFailureIsReported(t *testing.T) {
	bus := &fakeBus{failCalls: 100}
	dlq := &fakeDLQ{err: errors.New("sqs down")}
	var waits []time.Duration
	_, err := publisher(bus, dlq, &waits).Publish(context.Background(), entries(2, 10))
	if !errors.Is(err, events.ErrNotParked) {
		t.Errorf("err = %v, want ErrNotParked", err)
	}
}

func TestPublishRespectsRequestSize(t *testing.T) {
	bus := &fakeBus{}
	var waits []time.Duration
	// 5 entries of ~100 KB: 2 + 2 + 1 requests under 256 KB.
	if _, err := publisher(bus, &fakeDLQ{}, &waits).Publish(context.Background(), entries(5, 100*1024)); err != nil {
		t.Fatal(err)
	}
	if len(bus.calls) != 3 || len(bus.published) != 5 {
		t.Errorf("calls %v", bus.calls)
	}
}
