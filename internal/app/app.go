// Package app holds what every function's wiring shares: the process-wide
// dependencies (Deps), environment helpers and the table store. Each function
// is wired by its own package below (app/apifn, app/relayfn, …), which the
// Lambda main and the local runner both call, so what runs locally is exactly
// what Lambda runs; only the environment differs.
//
// This package links no AWS service client but DynamoDB's, which every
// function uses: a client imported here would be linked into every binary.
// A test (links_test.go) checks each function's dependencies.
package app

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/metrics"
)

// Deps are the process-wide dependencies every function shares.
type Deps struct {
	AWS    aws.Config
	Getenv func(string) string
	Now    func() time.Time
	Log    *slog.Logger
	// Catalog is the embedded catalog, parsed once per process.
	Catalog *catalog.Catalog
	// Metrics records operational metrics (EMF on stdout in Lambda); nil
	// records nothing.
	Metrics metrics.Recorder
}

// Recorder is the metrics recorder handlers take: Metrics, or a no-op.
func (d Deps) Recorder() metrics.Recorder {
	if d.Metrics == nil {
		return metrics.Nop{}
	}
	return d.Metrics
}

// RequireCatalog fails when the catalog was not loaded (LambdaDeps(nil)):
// functions that plan or render notifications need it.
func (d Deps) RequireCatalog() error {
	if d.Catalog == nil {
		return errors.New("the catalog is not loaded: pass catalog.Load to LambdaDeps")
	}
	return nil
}

// LinkedCatalog is the catalog under the stack's link policy (LINK_HOSTS,
// the LinkHosts parameter: empty admits https links to any host): for the
// functions that take notification data in (the API) or render it (the
// API's inbox, the channel workers).
func (d Deps) LinkedCatalog() (*catalog.Catalog, error) {
	if err := d.RequireCatalog(); err != nil {
		return nil, err
	}
	p, err := domain.ParseLinkPolicy(d.Getenv("LINK_HOSTS"))
	if err != nil {
		return nil, fmt.Errorf("LINK_HOSTS: %w", err)
	}
	return d.Catalog.WithLinkPolicy(p), nil
}

// Require reads the named environment variables, failing with every missing
// name at once.
func (d Deps) Require(names ...string) (map[string]string, error) {
	out := map[string]string{}
	var missing []string
	for _, n := range names {
		v := d.Getenv(n)
		if v == "" {
			missing = append(missing, n)
		}
		out[n] = v
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing environment: %s", strings.Join(missing, ", "))
	}
	return out, nil
}

// Stores opens the feature stores over the table TABLE_NAME, with the
// retention RETENTION_DAYS when set; each function's wiring hands each
// consumer the stores it uses.
func (d Deps) Stores() (dynamo.Stores, error) {
	env, err := d.Require("TABLE_NAME")
	if err != nil {
		return dynamo.Stores{}, err
	}
	opts := []dynamo.Option{dynamo.WithClock(d.Now)}
	if v := d.Getenv("RETENTION_DAYS"); v != "" {
		days, err := strconv.Atoi(v)
		if err != nil || days < 1 {
			return dynamo.Stores{}, fmt.Errorf("RETENTION_DAYS %q: want a positive integer", v)
		}
		opts = append(opts, dynamo.WithRetention(time.Duration(days)*24*time.Hour))
	}
	return dynamo.StoresOf(dynamo.New(dynamodb.NewFromConfig(d.AWS), env["TABLE_NAME"], opts...)), nil
}
