// Package workerfn wires the delivery loop shared by the channel functions
// (email, SMS, push) around each one's provider.
package workerfn

import (
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/policy"
	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/worker"
)

var (
	_ worker.Store        = store{}
	_ worker.DigestStore  = store{}
	_ worker.Visibility   = (*queue.Visibility)(nil)
	_ worker.QuotaStore   = (*dynamo.Quotas)(nil)
	_ worker.Requeuer     = (*queue.Requeuer)(nil)
	_ worker.BreakerStore = (*dynamo.Breakers)(nil)
)

// store is the delivery loop's table: the work it loads and the
// deliveries it claims, and the digests it renders (worker.DigestStore).
type store struct {
	*dynamo.Notifications
	*dynamo.Digests
}

// Config reads the retry settings shared by the channel functions and the
// function's send quota (SEND_RATE, BULK_QUOTA_SHARE).
func Config(d app.Deps) (worker.Config, error) {
	env, err := d.Require("BACKOFF_BASE", "BACKOFF_CAP", "MAX_RECEIVE_COUNT")
	if err != nil {
		return worker.Config{}, err
	}
	var cfg worker.Config
	if cfg.BackoffBase, err = time.ParseDuration(env["BACKOFF_BASE"]); err != nil || cfg.BackoffBase <= 0 {
		return cfg, fmt.Errorf("BACKOFF_BASE %q: want a positive Go duration", env["BACKOFF_BASE"])
	}
	if cfg.BackoffCap, err = time.ParseDuration(env["BACKOFF_CAP"]); err != nil || cfg.BackoffCap < cfg.BackoffBase {
		return cfg, fmt.Errorf("BACKOFF_CAP %q: want a Go duration ≥ BACKOFF_BASE", env["BACKOFF_CAP"])
	}
	if cfg.MaxReceiveCount, err = strconv.Atoi(env["MAX_RECEIVE_COUNT"]); err != nil || cfg.MaxReceiveCount < 1 {
		return cfg, fmt.Errorf("MAX_RECEIVE_COUNT %q: want a positive integer", env["MAX_RECEIVE_COUNT"])
	}
	if cfg.SendQuota, err = policy.SendQuotaFromEnv(d.Getenv); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// New wires the loop around p on st, the stores the provider may share (push
// deletes gone subscriptions through them); opts name the provider and its
// failover (Failover).
func New(d app.Deps, st dynamo.Stores, p channel.Provider, opts ...func(*worker.Deps)) (*worker.Handler, error) {
	// A link the stack's policy refuses now is rendered empty (data
	// accepted before the policy changed).
	cat, err := d.LinkedCatalog()
	if err != nil {
		return nil, err
	}
	cfg, err := Config(d)
	if err != nil {
		return nil, err
	}
	client := sqs.NewFromConfig(d.AWS)
	vis := queue.NewVisibility(client)
	deps := worker.Deps{Config: cfg, Store: store{st.Notifications, st.Digests}, Visibility: vis, Provider: p, Catalog: cat,
		Now: d.Now, Log: d.Log, Metrics: d.Recorder(), Quota: st.Quotas, Requeuer: queue.NewRequeuer(client, vis)}
	for _, o := range opts {
		o(&deps)
	}
	return worker.New(deps), nil
}

// Failover names a channel's primary provider (its breaker in st) and,
// when secondary is not nil, the provider it fails over to, with the send
// quota of SEND_RATE_SECONDARY (BULK_QUOTA_SHARE as the primary's).
func Failover(d app.Deps, st dynamo.Stores, primaryName string, secondary channel.Provider, secondaryName string) (func(*worker.Deps), error) {
	var fo *worker.Failover
	if secondary != nil {
		q, err := policy.SendQuotaFromEnv(func(k string) string {
			if k == "SEND_RATE" {
				k = "SEND_RATE_SECONDARY"
			}
			return d.Getenv(k)
		})
		if err != nil {
			return nil, err
		}
		fo = &worker.Failover{Secondary: secondary, SecondaryName: secondaryName, SecondaryQuota: q}
	}
	return func(deps *worker.Deps) {
		deps.ProviderName, deps.Failover, deps.Breakers = primaryName, fo, st.Breakers
	}, nil
}
