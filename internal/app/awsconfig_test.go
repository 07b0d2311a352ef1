package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// lambdaEnv is what Lambda gives every function.
var lambdaEnv = map[string]string{
	"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKIDLAMBDA", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "token",
}

func withEnv(base map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func TestEnvAWSConfig(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string // substring; "" for none
		check   func(t *testing.T, cfg aws.Config)
	}{
		{name: "Lambda's environment", env: lambdaEnv, check: func(t *testing.T, cfg aws.Config) {
			creds, err := cfg.Credentials.Retrieve(context.Background())
			if err != nil || creds.AccessKeyID != "AKIDLAMBDA" || creds.SecretAccessKey != "secret" || creds.SessionToken != "token" || creds.CanExpire {
				t.Fatalf("credentials = %+v, %v", creds, err)
			}
			if cfg.Region != "eu-west-1" || cfg.BaseEndpoint != nil || cfg.RetryMaxAttempts != 0 || cfg.RetryMode != "" {
				t.Fatalf("cfg = region %q endpoint %v attempts %d mode %q", cfg.Region, cfg.BaseEndpoint, cfg.RetryMaxAttempts, cfg.RetryMode)
			}
		}},
		{name: "default region", env: withEnv(lambdaEnv, "AWS_REGION", "", "AWS_DEFAULT_REGION", "us-west-2"), check: func(t *testing.T, cfg aws.Config) {
			if cfg.Region != "us-west-2" {
				t.Fatalf("region = %q", cfg.Region)
			}
		}},
		{name: "every missing name at once", env: map[string]string{"AWS_SESSION_TOKEN": "t"},
			wantErr: "missing environment AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY"},
		{name: "global endpoint", env: withEnv(lambdaEnv, "AWS_ENDPOINT_URL", "http://127.0.0.1:4566"), check: func(t *testing.T, cfg aws.Config) {
			if aws.ToString(cfg.BaseEndpoint) != "http://127.0.0.1:4566" {
				t.Fatalf("BaseEndpoint = %v", cfg.BaseEndpoint)
			}
		}},
		{name: "empty endpoint is unset (the template declares it empty)", env: withEnv(lambdaEnv, "AWS_ENDPOINT_URL", ""), check: func(t *testing.T, cfg aws.Config) {
			if cfg.BaseEndpoint != nil {
				t.Fatalf("BaseEndpoint = %q", *cfg.BaseEndpoint)
			}
		}},
		{name: "configured endpoints ignored", env: withEnv(lambdaEnv, "AWS_ENDPOINT_URL", "http://127.0.0.1:4566", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "TRUE"), check: func(t *testing.T, cfg aws.Config) {
			if cfg.BaseEndpoint != nil {
				t.Fatalf("BaseEndpoint = %q", *cfg.BaseEndpoint)
			}
		}},
		{name: "bad ignore flag", env: withEnv(lambdaEnv, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "yes"), wantErr: "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"},
		{name: "retries", env: withEnv(lambdaEnv, "AWS_MAX_ATTEMPTS", "5", "AWS_RETRY_MODE", "adaptive"), check: func(t *testing.T, cfg aws.Config) {
			if cfg.RetryMaxAttempts != 5 || cfg.RetryMode != aws.RetryModeAdaptive {
				t.Fatalf("attempts %d mode %q", cfg.RetryMaxAttempts, cfg.RetryMode)
			}
		}},
		{name: "bad max attempts", env: withEnv(lambdaEnv, "AWS_MAX_ATTEMPTS", "0"), wantErr: "AWS_MAX_ATTEMPTS"},
		{name: "bad retry mode", env: withEnv(lambdaEnv, "AWS_RETRY_MODE", "eager"), wantErr: "AWS_RETRY_MODE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := EnvAWSConfig(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, cfg)
		})
	}
}

func TestServiceEndpoints(t *testing.T) {
	env := map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "http://d", "AWS_ENDPOINT_URL_SESV2": "http://s", "AWS_ENDPOINT_URL_SECRETS_MANAGER": "http://sm"}
	src := serviceEndpoints{getenv: func(k string) string { return env[k] }}
	for sdkID, want := range map[string]string{"DynamoDB": "http://d", "SESv2": "http://s", "Secrets Manager": "http://sm", "SQS": ""} {
		got, found, err := src.GetServiceBaseEndpoint(context.Background(), sdkID)
		if err != nil || got != want || found != (want != "") {
			t.Errorf("%s: %q %v %v, want %q", sdkID, got, found, err, want)
		}
	}
	src.ignore = true
	if got, found, _ := src.GetServiceBaseEndpoint(context.Background(), "DynamoDB"); found || got != "" {
		t.Errorf("ignored: %q %v", got, found)
	}
}

// A client built from EnvAWSConfig goes where one built by
// config.LoadDefaultConfig goes, signed with the same credentials, for each
// way the local stack and LocalStack name endpoints.
func TestEnvAWSConfigMatchesLoadDefaultConfig(t *testing.T) {
	var global, dynamo atomic.Int32
	var lastAuth atomic.Value
	serve := func(n *atomic.Int32) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			lastAuth.Store(r.Header.Get("Authorization"))
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			_, _ = w.Write([]byte(`{"TableNames":[]}`))
		}))
	}
	globalSrv, dynamoSrv := serve(&global), serve(&dynamo)
	defer globalSrv.Close()
	defer dynamoSrv.Close()
	cases := []struct {
		name               string
		env                map[string]string
		wantGlobal, wantDB int32
	}{
		{"global only", withEnv(lambdaEnv, "AWS_ENDPOINT_URL", globalSrv.URL), 1, 0},
		{"service only", withEnv(lambdaEnv, "AWS_ENDPOINT_URL_DYNAMODB", dynamoSrv.URL), 0, 1},
		{"service over global", withEnv(lambdaEnv, "AWS_ENDPOINT_URL", globalSrv.URL, "AWS_ENDPOINT_URL_DYNAMODB", dynamoSrv.URL), 0, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// LoadDefaultConfig reads the process environment; keep it off
			// this machine's shared files.
			for _, k := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
				"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "AWS_PROFILE", "AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE"} {
				t.Setenv(k, tc.env[k])
			}
			t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
			t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
			ours, err := EnvAWSConfig(func(k string) string { return tc.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			sdk, err := config.LoadDefaultConfig(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var auths []string
			for _, cfg := range []aws.Config{sdk, ours} {
				global.Store(0)
				dynamo.Store(0)
				if _, err := dynamodb.NewFromConfig(cfg).ListTables(context.Background(), &dynamodb.ListTablesInput{}); err != nil {
					t.Fatal(err)
				}
				if global.Load() != tc.wantGlobal || dynamo.Load() != tc.wantDB {
					t.Fatalf("requests: global %d dynamodb %d, want %d %d", global.Load(), dynamo.Load(), tc.wantGlobal, tc.wantDB)
				}
				auth, _ := lastAuth.Load().(string)
				auths = append(auths, auth[:strings.Index(auth, "SignedHeaders")])
			}
			if !strings.Contains(auths[1], "Credential=AKIDLAMBDA/") || !strings.Contains(auths[1], "/eu-west-1/dynamodb/") || auths[0][:50] != auths[1][:50] {
				t.Fatalf("signatures differ: LoadDefaultConfig %q, EnvAWSConfig %q", auths[0], auths[1])
			}
		})
	}
}
