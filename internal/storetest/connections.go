package storetest

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// ConnectionHarness is one implementation of the live inbox's connection
// store (the DynamoDB adapter; the live package's fake), with ids and
// times instead of live's types.
type ConnectionHarness struct {
	// Add records connection id of user, connected at; it
	// returns the ids recorded as of that write.
	Add    func(ctx context.Context, user, id string, at time.Time) ([]string, error)
	Evict  func(ctx context.Context, user, id string) (bool, error)
	Forget func(ctx context.Context, user string, ids []string) error
	// Remove forgets a connection and returns the ids left recorded.
	Remove func(ctx context.Context, user, id string) ([]string, error)
	// IDs reads the ids recorded for user (nil without an item).
	IDs func(t testing.TB, user string) []string
}

// ConnectionContract: a connect's write never conflicts with another
// connect of the user and answers every connection recorded before it and
// its own; of concurrent evictions of one connection exactly one removes
// it; a removal answers what is left; forgetting and removing never create
// what is absent.
func ConnectionContract(t *testing.T, newHarness func(t *testing.T) ConnectionHarness) {
	ctx := context.Background()
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	t.Run("add answers the set as of the write", func(t *testing.T) {
		h := newHarness(t)
		user := newID("conns")
		for i, want := range [][]string{{"a"}, {"a", "b"}, {"a", "b", "c"}} {
			got, err := h.Add(ctx, user, want[i], at.Add(time.Duration(i)*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if slices.Sort(got); !slices.Equal(got, want) {
				t.Fatalf("add %s answered %v, want %v", want[i], got, want)
			}
		}
	})
	t.Run("concurrent connects all land, in one order", func(t *testing.T) {
		h := newHarness(t)
		user := newID("conns-burst")
		const n = 12
		views := make([][]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				id := "p" + strconv.Itoa(i)
				v, err := h.Add(ctx, user, id, at)
				if err != nil {
					t.Error(err)
					return
				}
				if !slices.Contains(v, id) {
					t.Errorf("%s's view %v lacks it", id, v)
				}
				views[i] = v
			})
		}
		wg.Wait()
		if got := h.IDs(t, user); len(got) != n {
			t.Fatalf("recorded %v, want all %d", got, n)
		}
		// The views are the prefixes of one order of writes: each a
		// different size, each holding the smaller ones.
		slices.SortFunc(views, func(a, b []string) int { return len(a) - len(b) })
		for i, v := range views {
			if len(v) != i+1 {
				t.Fatalf("views of sizes %d: want 1 to %d, one each", len(v), n)
			}
			for _, id := range views[max(i-1, 0)] {
				if !slices.Contains(v, id) {
					t.Fatalf("view %v lacks %s of an earlier write", v, id)
				}
			}
		}
	})
	t.Run("one of concurrent evictions removes", func(t *testing.T) {
		h := newHarness(t)
		user := newID("conns-evict")
		for _, id := range []string{"old", "new"} {
			if _, err := h.Add(ctx, user, id, at); err != nil {
				t.Fatal(err)
			}
		}
		var removed atomic.Int64
		var wg sync.WaitGroup
		for range 6 {
			wg.Go(func() {
				ok, err := h.Evict(ctx, user, "old")
				if err != nil {
					t.Error(err)
				}
				if ok {
					removed.Add(1)
				}
			})
		}
		wg.Wait()
		if removed.Load() != 1 {
			t.Errorf("%d evictions removed it, want exactly 1", removed.Load())
		}
		if got := h.IDs(t, user); !slices.Equal(got, []string{"new"}) {
			t.Errorf("after the eviction: %v, want [new]", got)
		}
		if ok, err := h.Evict(ctx, user, "old"); ok || err != nil {
			t.Errorf("evicting an absent one: %v, %v", ok, err)
		}
	})
	t.Run("forget, remove and touch never create", func(t *testing.T) {
		h := newHarness(t)
		user, nobody := newID("conns-forget"), newID("conns-nobody")
		for _, id := range []string{"a", "b", "c"} {
			if _, err := h.Add(ctx, user, id, at); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.Forget(ctx, user, []string{"a", "missing", "c"}); err != nil {
			t.Fatal(err)
		}
		if got := h.IDs(t, user); !slices.Equal(got, []string{"b"}) {
			t.Errorf("after forgetting a and c: %v, want [b]", got)
		}
		if _, err := h.Add(ctx, user, "d", at); err != nil {
			t.Fatal(err)
		}
		for range 2 { // removing again answers the same
			left, err := h.Remove(ctx, user, "b")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(left, []string{"d"}) {
				t.Errorf("removing b left %v, want [d]", left)
			}
		}
		if got := h.IDs(t, user); !slices.Equal(got, []string{"d"}) {
			t.Errorf("after removing b: %v, want [d]", got)
		}
		if err := h.Forget(ctx, nobody, []string{"x"}); err != nil {
			t.Errorf("forget without an item: %v", err)
		}
		if left, err := h.Remove(ctx, nobody, "x"); err != nil || len(left) != 0 {
			t.Errorf("remove without an item: %v, %v", left, err)
		}
		if ok, err := h.Evict(ctx, nobody, "x"); ok || err != nil {
			t.Errorf("evict without an item: %v, %v", ok, err)
		}
		if got := h.IDs(t, nobody); got != nil {
			t.Errorf("a user without connections got %v", got)
		}
	})
}
