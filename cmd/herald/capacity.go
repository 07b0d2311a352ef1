package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/heraldhq/herald/internal/capacity"
)

// errLimitsExceeded makes `herald capacity` exit non-zero.
var errLimitsExceeded = errors.New("limits exceeded")

// runCapacity runs the capacity model (internal/capacity) with the issue's
// load profile and prints per second of each scenario the busiest partition
// of the table and each index, Lambda concurrency and SQS requests, and the
// cost per million notifications; it fails when a limit is passed.
func runCapacity(args []string, stdout, stderr io.Writer) error {
	p := capacity.DefaultProfile()
	fs := flag.NewFlagSet("capacity", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	fs.IntVar(&p.LambdaConcurrency, "lambda-concurrency", p.LambdaConcurrency, "account Lambda concurrency limit")
	fs.Float64Var(&p.PeakPerSecond, "peak", p.PeakPerSecond, "campaign notifications per second")
	fs.Float64Var(&p.AveragePerSecond, "average", p.AveragePerSecond, "average notifications per second")
	fs.Float64Var(&p.DeferredShare, "deferred", p.DeferredShare, "share of the traffic deferred to one instant")
	fs.Float64Var(&p.ProviderRatePerSecond, "send-rate", p.ProviderRatePerSecond, "each channel's provider send rate (the EmailSendRate, SmsSendRate and PushSendRate parameters)")
	fs.Float64Var(&p.BusyHourFactor, "busy-hour", p.BusyHourFactor, "the day's busiest hour as a multiple of its average")
	fs.Float64Var(&p.SMSMonthlySpendLimitUSD, "sms-spend-limit", p.SMSMonthlySpendLimitUSD, "the account's SNS SMS spend limit (USD a month)")
	template := fs.String("template", "template.yaml", "the template whose parameter defaults and resources set the limits")
	peak := fs.Bool("peak-scenario", true, "also run the peak fanned out unpaced (the peak20k check: the model twice more)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("capacity takes no arguments")
	}
	limits, err := capacity.LoadLimits(*template, p)
	if err != nil {
		return err
	}
	res, err := capacity.Run(p, limits)
	if err != nil {
		return err
	}
	if *peak {
		sc, check, err := capacity.PeakRun(p, limits)
		if err != nil {
			return err
		}
		res.Peak = &sc
		res.Checks = append(res.Checks, check)
		if !check.OK {
			res.LimitsExceeded = append(res.LimitsExceeded, fmt.Sprintf("%s: %s: %v", check.Name, check.Detail, sc.LimitsExceeded))
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		printCapacity(stdout, res)
	}
	if len(res.LimitsExceeded) > 0 {
		return fmt.Errorf("%w: %d", errLimitsExceeded, len(res.LimitsExceeded))
	}
	return nil
}

func printCapacity(w io.Writer, res capacity.Result) {
	for _, pk := range res.Peaks {
		fmt.Fprintf(w, "== %s\n", pk.Scenario)
		for _, where := range slices.Sorted(maps.Keys(pk.WriteUnits)) {
			l := pk.WriteUnits[where]
			fmt.Fprintf(w, "  busiest %-6s write %8.1f WCU/s  %s\n", where, l.Units, l.Key)
		}
		for _, where := range slices.Sorted(maps.Keys(pk.ReadUnits)) {
			l := pk.ReadUnits[where]
			fmt.Fprintf(w, "  busiest %-6s read  %8.1f RCU/s  %s\n", where, l.Units, l.Key)
		}
		for _, fn := range slices.Sorted(maps.Keys(pk.LambdaConcurrency)) {
			fmt.Fprintf(w, "  concurrency %-18s %6.0f\n", fn, pk.LambdaConcurrency[fn])
		}
		fmt.Fprintf(w, "  SQS %.0f requests/s, HTTP API %.0f requests/s\n", pk.SQSRequestsPerSecond, pk.APIRequestsPerSecond)
		fmt.Fprintf(w, "  table %.0f WRU/s, %.0f RRU/s (per-table quota %d / %d)\n", pk.TableWriteUnitsPerSecond, pk.TableReadUnitsPerSecond,
			capacity.TableWriteUnitsPerSecondQuota, capacity.TableReadUnitsPerSecondQuota)
		for _, idx := range slices.Sorted(maps.Keys(pk.IndexWriteUnitsPerSecond)) {
			fmt.Fprintf(w, "  index %-6s %8.0f WRU/s %8.0f RRU/s\n", idx, pk.IndexWriteUnitsPerSecond[idx], pk.IndexReadUnitsPerSecond[idx])
		}
	}
	fmt.Fprintf(w, "campaign: %d recipients drain in %.2f h (quota-bound minimum %.2f h); a lot of 1,000 takes %.1f s\n",
		res.Profile.CampaignUsers, res.CampaignDrainHours, res.CampaignDrainMinimumHours, res.CampaignLotSeconds)
	fmt.Fprintf(w, "write units/s (table and indexes): average second %.0f; a running campaign %.0f whatever its pace, plus %.2f per campaign notification per second\n",
		res.AverageWriteUnitsPerSecond, res.CampaignFixedWriteUnitsPerSecond, res.WriteUnitsPerCampaignNotification)
	for _, c := range slices.Sorted(maps.Keys(res.CampaignDrain)) {
		d := res.CampaignDrain[c]
		fmt.Fprintf(w, "  %-6s %9.0f recipients at %6.1f/s (bulk share %6.1f/s): %.2f h\n", c, d.Recipients, d.PerSecond, d.QuotaPerSecond, d.Hours)
	}
	fmt.Fprintf(w, "max partition: %.1f WCU/s, %.1f RCU/s (limits %d / %d)\n", res.MaxPartitionWriteUnitsPerSecond, res.MaxPartitionReadUnitsPerSecond,
		capacity.PartitionWriteUnitsPerSecond, capacity.PartitionReadUnitsPerSecond)
	fmt.Fprintf(w, "$ per million notifications (AWS list prices %s), provider fee and storage over the retention beside:\n", res.Prices.Date)
	for _, k := range slices.Sorted(maps.Keys(res.CostPerMillionUSD)) {
		fmt.Fprintf(w, "  %-24s %7.2f   (+ fee %.2f, + storage %.2f)\n", k, res.CostPerMillionUSD[k], res.ProviderFeePerMillionUSD[k], res.StoragePerMillionUSD[k])
	}
	fmt.Fprintf(w, "delivery events (DeliveryEvents), $ per million notifications added: none / failures / all (failures: + %.2f per million failed deliveries):\n", res.EventsPerMillionFailuresUSD)
	for _, k := range slices.Sorted(maps.Keys(res.EventsPerMillionUSD)) {
		e := res.EventsPerMillionUSD[k]
		fmt.Fprintf(w, "  %-24s %7.2f / %.2f / %.2f\n", k, e["none"], e["failures"], e["all"])
	}
	lc := res.Live
	fmt.Fprintf(w, "live inbox (%.0f %% of recipients online, %.1f connections each, ping every %.0f s): + %.2f per million notifications (%.2f if all online),\n",
		100*lc.Profile.OnlineShare, lc.Profile.ConnectionsPerOnlineUser, lc.Profile.PingSeconds, lc.PerMillionNotifications, lc.PerMillionPosts)
	fmt.Fprintf(w, "  %.2f per million connected hours (connection minutes, pings); a 10 M campaign: %.0f queue messages, %.0f batch reads, %.0f posts, %.2f\n",
		lc.PerMillionConnectedHours, lc.Campaign10MQueueMessages, lc.Campaign10MBatchReads, lc.Campaign10MPosts, lc.Campaign10MUSD)
	lb := res.LiveBroadcast
	fmt.Fprintf(w, "  an announcement's broadcast: %.0f users online, %.0f posts, %.0f online-set queries = queue messages = invocations, %.0f s at LiveBroadcastRate %.0f users/s, %.2f\n",
		lb.OnlineUsers, lb.Posts, lb.Queries, lb.Seconds, res.Limits.LiveBroadcastRate, lb.USD)
	dr := res.DeferredReconcile
	fmt.Fprintf(w, "a deferred campaign lot (%d recipients, one channel), a day before its due time: recounted every %.0f s %.0f times, %.2f M read units, %.2f;\n",
		dr.Recipients, dr.DelaySeconds, dr.PollingRecountsPerDay, dr.PollingReadUnitsPerDay/1e6, dr.PollingUSDPerDay)
	fmt.Fprintf(w, "  waiting for its due time (15-minute queue delays): %.0f messages, %.0f read units, %.4f\n",
		dr.WaitingMessagesPerDay, dr.WaitingReadUnitsPerDay, dr.WaitingUSDPerDay)
	fmt.Fprintln(w, res.ReservedConcurrencyAdvice.Line())
	fmt.Fprintln(w, "the seed profile's named checks (--json: checks, seed, peak20k):")
	for _, c := range res.Checks {
		if c.Figures == nil {
			continue
		}
		verdict := "pass"
		if !c.OK {
			verdict = "FAIL"
		}
		fmt.Fprintf(w, "  %-4s %-18s %10.2f of %10.2f  %s\n", verdict, c.Name, c.Value, c.Limit, c.Detail)
	}
	if pk := res.Peak; pk != nil {
		fmt.Fprintf(w, "peak %.0f/s unpaced: per-table quota %.0f writes / %.0f reads, warm writes %v, high relay shards %.0f, %.0f minutes $%.2f of DynamoDB requests\n",
			pk.FanOutRate, pk.TableWriteQuota, pk.TableReadQuota, pk.WarmWrite, pk.RelayHighShards, pk.Minutes, pk.PeakUSD)
	}
	for _, l := range res.LimitsExceeded {
		fmt.Fprintf(w, "LIMIT EXCEEDED: %s\n", l)
	}
}
