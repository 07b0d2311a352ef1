package api

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// presenceUsers returns n user ids shaped like the UUIDs real callers use
// (36 characters), so that the map's memory is realistic.
func presenceUsers(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)
	}
	return out
}

// fullPresenceCache returns a cache holding presenceCacheMax users, each
// last written at seenAt. Keys are copied, as a request's path value is its
// own string, so that the memory measured includes them.
func fullPresenceCache(users []string, seenAt time.Time) *presenceCache {
	c := &presenceCache{}
	for _, u := range users[:presenceCacheMax] {
		c.due(strings.Clone(u), seenAt)
	}
	return c
}

// BenchmarkPresenceCache measures the per-instance presence memory (the
// check every presence call and inbox read makes before any request):
//   - hit: a user seen within the minute, the common case;
//   - bound-fresh-new-user: the cache holds presenceCacheMax users all seen
//     within the minute, and each op is a user not in it (nothing can be
//     dropped, so no op may scan the cache);
//   - bound-stale-sweep: the same, but every entry is over a minute old, so
//     the op drops them all (one scan);
//   - bound-memory: the heap the cache holds at the bound (bytes/user, MiB).
func BenchmarkPresenceCache(b *testing.B) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	b.Run("hit", func(b *testing.B) {
		users := presenceUsers(presenceCacheMax)
		c := fullPresenceCache(users, now)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			if c.due(users[i%len(users)], now.Add(time.Second)) {
				b.Fatal("a user seen a second ago is due")
			}
		}
	})
	b.Run("bound-fresh-new-user", func(b *testing.B) {
		users := presenceUsers(presenceCacheMax + 100_000)
		c := fullPresenceCache(users, now)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			u := users[presenceCacheMax+i%100_000]
			if !c.due(u, now.Add(time.Second)) {
				b.Fatal("a new user is not due")
			}
			b.StopTimer()
			c.forget(u, now.Add(time.Second)) // back to exactly the bound
			b.StartTimer()
		}
	})
	b.Run("bound-stale-sweep", func(b *testing.B) {
		users := presenceUsers(presenceCacheMax + 1)
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			c := fullPresenceCache(users, now)
			b.StartTimer()
			if !c.due(users[presenceCacheMax], now.Add(2*time.Minute)) {
				b.Fatal("a new user is not due")
			}
		}
	})
	b.Run("bound-memory", func(b *testing.B) {
		users := presenceUsers(presenceCacheMax)
		var held uint64
		for b.Loop() {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			c := fullPresenceCache(users, now)
			runtime.GC()
			runtime.ReadMemStats(&after)
			held = after.HeapAlloc - before.HeapAlloc
			runtime.KeepAlive(c)
		}
		b.ReportMetric(float64(held)/presenceCacheMax, "bytes/user")
		b.ReportMetric(float64(held)/(1<<20), "MiB")
	})
}
