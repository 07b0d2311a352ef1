package app

import (
	"log/slog"
	"os"
	"time"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/metrics"
)

// LambdaDeps builds the dependencies of a Lambda main: JSON logs at the
// LOG_LEVEL level (NewLogger), one aws.Config from the environment
// (EnvAWSConfig), the catalog from loadCatalog, EMF metrics on stdout
// (namespace METRICS_NAMESPACE, default Herald). Any failure ends the process
// before the first invocation.
//
// Functions that never read the catalog (scheduler, feedback) pass nil: the
// catalog's YAML and template parsers then stay out of their binaries.
func LambdaDeps(loadCatalog func() (*catalog.Catalog, error)) Deps {
	log := NewLogger(os.Stdout, os.Getenv)
	cfg, err := EnvAWSConfig(os.Getenv)
	if err != nil {
		Fail(log, err)
	}
	var cat *catalog.Catalog
	if loadCatalog != nil {
		if cat, err = loadCatalog(); err != nil {
			Fail(log, err)
		}
	}
	return Deps{AWS: cfg, Getenv: os.Getenv, Now: time.Now, Log: log, Catalog: cat,
		Metrics: metrics.NewEMF(os.Stdout, os.Getenv("METRICS_NAMESPACE"), time.Now)}
}

// Fail logs a start-up error and exits; Lambda reports the init failure.
func Fail(log *slog.Logger, err error) {
	log.Error("init failed", "error", err)
	os.Exit(1)
}
