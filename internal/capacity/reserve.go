package capacity

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/internal/devstack"
)

// ReservationAdvice is what to reserve once the account's Lambda quota is
// raised: the template reserves nothing by default (a new account's quota
// of 10 leaves nothing to reserve, Lambda keeping 100 unreserved), and each
// reserved-concurrency parameter, when set, reserves it for its functions.
type ReservationAdvice struct {
	// Parameters: each *ReservedConcurrency parameter's least useful value:
	// the largest need of the functions it reserves for.
	Parameters map[string]float64 `json:"parameters"`
	// Functions: each reserved function's need, and why.
	Functions map[string]FunctionReservation `json:"functions"`
	// Reserved is the sum over the functions at Parameters' values.
	Reserved float64 `json:"reserved"`
	// UnreservedPeak: the other functions' concurrency at the profile's
	// busiest second.
	UnreservedPeak float64 `json:"unreservedPeak"`
	// AccountConcurrencyNeeded: Reserved plus what stays unreserved (at
	// least 100, at least UnreservedPeak): the quota to ask for first.
	AccountConcurrencyNeeded float64 `json:"accountConcurrencyNeeded"`
}

// FunctionReservation is one function's reservation need.
type FunctionReservation struct {
	Parameter string  `json:"parameter"`
	Need      float64 `json:"need"`
	Why       string  `json:"why"`
}

// Line is the advice as herald capacity prints it.
func (a ReservationAdvice) Line() string {
	var sets []string
	for _, p := range slices.Sorted(maps.Keys(a.Parameters)) {
		sets = append(sets, fmt.Sprintf("%s=%.0f", p, a.Parameters[p]))
	}
	return fmt.Sprintf("reserved concurrency: none by default (a new account's quota of 10 allows none); once the account's Lambda quota is at least %.0f (%.0f reserved + %.0f unreserved), set %s",
		a.AccountConcurrencyNeeded, a.Reserved, a.AccountConcurrencyNeeded-a.Reserved, strings.Join(sets, " "))
}

// adviseReservations reads which functions each reserved-concurrency
// parameter of the template reserves for (the template resolved with a
// distinct probe value per parameter), and sizes each function's need from
// the limits: an SQS-polled function its mappings' MaximumConcurrency (a
// reserve below throttles its own pollers), a stream reader one batch per
// shard at a time (the table's partitions at its warm throughput, each a
// shard).
func adviseReservations(p Profile, l Limits, peaks []Peak) (ReservationAdvice, error) {
	a := ReservationAdvice{Parameters: map[string]float64{}, Functions: map[string]FunctionReservation{}}
	rate := strconv.FormatFloat(p.ProviderRatePerSecond, 'f', -1, 64)
	overrides := map[string]string{"EmailSendRate": rate, "SmsSendRate": rate, "PushSendRate": rate}
	base, err := devstack.LoadTemplate(l.Template, overrides)
	if err != nil {
		return a, err
	}
	probe := map[float64]string{}
	for _, name := range slices.Sorted(maps.Keys(base.Params)) {
		if strings.HasSuffix(name, "ReservedConcurrency") {
			v := float64(len(probe) + 1)
			probe[v], overrides[name] = name, strconv.FormatFloat(v, 'f', -1, 64)
		}
	}
	tm, err := devstack.LoadTemplate(l.Template, overrides)
	if err != nil {
		return a, fmt.Errorf("reserved concurrency parameters set: %w", err)
	}
	resources, _ := tm.Document["Resources"].(map[string]any)
	props := func(id string) map[string]any {
		r, _ := resources[id].(map[string]any)
		p, _ := r["Properties"].(map[string]any)
		return p
	}
	// Stream readers: ParallelizationFactor (default 1) batches per shard.
	perShard := map[string]float64{}
	for id, r := range resources {
		r, _ := r.(map[string]any)
		p := props(id)
		if r["Type"] != "AWS::Lambda::EventSourceMapping" || !strings.Contains(fmt.Sprint(p["EventSourceArn"]), "StreamArn") {
			continue
		}
		fn := strings.TrimSuffix(strings.TrimPrefix(fmt.Sprint(p["FunctionName"]), "${ref:"), "}")
		factor := 1.0
		if f, ok := p["ParallelizationFactor"].(float64); ok {
			factor = f
		}
		perShard[fn] += factor
	}
	partitions := math.Max(math.Ceil(l.warm("table", true)/PartitionWriteUnitsPerSecond), math.Ceil(l.warm("table", false)/PartitionReadUnitsPerSecond))
	for _, id := range slices.Sorted(maps.Keys(resources)) {
		v, ok := props(id)["ReservedConcurrentExecutions"].(float64)
		if !ok {
			continue
		}
		param, ok := probe[v]
		if !ok {
			return a, fmt.Errorf("%s: ReservedConcurrentExecutions %v is not one of the *ReservedConcurrency parameters", id, v)
		}
		fr := FunctionReservation{Parameter: param}
		switch {
		case l.MappingConcurrency[id] > 0:
			fr.Need, fr.Why = l.MappingConcurrency[id], "its queue mappings' MaximumConcurrency"
		case perShard[id] > 0:
			fr.Need, fr.Why = partitions*perShard[id], fmt.Sprintf("one batch per stream shard: the table's %.0f partitions at its warm throughput", partitions)
		default:
			return a, fmt.Errorf("%s: reserved, but it reads no queue or stream: what is its need?", id)
		}
		a.Functions[id] = fr
		a.Parameters[param] = math.Max(a.Parameters[param], fr.Need)
	}
	for _, fr := range a.Functions {
		a.Reserved += a.Parameters[fr.Parameter]
	}
	for _, pk := range peaks {
		other := 0.0
		for fn, c := range pk.LambdaConcurrency {
			if _, reserved := a.Functions[fn]; !reserved {
				other += c
			}
		}
		a.UnreservedPeak = math.Max(a.UnreservedPeak, other)
	}
	a.AccountConcurrencyNeeded = a.Reserved + math.Max(LambdaUnreservedConcurrencyMinimum, a.UnreservedPeak)
	return a, nil
}
