package iam

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// AccessDeniedError is the error AWS returns when the caller's policies do
// not allow a call, with the message AWS writes.
type AccessDeniedError struct {
	// Code is the service's error code: AccessDeniedException (DynamoDB,
	// SES, SSM, Secrets Manager), AccessDenied (SQS), AuthorizationError (SNS).
	Code     string
	Function string
	RoleARN  string
	Action   string
	Resource string
	Explicit bool
}

var _ smithy.APIError = (*AccessDeniedError)(nil)

func (e *AccessDeniedError) Error() string {
	return "api error " + e.Code + ": " + e.ErrorMessage()
}

// ErrorCode implements smithy.APIError.
func (e *AccessDeniedError) ErrorCode() string { return e.Code }

// ErrorMessage implements smithy.APIError: "User: <assumed role> is not
// authorized to perform: <action> on resource: <resource> because …".
func (e *AccessDeniedError) ErrorMessage() string {
	reason := "because no identity-based policy allows the " + e.Action + " action"
	if e.Explicit {
		reason = "with an explicit deny in an identity-based policy"
	}
	return fmt.Sprintf("User: %s is not authorized to perform: %s on resource: %s %s",
		assumedRole(e.RoleARN, e.Function), e.Action, e.Resource, reason)
}

// ErrorFault implements smithy.APIError.
func (e *AccessDeniedError) ErrorFault() smithy.ErrorFault { return smithy.FaultClient }

// assumedRole is the principal a Lambda function's calls are made as:
// arn:aws:sts::<account>:assumed-role/<role name>/<function>.
func assumedRole(roleARN, function string) string {
	_, rest, _ := strings.Cut(roleARN, "arn:aws:iam::")
	account, role, _ := strings.Cut(rest, ":role/")
	return "arn:aws:sts::" + account + ":assumed-role/" + role + "/" + function
}

var deniedStatus = map[string]struct {
	code   string
	status int
}{
	"DynamoDB":         {"AccessDeniedException", http.StatusBadRequest},
	"DynamoDB Streams": {"AccessDeniedException", http.StatusBadRequest},
	"SQS":              {"AccessDenied", http.StatusForbidden},
	"SNS":              {"AuthorizationError", http.StatusForbidden},
	"SESv2":            {"AccessDeniedException", http.StatusForbidden},
	"SSM":              {"AccessDeniedException", http.StatusBadRequest},
	"Secrets Manager":  {"AccessDeniedException", http.StatusBadRequest},
	"EventBridge":      {"AccessDeniedException", http.StatusBadRequest},
	// API Gateway answers a denied management call 403 {"message": …}.
	"ApiGatewayManagementApi": {"AccessDeniedException", http.StatusForbidden},
}

// Call is one (function, action, resource) the enforcer saw.
type Call struct {
	Function  string `json:"function"`
	Operation string `json:"operation"` // SDK "Service.Operation"
	Action    string `json:"action"`
	Resource  string `json:"resource"`
	// Context is the request's condition keys as JSON, so a record can be
	// re-evaluated against changed policies; recipients' addresses are left
	// out (no PII in records).
	Context  string `json:"context,omitempty"`
	Decision string `json:"decision"`
	Count    int    `json:"count"`
}

// Enforcer checks every AWS call a function makes against that function's
// role and records what it saw.
type Enforcer struct {
	region, account string
	onDeny          func(Call, error)

	mu       sync.Mutex
	policies *Policies
	calls    map[Call]int // Count zero in the key
}

// NewEnforcer enforces policies for calls made in region and account (the
// ARNs of resources named by name). onDeny, if set, hears every denial.
func NewEnforcer(p *Policies, region, account string, onDeny func(Call, error)) *Enforcer {
	return &Enforcer{policies: p, region: region, account: account, onDeny: onDeny, calls: map[Call]int{}}
}

// Policies returns the policies the enforcer checks against.
func (e *Enforcer) Policies() *Policies {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.policies
}

// SetPolicies replaces the policies for the calls that follow (tests that
// show a run failing without a permission, then recovering with it).
func (e *Enforcer) SetPolicies(p *Policies) {
	e.mu.Lock()
	e.policies = p
	e.mu.Unlock()
}

// Middleware returns the SDK option that checks function's calls: add it
// to that function's aws.Config APIOptions. It runs in the Initialize step
// (once per operation call, before retries, like AWS's authorization before
// any processing); a denied call never reaches the service.
func (e *Enforcer) Middleware(function string) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("HeraldIAMEnforcer",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				service, operation := ServiceOperation(ctx)
				if err := e.CheckIn(function, awsmiddleware.GetRegion(ctx), service, operation, in.Parameters); err != nil {
					return middleware.InitializeOutput{}, middleware.Metadata{}, err
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	}
}

