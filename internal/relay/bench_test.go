package relay_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/relay"
)

// BenchmarkRelayHandle measures the relay handler's own CPU per stream record
// (decode, policy, rate limit and digest bookkeeping, batching) against
// in-memory fakes of the table and the queues: a batch of 100 new
// notifications, as the stream mapping delivers them (BatchSize 100), for 100
// users with quiet hours in their own timezone, two channels each, a third
// of them digestible. Each iteration is a fresh store, so nothing is a retry.
func BenchmarkRelayHandle(b *testing.B) {
	const batch = 100
	recs := make([]events.DynamoDBEventRecord, batch)
	for i := range recs {
		user := fmt.Sprintf("u%d", i)
		var n *domain.Notification
		if i%3 == 0 {
			n = comment(fmt.Sprintf("c%d", i), user, "thread", time.Second)
		} else {
			n = reservation(fmt.Sprintf("n%d", i), user, nil)
		}
		recs[i] = insert(fmt.Sprint(i), n)
	}
	ev := events.DynamoDBEvent{Records: recs}
	var cpu time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		f := newFixture(b, func(d *relay.Deps) { d.Concurrency = 16 })
		for i := range batch {
			f.user(fmt.Sprintf("u%d", i), func(p *domain.RecipientProfile) {
				p.User.Timezone = "Europe/Paris"
				p.User.QuietHours = &domain.QuietHours{Start: "23:00", End: "07:00"}
			})
		}
		before := processCPU()
		b.StartTimer()
		resp, err := f.h.Handle(context.Background(), ev)
		b.StopTimer()
		cpu += processCPU() - before
		if err != nil || len(resp.BatchItemFailures) > 0 {
			b.Fatalf("failures %v, %v", resp.BatchItemFailures, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/record")
	// CPU time (user+system, all threads) is what Lambda bills and what a
	// loaded, shared machine does not inflate the way it inflates wall time.
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*batch), "cpu-ns/record")
}

// processCPU is the process's user+system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
