package iam

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Stack names the stack whose physical names the policies' ARNs carry.
type Stack struct {
	Name    string `json:"name"`
	Prefix  string `json:"prefix"`
	Region  string `json:"region"`
	Account string `json:"account"`
}

// Role is one function's execution role as the SAM transform produces it.
type Role struct {
	Function          string   `json:"-"`
	Name              string   `json:"role"`
	ARN               string   `json:"roleArn"`
	ManagedPolicyARNs []string `json:"managedPolicyArns"`
	Policies          []struct {
		Name     string   `json:"name"`
		Document Document `json:"document"`
	} `json:"policies"`

	statements []PolicyStatement
}

// Statements are the role's inline and managed statements.
func (r *Role) Statements() []PolicyStatement { return r.statements }

// Evaluate decides req against the role's policies.
func (r *Role) Evaluate(req Request) (Decision, *PolicyStatement) {
	return Evaluate(r.statements, req)
}

// ServiceNeed is a call Lambda itself makes with a function's role (event
// source mappings, destinations, dead-letter queues).
type ServiceNeed struct {
	Function string `json:"function"`
	Action   string `json:"action"`
	Resource string `json:"resource"`
	Why      string `json:"why"`
}

// Policies are every function's role, from one transform of the template.
type Policies struct {
	SAMTranslator string           `json:"samTranslator"`
	Stack         Stack            `json:"stack"`
	Functions     map[string]*Role `json:"functions"`
	ServiceNeeds  []ServiceNeed    `json:"serviceNeeds"`
	// Template is the transformed template itself, as CloudFormation
	// receives it (intrinsic functions unresolved): the same transform
	// feeds the local runner (devstack.ParseTransformed).
	Template json.RawMessage `json:"template"`
}

// Role returns a function's role.
func (p *Policies) Role(function string) (*Role, bool) {
	r, ok := p.Functions[function]
	return r, ok
}

// FunctionNames lists the functions, sorted.
func (p *Policies) FunctionNames() []string { return slices.Sorted(maps.Keys(p.Functions)) }

// managedPolicies are the AWS managed policies the SAM transform attaches,
// with their documents as AWS publishes them. An unknown managed policy is an
// error rather than a silent "grants nothing".
var managedPolicies = map[string]string{
	"arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole": `{"Version":"2012-10-17","Statement":[
		{"Effect":"Allow","Action":["logs:CreateLogGroup","logs:CreateLogStream","logs:PutLogEvents"],"Resource":"*"}]}`,
	"arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess": `{"Version":"2012-10-17","Statement":[
		{"Effect":"Allow","Action":["xray:PutTraceSegments","xray:PutTelemetryRecords","xray:GetSamplingRules",
		"xray:GetSamplingTargets","xray:GetSamplingStatisticSummaries"],"Resource":["*"]}]}`,
}

// ParsePolicies reads transform.py's output and checks every statement.
func ParsePolicies(raw []byte) (*Policies, error) {
	var p Policies
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("iam policies: %w", err)
	}
	if len(p.Functions) == 0 {
		return nil, errors.New("iam policies: no functions")
	}

	for fn, r := range p.Functions {
		r.Function = fn
		for _, pol := range r.Policies {
			for _, st := range pol.Document.Statement {
				if err := st.validate(); err != nil {
					return nil, fmt.Errorf("%s policy %s: %w", fn, pol.Name, err)
				}
				r.statements = append(r.statements, PolicyStatement{Policy: pol.Name, Statement: st})
			}
		}
		for _, arn := range r.ManagedPolicyARNs {
			text, ok := managedPolicies[arn]
			if !ok {
				return nil, fmt.Errorf("%s: managed policy %s is unknown to the local IAM evaluator (add its document to internal/devstack/iam/load.go)", fn, arn)
			}
			var doc Document
			if err := json.Unmarshal([]byte(text), &doc); err != nil {
				return nil, fmt.Errorf("managed policy %s: %w", arn, err)
			}
			for _, st := range doc.Statement {
				r.statements = append(r.statements, PolicyStatement{Policy: arn, Statement: st})
			}
		}
	}
	return &p, nil
}

// TransformOptions says which template to transform for which stack.
type TransformOptions struct {
	// Root is the repository root (scripts/iam/transform.py, .cache/).
	Root string
	// Template is the template file; default Root/template.yaml.
	Template string
	Stack    Stack
	// Params override template parameters.
	Params map[string]string
}

// Transform runs the SAM transform of the template (scripts/iam/transform.py
// with aws-sam-translator) and returns each function's resolved policies and
// the transformed template.
// Results are cached under Root/.cache/iam by a hash of the template, the
// script and the options, so only the first run after a change pays for
// Python.
func Transform(ctx context.Context, o TransformOptions) (*Policies, error) {
	if o.Template == "" {
		o.Template = filepath.Join(o.Root, "template.yaml")
	}
	script := filepath.Join(o.Root, "scripts", "iam", "transform.py")
	tmpl, err := os.ReadFile(o.Template)
	if err != nil {
		return nil, fmt.Errorf("iam: %w", err)
	}
	code, err := os.ReadFile(script)
	if err != nil {
		return nil, fmt.Errorf("iam: %w", err)
	}
	args := []string{script, o.Template, "--stack", o.Stack.Name, "--prefix", o.Stack.Prefix,
		"--region", o.Stack.Region, "--account", o.Stack.Account}
	for _, k := range slices.Sorted(maps.Keys(o.Params)) {
		args = append(args, "--param", k+"="+o.Params[k])
	}
	h := sha256.New()
	h.Write(tmpl)
	h.Write(code)
	h.Write([]byte(strings.Join(args[2:], "\x00")))
	cache := filepath.Join(o.Root, ".cache", "iam", "policies-"+hex.EncodeToString(h.Sum(nil))[:24]+".json")
	if raw, err := os.ReadFile(cache); err == nil {
		if p, err := ParsePolicies(raw); err == nil {
			return p, nil
		}
	}
	py := Python(o.Root)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, py, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("iam: SAM transform (%s %s): %w: %s (run make deps)", py, filepath.Base(script), err, strings.TrimSpace(stderr.String()))
	}
	p, err := ParsePolicies(stdout.Bytes())
	if err != nil {
		return nil, err
	}
	// Write then rename: test packages running in parallel share the cache.
	if err := os.MkdirAll(filepath.Dir(cache), 0o755); err == nil {
		tmp, err := os.CreateTemp(filepath.Dir(cache), ".policies-*")
		if err == nil {
			_, werr := tmp.Write(stdout.Bytes())
			cerr := tmp.Close()
			if werr == nil && cerr == nil {
				_ = os.Rename(tmp.Name(), cache)
			} else {
				_ = os.Remove(tmp.Name())
			}
		}
	}
	return p, nil
}

// Python is the interpreter with the pinned SAM translator: $HERALD_PYTHON,
// else the virtualenv `make deps` creates when the machine's python3 lacks
// the pinned versions, else python3.
func Python(root string) string {
	if p := os.Getenv("HERALD_PYTHON"); p != "" {
		return p
	}
	venv := filepath.Join(root, ".cache", "python", "bin", "python3")
	if _, err := os.Stat(venv); err == nil {
		return venv
	}
	return "python3"
}
