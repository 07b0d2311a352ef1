package ops

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadAWSConfigRegion: the CLI takes its region as the AWS CLI and SAM
// do: AWS_REGION, then AWS_DEFAULT_REGION, then the profile's (shared
// config), then samconfig.toml's (sam deploy's, found upwards from the
// working directory: the deploy section, else the global one); with none it
// says so, naming each place.
func TestLoadAWSConfigRegion(t *testing.T) {
	home := t.TempDir()
	configFile := filepath.Join(home, "config")
	if err := os.WriteFile(configFile, []byte("[default]\noutput = json\n\n[profile eu]\nregion = eu-west-3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	sub := filepath.Join(repo, "internal", "ops")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	samconfig := func(t *testing.T, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(repo, SamconfigFile), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const deploy = "version = 0.1\n[default.global.parameters]\nstack_name = \"herald\"\nregion = \"ap-south-1\"\n[default.deploy.parameters]\nregion = \"us-west-2\" # sam deploy --guided wrote it\n"
	for _, tc := range []struct {
		name, samconfig string
		env             map[string]string
		want            string
	}{
		{"AWS_REGION first", deploy, map[string]string{"AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "eu-west-2", "AWS_PROFILE": "eu"}, "eu-west-1"},
		{"then AWS_DEFAULT_REGION", deploy, map[string]string{"AWS_DEFAULT_REGION": "eu-west-2", "AWS_PROFILE": "eu"}, "eu-west-2"},
		{"then the profile's", deploy, map[string]string{"AWS_PROFILE": "eu"}, "eu-west-3"},
		{"then samconfig.toml's deploy section", deploy, nil, "us-west-2"},
		{"else its global section", "version = 0.1\n[default.global.parameters]\nregion = \"ap-south-1\"\n", nil, "ap-south-1"},
		{"none", "version = 0.1\n[default.deploy.parameters]\nresolve_s3 = true\n", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_DEFAULT_PROFILE"} {
				t.Setenv(k, "")
			}
			t.Setenv("AWS_CONFIG_FILE", configFile)
			t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(home, "credentials"))
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			samconfig(t, tc.samconfig)
			cfg, err := LoadAWSConfig(context.Background(), sub)
			if tc.want == "" {
				if !errors.Is(err, ErrNoRegion) || !strings.Contains(err.Error(), "AWS_REGION") ||
					!strings.Contains(err.Error(), "profile") || !strings.Contains(err.Error(), "samconfig.toml") {
					t.Errorf("no region anywhere: %v (region %q), want ErrNoRegion naming AWS_REGION, the profile and samconfig.toml", err, cfg.Region)
				}
				return
			}
			if err != nil || cfg.Region != tc.want {
				t.Errorf("region %q, %v; want %s", cfg.Region, err, tc.want)
			}
		})
	}
	t.Run("a broken samconfig.toml is named", func(t *testing.T) {
		for _, k := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"} {
			t.Setenv(k, "")
		}
		t.Setenv("AWS_CONFIG_FILE", configFile)
		samconfig(t, "[default.deploy.parameters\n")
		if _, err := LoadAWSConfig(context.Background(), sub); err == nil || !strings.Contains(err.Error(), SamconfigFile) {
			t.Errorf("broken samconfig.toml: %v", err)
		}
	})
}
