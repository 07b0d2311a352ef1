package app

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go/logging"
)

// EnvAWSConfig builds the aws.Config of a Lambda function from its
// environment alone, as config.LoadDefaultConfig would there: Lambda always
// hands a function its role's credentials and region in environment
// variables. LoadDefaultConfig also links every other credential source (SSO,
// STS web identity and assume-role, IMDS, container and process credentials,
// shared config files), about 2 MB of each binary for sources a Lambda never
// uses (docs/decisions.md, "Lambda functions build their aws.Config from the
// environment").
//
// Read, with the same names and meaning as the SDK's:
//   - AWS_REGION (else AWS_DEFAULT_REGION), required;
//   - AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (required) and AWS_SESSION_TOKEN;
//   - AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE> (the local stack and
//     LocalStack), both ignored when AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is
//     true; an empty value is unset;
//   - AWS_MAX_ATTEMPTS and AWS_RETRY_MODE.
//
// Everything else keeps the SDK's defaults, as with LoadDefaultConfig in
// Lambda: each client's standard retryer and default HTTP client (timeouts),
// here handed in-memory request bodies (NewHTTPClient), SDK warnings on
// stderr.
func EnvAWSConfig(getenv func(string) string) (aws.Config, error) {
	region := getenv("AWS_REGION")
	if region == "" {
		region = getenv("AWS_DEFAULT_REGION")
	}
	key, secret := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
	var missing []string
	if region == "" {
		missing = append(missing, "AWS_REGION")
	}
	if key == "" {
		missing = append(missing, "AWS_ACCESS_KEY_ID")
	}
	if secret == "" {
		missing = append(missing, "AWS_SECRET_ACCESS_KEY")
	}
	if len(missing) > 0 {
		return aws.Config{}, fmt.Errorf("aws config: missing environment %s (Lambda sets them for every function)", strings.Join(missing, ", "))
	}
	ignoreEndpoints, err := envBool(getenv, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")
	if err != nil {
		return aws.Config{}, err
	}
	cfg := aws.Config{
		Region: region,
		Credentials: aws.NewCredentialsCache(credentials.StaticCredentialsProvider{Value: aws.Credentials{
			AccessKeyID: key, SecretAccessKey: secret, SessionToken: getenv("AWS_SESSION_TOKEN"),
			Source: "EnvConfigCredentials",
		}}),
		Logger:        logging.NewStandardLogger(os.Stderr),
		HTTPClient:    NewHTTPClient(),
		ConfigSources: []any{serviceEndpoints{getenv: getenv, ignore: ignoreEndpoints}},
	}
	if url := getenv("AWS_ENDPOINT_URL"); url != "" && !ignoreEndpoints {
		cfg.BaseEndpoint = aws.String(url)
	}
	if v := getenv("AWS_MAX_ATTEMPTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return aws.Config{}, fmt.Errorf("aws config: AWS_MAX_ATTEMPTS %q: want a positive integer", v)
		}
		cfg.RetryMaxAttempts = n
	}
	if v := getenv("AWS_RETRY_MODE"); v != "" {
		mode, err := aws.ParseRetryMode(v)
		if err != nil {
			return aws.Config{}, fmt.Errorf("aws config: AWS_RETRY_MODE: %w", err)
		}
		cfg.RetryMode = mode
	}
	return cfg, nil
}

// envBool reads a true/false variable as the SDK does (case-insensitive;
// unset or empty is false).
func envBool(getenv func(string) string, name string) (bool, error) {
	switch v := getenv(name); strings.ToLower(v) {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	default:
		return false, fmt.Errorf("aws config: %s %q: want true or false", name, v)
	}
}

// serviceEndpoints answers each client's question for its own endpoint
// (AWS_ENDPOINT_URL_<SERVICE>, the service's SDK id upper-cased with spaces
// as underscores: AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SESV2), as the
// config package's environment source does. Clients ask it through
// aws.Config.ConfigSources; the global AWS_ENDPOINT_URL is
// aws.Config.BaseEndpoint.
type serviceEndpoints struct {
	getenv func(string) string
	ignore bool
}

// GetServiceBaseEndpoint satisfies the SDK's (internal)
// configsources.ServiceBaseEndpointProvider.
func (s serviceEndpoints) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	if s.ignore {
		return "", false, nil
	}
	name := "AWS_ENDPOINT_URL_" + strings.ReplaceAll(strings.ToUpper(sdkID), " ", "_")
	if v := s.getenv(name); v != "" {
		return v, true, nil
	}
	return "", false, nil
}

// GetIgnoreConfiguredEndpoints satisfies the SDK's (internal)
// configsources.IgnoreConfiguredEndpointsProvider.
func (s serviceEndpoints) GetIgnoreConfiguredEndpoints(context.Context) (bool, bool, error) {
	return s.ignore, s.ignore, nil
}
