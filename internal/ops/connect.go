package ops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/app/relayfn"
	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/events/awsbus"
)

// Where selects a deployment: a CloudFormation stack, or a local stack state
// file; empty means the default (see Resolver.Resolve).
type Where struct {
	Stack string
	State string
}

// StacksAPI is the CloudFormation call used to read a stack's outputs.
type StacksAPI interface {
	DescribeStacks(context.Context, *cloudformation.DescribeStacksInput, ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
}

var _ StacksAPI = (*cloudformation.Client)(nil)

// StackResourcesAPI finds a stack resource's physical id (the relay
// function's name).
type StackResourcesAPI interface {
	DescribeStackResource(context.Context, *cloudformation.DescribeStackResourceInput, ...func(*cloudformation.Options)) (*cloudformation.DescribeStackResourceOutput, error)
}

// FunctionsAPI reads a deployed function's configuration (its environment).
type FunctionsAPI interface {
	GetFunctionConfiguration(context.Context, *lambda.GetFunctionConfigurationInput, ...func(*lambda.Options)) (*lambda.GetFunctionConfigurationOutput, error)
}

var (
	_ StackResourcesAPI = (*cloudformation.Client)(nil)
	_ FunctionsAPI      = (*lambda.Client)(nil)
)

// Resolver finds the deployment the commands act on. Its fields are the
// process's environment; tests replace them.
type Resolver struct {
	Getenv func(string) string
	Setenv func(string, string) error
	Getwd  func() (string, error)
	// Alive reports whether a process exists (stale state detection).
	Alive          func(pid int) bool
	LoadConfig     func(context.Context) (aws.Config, error)
	Stacks         func(aws.Config) StacksAPI
	StackResources func(aws.Config) StackResourcesAPI
	Functions      func(aws.Config) FunctionsAPI
}

// DefaultResolver uses the process environment and the AWS SDK.
func DefaultResolver() Resolver {
	return Resolver{
		Getenv: os.Getenv, Setenv: os.Setenv, Getwd: os.Getwd,
		Alive: func(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil },
		LoadConfig: func(ctx context.Context) (aws.Config, error) {
			wd, err := os.Getwd()
			if err != nil {
				return aws.Config{}, err
			}
			return LoadAWSConfig(ctx, wd)
		},
		Stacks:         func(cfg aws.Config) StacksAPI { return cloudformation.NewFromConfig(cfg) },
		StackResources: func(cfg aws.Config) StackResourcesAPI { return cloudformation.NewFromConfig(cfg) },
		Functions:      func(cfg aws.Config) FunctionsAPI { return lambda.NewFromConfig(cfg) },
	}
}

// ErrNoTarget: nothing says which deployment to act on.
var ErrNoTarget = errors.New("no deployment selected: pass --stack NAME (or set HERALD_STACK), set TABLE_NAME and the queue URL variables, or start the local stack with `make dev`")

// ErrNoCredentials: the AWS SDK found no credentials.
var ErrNoCredentials = errors.New("no AWS credentials")

// Resolve picks the deployment, in this order: --stack (or HERALD_STACK):
// the stack's outputs; TABLE_NAME / *_QUEUE_URL / *_DLQ_URL variables;
// --state, or .herald/dev.json found upwards from the working directory,
// whose endpoints are put into the process environment
// (AWS_ENDPOINT_URL_*), as `herald dev` does for its functions.
func (r Resolver) Resolve(ctx context.Context, w Where) (aws.Config, Target, string, error) {
	stack := w.Stack
	if stack == "" && w.State == "" {
		stack = r.Getenv("HERALD_STACK")
	}
	if stack != "" {
		cfg, err := r.awsConfig(ctx)
		if err != nil {
			return aws.Config{}, Target{}, "", err
		}
		t, err := r.fromStack(ctx, cfg, stack)
		return cfg, t, "stack " + stack + " (" + cfg.Region + ")", err
	}
	if w.State == "" {
		t, ok, err := TargetFromEnv(r.Getenv)
		if ok {
			if err != nil {
				return aws.Config{}, Target{}, "", err
			}
			cfg, err := r.awsConfig(ctx)
			return cfg, t, "environment (" + cfg.Region + ")", err
		}
	}
	path := w.State
	if path == "" {
		wd, err := r.Getwd()
		if err != nil {
			return aws.Config{}, Target{}, "", err
		}
		var found bool
		if path, found = FindState(wd); !found {
			return aws.Config{}, Target{}, "", ErrNoTarget
		}
	}
	st, err := ReadState(path)
	if err != nil {
		return aws.Config{}, Target{}, "", err
	}
	if !r.Alive(st.PID) {
		return aws.Config{}, Target{}, "", fmt.Errorf("%w %s: `herald dev` (pid %d) is not running; start it with `make dev` or delete the file", ErrStaleState, path, st.PID)
	}
	t, err := st.Target()
	if err != nil {
		return aws.Config{}, Target{}, "", err
	}
	env := st.Env()
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if err := r.Setenv(k, env[k]); err != nil {
			return aws.Config{}, Target{}, "", err
		}
	}
	cfg, err := r.awsConfig(ctx)
	return cfg, t, "local stack " + st.APIURL, err
}

