package ops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/BurntSushi/toml"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
)

// ErrNoRegion: neither the environment, the profile nor samconfig.toml
// names a region.
var ErrNoRegion = errors.New("no AWS region: set AWS_REGION (or AWS_DEFAULT_REGION), give your profile one (aws configure set region REGION), or run the command where samconfig.toml names the region sam deploy used")

// SamconfigFile is the SAM CLI's configuration file (samconfig.toml).
const SamconfigFile = "samconfig.toml"

// LoadAWSConfig loads the AWS SDK's configuration and takes the region as
// the AWS CLI does — AWS_REGION, else AWS_DEFAULT_REGION, else the
// profile's (shared config; the SDK reads all three) — and, when none names
// one, the region `sam deploy` used: samconfig.toml's, found upwards from
// wd. Without any it returns ErrNoRegion.
func LoadAWSConfig(ctx context.Context, wd string) (aws.Config, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil || cfg.Region != "" {
		return cfg, err
	}
	region, err := SamconfigRegion(wd)
	if err != nil {
		return cfg, err
	}
	if region == "" {
		return cfg, ErrNoRegion
	}
	cfg.Region = region
	return cfg, nil
}

// SamconfigRegion finds samconfig.toml in dir or the nearest directory above
// it and returns the region its default environment deploys to
// ([default.deploy.parameters], else [default.global.parameters], as sam
// deploy reads them); "" when there is no file or it names no region.
func SamconfigRegion(dir string) (string, error) {
	var path string
	for d := dir; ; {
		p := filepath.Join(d, SamconfigFile)
		if _, statErr := os.Stat(p); statErr == nil {
			path = p
			break
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", nil
		}
		d = parent
	}
	var sc map[string]map[string]struct {
		Parameters struct {
			Region string `toml:"region"`
		} `toml:"parameters"`
	}
	if _, err := toml.DecodeFile(path, &sc); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	env := sc["default"]
	if r := env["deploy"].Parameters.Region; r != "" {
		return r, nil
	}
	return env["global"].Parameters.Region, nil
}