// Check authorizes one operation call of function and records it; it
// returns the error the service would return when the role does not allow it.
func (e *Enforcer) Check(function, serviceID, operation string, input any) error {
	return e.CheckIn(function, "", serviceID, operation, input)
}

// CheckIn is Check for a call made in region (a client of another region,
// such as the email function's failover SES): the resources it names are
// that region's. Empty is the stack's region.
func (e *Enforcer) CheckIn(function, region, serviceID, operation string, input any) error {
	if region == "" {
		region = e.region
	}
	op := serviceID + "." + operation
	role, ok := e.Policies().Role(function)
	if !ok {
		return e.deny(Call{Function: function, Operation: op, Action: "?", Resource: "?", Decision: "no role"}, serviceID,
			fmt.Errorf("the template has no function %s with a role", function))
	}
	reqs, err := Describe(serviceID, operation, input, region, e.account)
	if err != nil {
		return e.deny(Call{Function: function, Operation: op, Action: "?", Resource: "?", Decision: "unknown operation"}, serviceID, err)
	}
	var denied error
	for _, req := range reqs {
		d, _ := role.Evaluate(req)
		c := Call{Function: function, Operation: op, Action: req.Action, Resource: req.Resource, Context: recordedContext(req.Context), Decision: d.String()}
		if d == Allowed {
			e.record(c)
			continue
		}
		st := deniedStatus[serviceID]
		ade := &AccessDeniedError{Code: st.code, Function: function, RoleARN: role.ARN, Action: req.Action, Resource: req.Resource, Explicit: d == ExplicitDeny}
		err := e.deny(c, serviceID, &awshttp.ResponseError{
			ResponseError: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: st.status}}, Err: ade},
			RequestID:     rand.Text(),
		})
		if denied == nil {
			denied = err
		}
	}
	return denied
}

// recordedContext encodes condition keys for a record, without recipients.
func recordedContext(ctx map[string][]string) string {
	keep := map[string][]string{}
	for k, v := range ctx {
		if !strings.EqualFold(k, "ses:Recipients") {
			keep[k] = v
		}
	}
	if len(keep) == 0 {
		return ""
	}
	raw, _ := json.Marshal(keep) // map keys are sorted: one text per context
	return string(raw)
}

func (e *Enforcer) record(c Call) {
	e.mu.Lock()
	e.calls[c]++
	e.mu.Unlock()
}

func (e *Enforcer) deny(c Call, serviceID string, err error) error {
	e.record(c)
	if e.onDeny != nil {
		e.onDeny(c, err)
	}
	return err
}

// Calls returns what the enforcer saw, sorted, with counts.
func (e *Enforcer) Calls() []Call {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]Call, 0, len(e.calls))
	for c, n := range e.calls {
		c.Count = n
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Call) int {
		return strings.Compare(a.Function+a.Action+a.Resource+a.Decision, b.Function+b.Action+b.Resource+b.Decision)
	})
	return out
}

// Denials are the calls that were refused.
func (e *Enforcer) Denials() []Call {
	out := []Call{}
	for _, c := range e.Calls() {
		if c.Decision != Allowed.String() {
			out = append(out, c)
		}
	}
	return out
}

// Record is a file of calls seen by one run (one e2e package's stack).
type Record struct {
	Source string `json:"source"`
	Calls  []Call `json:"calls"`
}

// WriteRecord writes the calls seen so far to path (atomically).
func (e *Enforcer) WriteRecord(path, source string) error {
	raw, err := json.MarshalIndent(Record{Source: source, Calls: e.Calls()}, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ReadRecords reads every *.json record in dir.
func ReadRecords(dir string) ([]Record, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	var out []Record
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var r Record
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// ServiceOperation is the SDK service id and operation name of the call in
// ctx. Clients generated before the SDK's smithy context values register
// them as stack values (awsmiddleware), newer ones (pinpointsmsvoicev2) put
// them in the context only, where a middleware added Before in the
// Initialize step finds them first.
func ServiceOperation(ctx context.Context) (service, operation string) {
	service, operation = awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx)
	if service == "" {
		service = middleware.GetServiceID(ctx)
	}
	if operation == "" {
		operation = middleware.GetOperationName(ctx)
	}
	return service, operation
}
