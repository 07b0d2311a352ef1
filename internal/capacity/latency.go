package capacity

import (
	"fmt"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/policy"
)

// LatencyBudget is one priority's path from acceptance to the provider's
// acceptance, step by step, in seconds, at its p99, against its objective
// (the template's HighLatencyObjective / NormalLatencyObjective), and how
// busy its workers are at the seed's busy hour.
type LatencyBudget struct {
	// StreamToRelay: the record reaching the stream and the relay's poll
	// (Lambda polls a shard 4 times a second), plus the relay mapping's
	// batching window.
	StreamToRelay float64 `json:"streamToRelay"`
	// Relay: one relay batch (read, plan, publish).
	Relay float64 `json:"relay"`
	// QueueToWorker: the channel mapping's long poll, plus its batching
	// window.
	QueueToWorker float64 `json:"queueToWorker"`
	// Worker: one batch's load, claim and outcome.
	Worker float64 `json:"worker"`
	// QuotaWait: high waits at most policy.HighQuotaWait in the worker for
	// the reserve low can never take; normal, when the whole quota is
	// full, is deferred normalQuotaRounds times at most the longest
	// policy.QuotaDelay.
	QuotaWait float64 `json:"quotaWait"`
	// Provider: the provider call (policy.ProviderAllowance).
	Provider  float64 `json:"provider"`
	Total     float64 `json:"total"`
	Objective float64 `json:"objective"`
	// Utilisation: the busiest channel's invocations the priority's busy
	// hour needs over its mappings' MaximumConcurrency; at most
	// maxUtilisation, a message rarely waits for an invocation.
	Utilisation float64 `json:"utilisation"`
}

const (
	// streamPropagationSeconds: a write reaches the table's stream within
	// about a second at p99 (propagation plus the 0.25 s between polls).
	streamPropagationSeconds = 1.0
	// queuePollSeconds: a long-polling SQS mapping receives a sent message
	// within this at p99.
	queuePollSeconds = 0.1
	// normalQuotaRounds: normal shares the whole quota with high; the
	// seed's busy hour fits the whole effective rate (steadyState), so a
	// normal send finds the quota full only in a burst, deferred at most
	// this many times.
	normalQuotaRounds = 10
	// maxUtilisation bounds how busy a priority's workers may be.
	maxUtilisation = 0.5
)

// latencyBudget is priority pr's budget under l at the seed's busy hour
// (steady is the day's own traffic per channel).
func latencyBudget(pr domain.Priority, l Limits, steady map[domain.Channel]Steady) LatencyBudget {
	relay := "RelayFunction"
	if pr == domain.PriorityHigh {
		relay = "RelayHighFunction"
	}
	b := LatencyBudget{
		StreamToRelay: streamPropagationSeconds + l.StreamBatchingWindow[relay],
		Relay:         relaySecondsPerBatch,
		QueueToWorker: queuePollSeconds + l.QueueBatchingWindow[pr],
		Worker:        workerSecondsPerBatch,
		QuotaWait:     policy.HighQuotaWait.Seconds(),
		Provider:      policy.ProviderAllowance.Seconds(),
		Objective:     l.LatencyObjective[pr] / 1000,
	}
	if pr != domain.PriorityHigh {
		b.QuotaWait = normalQuotaRounds * policy.QuotaDelay(pr, 0.999).Seconds()
	}
	b.Total = b.StreamToRelay + b.Relay + b.QueueToWorker + b.Worker + b.QuotaWait + b.Provider
	perInvocation := workerSecondsPerBatch // the provider call included
	for _, c := range seedChannels {
		rate := steady[c].HighBusy
		if pr != domain.PriorityHigh {
			rate = steady[c].BusyHour - steady[c].HighBusy
		}
		if conc := l.MaxConcurrency[pr]; conc > 0 && l.Batch[pr] > 0 {
			b.Utilisation = max(b.Utilisation, rate/l.Batch[pr]*perInvocation/conc)
		}
	}
	return b
}

// checkLatencyObjective: high's and normal's paths fit their objectives
// at the seed's busy hour, and their workers are not the bottleneck.
func (res *Result) checkLatencyObjective(l Limits) {
	steady := map[domain.Channel]Steady{}
	for c, s := range res.Seed.Steady {
		steady[domain.Channel(c)] = s
	}
	res.Seed.Latency = map[string]LatencyBudget{}
	figures := map[string]float64{}
	var conds []cond
	for _, pr := range []domain.Priority{domain.PriorityHigh, domain.PriorityNormal} {
		b := latencyBudget(pr, l, steady)
		res.Seed.Latency[string(pr)] = LatencyBudget{StreamToRelay: round2(b.StreamToRelay), Relay: round2(b.Relay), QueueToWorker: round2(b.QueueToWorker),
			Worker: round2(b.Worker), QuotaWait: round2(b.QuotaWait), Provider: round2(b.Provider), Total: round2(b.Total), Objective: round2(b.Objective),
			Utilisation: round2(b.Utilisation)}
		figures[string(pr)+".totalSeconds"], figures[string(pr)+".objectiveSeconds"], figures[string(pr)+".utilisation"] = b.Total, b.Objective, b.Utilisation
		conds = append(conds, cond{fmt.Sprintf("%s: the path's p99 seconds vs %sLatencyObjective", pr, titleCase(pr)), b.Total, b.Objective},
			cond{fmt.Sprintf("%s: busy-hour invocations vs the mappings' MaximumConcurrency (at most %.0f %%)", pr, 100*maxUtilisation), b.Utilisation, maxUtilisation})
	}
	res.seedCheck(CheckLatencyObjective, figures,
		"raise the objective, or shorten the path: the batching windows, the mappings' MaximumConcurrency, the send rates (docs/capacity.md, Latency objectives)",
		conds...)
}

func titleCase(pr domain.Priority) string {
	s := string(pr)
	return string(s[0]-'a'+'A') + s[1:]
}
