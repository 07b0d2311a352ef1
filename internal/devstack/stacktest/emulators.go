package stacktest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/heraldhq/herald/internal/devstack"
)

// Emulated is a package's running emulators and the template's resources
// created in them: an adapter's integration tests without the functions.
type Emulated struct {
	Emulators *devstack.Emulators
	Template  *devstack.Template
	Resources *devstack.Resources
	// AWS is a configuration with local credentials and region; the clients
	// below add the emulators' endpoints.
	AWS aws.Config
}

// DynamoDB is a client of the DynamoDB emulator (nil when not started).
func (e *Emulated) DynamoDB() *dynamodb.Client {
	if e.Emulators.DynamoDB == "" {
		return nil
	}
	return dynamodb.NewFromConfig(e.AWS, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(e.Emulators.DynamoDB) })
}

// SQS is a client of the SQS emulator (nil when not started).
func (e *Emulated) SQS() *sqs.Client {
	if e.Emulators.SQS == "" {
		return nil
	}
	return sqs.NewFromConfig(e.AWS, func(o *sqs.Options) { o.BaseEndpoint = aws.String(e.Emulators.SQS) })
}

var emulated *Emulated

// MainEmulators starts only the named emulators ("dynamodb", "sqs", "ses"),
// creates template.yaml's table and queues in them, runs the tests and stops
// the emulators. Like Main, it starts nothing under -short or
// HERALD_SKIP_INTEGRATION, and Emulators then skips the tests.
func MainEmulators(m *testing.M, services ...string) {
	os.Exit(runEmulators(m, services))
}

func runEmulators(m *testing.M, services []string) int {
	if os.Getenv("HERALD_SKIP_INTEGRATION") != "" || testingShort() {
		return m.Run()
	}
	e, err := startEmulated(services)
	if err != nil {
		fmt.Fprintln(os.Stderr, "stacktest:", err)
		return 1
	}
	emulated = e
	defer e.Emulators.Stop()
	return m.Run()
}

func startEmulated(services []string) (_ *Emulated, err error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The resources as CloudFormation creates them, as the local runner
	// creates them.
	tmpl, err := devstack.LoadTransformed(ctx, root, filepath.Join(root, "template.yaml"), nil)
	if err != nil {
		return nil, err
	}
	opts := devstack.EmulatorOptions{InfraDir: filepath.Join(root, "infra", "local"), Services: services}
	key := "local"
	if shared := os.Getenv(devstack.SharedDynamoDBEnv); shared != "" && slices.Contains(services, "dynamodb") {
		// The shared DynamoDB Local keeps a database per access key.
		opts.DynamoDB, key = shared, devstack.NewAccessKey()
	}
	if os.Getenv("HERALD_TEST_LOGS") != "" {
		opts.Log = os.Stderr
	}
	emus, err := devstack.StartEmulators(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("start emulators: %w", err)
	}
	defer func() {
		if err != nil {
			emus.Stop()
		}
	}()
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(devstack.LocalRegion),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(key, "local", "")))
	if err != nil {
		return nil, fmt.Errorf("aws config: %w", err)
	}
	e := &Emulated{Emulators: emus, Template: tmpl, AWS: cfg}
	if e.Resources, err = devstack.CreateResources(ctx, tmpl, e.DynamoDB(), e.SQS(), "herald-"); err != nil {
		return nil, fmt.Errorf("create resources: %w", err)
	}
	return e, nil
}

// Emulators returns the package's running emulators, skipping the test when
// integration tests are disabled.
func Emulators(t testing.TB) *Emulated {
	t.Helper()
	if emulated == nil {
		t.Skip("integration test: no emulators (-short or HERALD_SKIP_INTEGRATION)")
	}
	return emulated
}

// FunctionEnv is a function's environment as template.yaml declares it, with
// references to the created resources resolved ("" for other variables).
func (e *Emulated) FunctionEnv(t testing.TB, logicalID string) func(string) string {
	t.Helper()
	for _, fn := range e.Template.Functions() {
		if fn.LogicalID != logicalID {
			continue
		}
		return func(name string) string {
			v, err := e.Resources.Resolve(fn.Env[name])
			if err != nil {
				return ""
			}
			return v
		}
	}
	t.Fatalf("template.yaml has no function %s", logicalID)
	return nil
}