func (r Resolver) awsConfig(ctx context.Context) (aws.Config, error) {
	cfg, err := r.LoadConfig(ctx)
	if err != nil {
		return aws.Config{}, fmt.Errorf("AWS configuration: %w", err)
	}
	if cfg.Credentials == nil {
		return aws.Config{}, fmt.Errorf("%w: configure a profile (AWS_PROFILE) or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY", ErrNoCredentials)
	}
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		return aws.Config{}, fmt.Errorf("%w: configure a profile (AWS_PROFILE) or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY: %v", ErrNoCredentials, err)
	}
	if cfg.Region == "" {
		return aws.Config{}, ErrNoRegion
	}
	return cfg, nil
}

func (r Resolver) fromStack(ctx context.Context, cfg aws.Config, stack string) (Target, error) {
	out, err := r.Stacks(cfg).DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
	if err != nil {
		return Target{}, fmt.Errorf("stack %s in %s: %w", stack, cfg.Region, err)
	}
	if len(out.Stacks) == 0 {
		return Target{}, fmt.Errorf("stack %s not found in %s", stack, cfg.Region)
	}
	outputs := map[string]string{}
	for _, o := range out.Stacks[0].Outputs {
		outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	t, err := TargetFromOutputs(outputs)
	if err != nil {
		return Target{}, fmt.Errorf("stack %s outputs: %w", stack, err)
	}
	if t.Relay, err = r.relayConfig(ctx, cfg, stack); err != nil {
		return Target{}, err
	}
	return t, nil
}

// relayConfig reads the environment of the stack's deployed relay function
// (cloudformation:DescribeStackResource, lambda:GetFunctionConfiguration).
func (r Resolver) relayConfig(ctx context.Context, cfg aws.Config, stack string) (map[string]string, error) {
	res, err := r.StackResources(cfg).DescribeStackResource(ctx, &cloudformation.DescribeStackResourceInput{
		StackName: aws.String(stack), LogicalResourceId: aws.String(RelayFunctionLogicalID),
	})
	if err != nil {
		return nil, fmt.Errorf("stack %s: %s: %w", stack, RelayFunctionLogicalID, err)
	}
	if res.StackResourceDetail == nil || aws.ToString(res.StackResourceDetail.PhysicalResourceId) == "" {
		return nil, fmt.Errorf("stack %s has no %s", stack, RelayFunctionLogicalID)
	}
	name := aws.ToString(res.StackResourceDetail.PhysicalResourceId)
	fc, err := r.Functions(cfg).GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(name)})
	if err != nil {
		return nil, fmt.Errorf("relay function %s configuration: %w", name, err)
	}
	env := map[string]string{}
	if fc.Environment != nil {
		maps.Copy(env, fc.Environment.Variables)
	}
	return env, nil
}

// opsStore is what the DLQ commands read and change: deliveries, the due
// index's partitions, campaigns.
type opsStore struct {
	*dynamo.Notifications
	*dynamo.Scheduling
	*dynamo.Campaigns
}

// Connect builds an Operator with real AWS clients for t. The relay a relay
// DLQ redrive re-runs is built as the function is (relayfn.New) with the
// deployed function's environment (t.RelayEnv). log receives the relay's
// logs when the relay DLQ is redriven (nil discards them).
func Connect(cfg aws.Config, t Target, log *slog.Logger) (*Operator, error) {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	st := dynamo.StoresOf(dynamo.New(dynamodb.NewFromConfig(cfg), t.Table))
	cat, err := catalog.Load()
	if err != nil {
		return nil, err
	}
	relay, err := relayfn.New(relayDeps(cfg, t, log, cat))
	if err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	op := &Operator{
		Target: t, SQS: sqs.NewFromConfig(cfg), Store: opsStore{st.Notifications, st.Scheduling, st.Campaigns},
		Failures: st.Scheduling, Watches: st.Scheduling,
		Replanner: RelayReplanner{Handle: relay.Handle, Record: st.Notifications.NotificationInsertRecord},
	}
	if t.EventBus != "" {
		op.Events = &awsbus.Bus{API: eventbridge.NewFromConfig(cfg), BusName: t.EventBus}
	}
	return op, nil
}

// relayDeps are the relay's dependencies for a redrive: the deployed
// function's environment (t.RelayEnv) and the operator's AWS configuration.
func relayDeps(cfg aws.Config, t Target, log *slog.Logger, cat *catalog.Catalog) app.Deps {
	env := t.RelayEnv()
	return app.Deps{AWS: cfg, Getenv: func(k string) string { return env[k] }, Now: time.Now, Log: log, Catalog: cat}
}

// RelayReplanner re-runs the relay's planning for a notification: the
// notification's current item becomes a one-record INSERT batch for the
// relay handler. Safe to repeat: the relay creates each delivery at most once
// (a conditional put), and re-sends a work message only for a delivery still
// queued and unclaimed, whose duplicate the worker's claim discards.
type RelayReplanner struct {
	Handle func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error)
	Record func(ctx context.Context, id string) (events.DynamoDBEventRecord, error)
}

// Replan implements Replanner.
func (r RelayReplanner) Replan(ctx context.Context, id string) error {
	rec, err := r.Record(ctx, id)
	if err != nil {
		return err
	}
	resp, err := r.Handle(ctx, events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{rec}})
	if err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	if len(resp.BatchItemFailures) > 0 {
		return fmt.Errorf("relay could not plan notification %s (see its log)", id)
	}
	return nil
}
