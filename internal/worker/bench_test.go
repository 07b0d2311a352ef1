//go:build unix

package worker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/domain"
)

// BenchmarkHandle measures the worker's own CPU and allocations per message
// (decode, recheck, claim, render, record) with in-memory fakes for the
// table, SQS and the provider, in batches of 10 as the event source mapping
// delivers them. Provider and network time are not included. cpu-ns/msg is
// the process's user+system CPU time (getrusage) per message, which unlike
// ns/op does not depend on how busy the shared machine is or on the batch's
// goroutines waiting for each other.
func BenchmarkHandle(b *testing.B) {
	for _, tc := range []struct {
		name    string
		typ     string
		channel domain.Channel
	}{
		{"email", "reservation.approved", domain.ChannelEmail},
		{"sms", "otp.code", domain.ChannelSMS},
		{"push", "reservation.approved", domain.ChannelPush},
	} {
		b.Run(tc.name, func(b *testing.B) {
			h := newHarness(b, tc.channel, Config{})
			h.handler.log = slog.New(slog.NewJSONHandler(io.Discard, nil))
			ev := events.SQSEvent{}
			for i := range 10 {
				id := fmt.Sprintf("n%d", i)
				h.notification(id, tc.typ, tc.channel, domain.StatusQueued)
				ev.Records = append(ev.Records, message("m"+id, id, tc.channel, 1))
			}
			ctx := context.Background()
			b.ReportAllocs()
			cpuBefore := cpuTime()
			b.ResetTimer()
			for b.Loop() {
				// Reset the fakes (a few map writes; StopTimer would cost more
				// than it hides).
				for _, d := range h.store.deliveries.All() {
					d.Status, d.Attempts, d.LeaseUntil = domain.StatusQueued, 0, time.Time{}
					h.store.deliveries.Put(d)
				}
				h.provider.sent = h.provider.sent[:0]
				h.store.transitions = h.store.transitions[:0]
				resp, _ := h.handler.Handle(ctx, ev)
				if len(resp.BatchItemFailures) != 0 {
					b.Fatalf("failures %v", resp.BatchItemFailures)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*10), "ns/msg")
			b.ReportMetric(float64((cpuTime()-cpuBefore).Nanoseconds())/float64(b.N*10), "cpu-ns/msg")
		})
	}
}

// cpuTime is the process's user plus system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
