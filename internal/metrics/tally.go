package metrics

import (
	"context"
	"slices"
	"sync"
)

// Tally is an in-memory Recorder for tests of the code that records: it
// keeps counts and observations by name and dimensions.
type Tally struct {
	mu      sync.Mutex
	counts  map[Name]map[Dims]int
	values  map[Name]map[Dims][]float64
	flushes int
}

var _ Recorder = (*Tally)(nil)

// Add implements Recorder.
func (t *Tally) Add(_ context.Context, name Name, d Dims, n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.counts == nil {
		t.counts = map[Name]map[Dims]int{}
	}
	if t.counts[name] == nil {
		t.counts[name] = map[Dims]int{}
	}
	t.counts[name][d] += n
}

// Observe implements Recorder.
func (t *Tally) Observe(_ context.Context, name Name, d Dims, v float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.values == nil {
		t.values = map[Name]map[Dims][]float64{}
	}
	if t.values[name] == nil {
		t.values[name] = map[Dims][]float64{}
	}
	t.values[name][d] = append(t.values[name][d], v)
}

// Flush implements Recorder; it only counts the flushes.
func (t *Tally) Flush(context.Context) {
	t.mu.Lock()
	t.flushes++
	t.mu.Unlock()
}

// Count is the total added under name with exactly these dimensions.
func (t *Tally) Count(name Name, d Dims) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.counts[name][d]
}

// Total is the total added under name, whatever the dimensions.
func (t *Tally) Total(name Name) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, c := range t.counts[name] {
		n += c
	}
	return n
}

// Flushes is how many times Flush was called.
func (t *Tally) Flushes() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.flushes
}

// Values are the values observed under name with exactly these dimensions.
func (t *Tally) Values(name Name, d Dims) []float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.values[name][d])
}
