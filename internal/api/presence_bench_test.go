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

// presenceHeld is how many users the benchmarks' cache holds: the bound the
// first cache had.
const presenceHeld = 10_000

// fullPresenceCache returns a cache holding the first presenceHeld users,
// each last written at seenAt. Keys are copied, as a request's path value is
// its own string, so that the memory measured includes them.
func fullPresenceCache(users []string, seenAt time.Time) *presenceCache {
	c := &presenceCache{}
	for _, u := range users[:presenceHeld] {
		c.due(strings.Clone(u), seenAt)
	}
	return c
}

// BenchmarkPresenceCache measures the per-instance presence memory (the
// check every presence call and inbox read makes before any request):
//   - hit: a user seen within the minute, the common case;
//   - hit-previous-generation: the same, found in the older generation;
//   - new-user-10k-held: the cache holds 10,000 users all seen within the
//     minute, and each op is a user not in it;
//   - new-generation-10k-stale: the same, but every entry is over a minute
//     old, so the op starts a generation and drops them all;
//   - memory-10k: the heap the cache holds for 10,000 users (bytes/user, MiB).
func BenchmarkPresenceCache(b *testing.B) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	b.Run("hit", func(b *testing.B) {
		users := presenceUsers(presenceHeld)
		c := fullPresenceCache(users, now)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			if c.due(users[i%len(users)], now.Add(time.Second)) {
				b.Fatal("a user seen a second ago is due")
			}
		}
	})
	b.Run("hit-previous-generation", func(b *testing.B) {
		users := presenceUsers(presenceHeld + 1)
		c := fullPresenceCache(users, now.Add(30*time.Second))
		c.due(users[presenceHeld], now.Add(61*time.Second)) // a new generation: the others are in the older one
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			if c.due(users[i%presenceHeld], now.Add(62*time.Second)) {
				b.Fatal("a user seen 32 seconds ago is due")
			}
		}
	})
	b.Run("new-user-10k-held", func(b *testing.B) {
		users := presenceUsers(presenceHeld + 100_000)
		c := fullPresenceCache(users, now)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			u := users[presenceHeld+i%100_000]
			if !c.due(u, now.Add(time.Second)) {
				b.Fatal("a new user is not due")
			}
			b.StopTimer()
			c.forget(u, now.Add(time.Second)) // back to the same 10,000
			b.StartTimer()
		}
	})
	b.Run("new-generation-10k-stale", func(b *testing.B) {
		users := presenceUsers(presenceHeld + 1)
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			c := fullPresenceCache(users, now)
			c.due(users[0], now.Add(time.Minute)) // the 10,000 in the older generation
			b.StartTimer()
			if !c.due(users[presenceHeld], now.Add(2*time.Minute)) {
				b.Fatal("a new user is not due")
			}
		}
	})
	b.Run("memory-10k", func(b *testing.B) {
		users := presenceUsers(presenceHeld)
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
		b.ReportMetric(float64(held)/presenceHeld, "bytes/user")
		b.ReportMetric(float64(held)/(1<<20), "MiB")
	})
}
